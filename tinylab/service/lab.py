"""`Lab`: the one door to tinylab's engine, for the CLI's commands and the Textual lab alike.

It owns the run store and the machine facts, and offers the use cases both faces need: list and
read typed run records, check and launch a run, cancel and remove runs, read kernel tables and
their summaries, a step's timeline, a roofline, compare, and plan and run exercise steps. Their
results are frozen typed records (tinylab.analysis); tinylab.render lays them out. Neither face
reaches past it (or the small service modules beside it) into the engine.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Sequence, TextIO

from tinylab import exercises as ex
from tinylab.runs import slurm
from tinylab.config import ConfigError, RunConfig
from tinylab.core.errors import UserError
from tinylab.core.profile_files import MEMORY_TIMELINE
from tinylab.profilers.pytorch import MEMORY_HINT
from tinylab.runs import launcher
from tinylab.runs.record import RunRecord
from tinylab.runs.store import ENV_RUNS_DIR, Run, RunStore, check_ref, is_run_dir, write_record  # noqa: F401 - ENV_RUNS_DIR: the faces' name of it
from tinylab.service import exercise
from tinylab.service.launch import check_run, probe_profiler
from tinylab.service.machine import Machine
from tinylab.core.safeio import DOCUMENT_LIMIT, is_plain_dir, read_json, write_atomic

if TYPE_CHECKING:
    from tinylab.analysis.hotspots import KernelTables
    from tinylab.analysis.stats import Variation
    from tinylab.service.results import Comparison, HotspotSummary, Placement, Timeline


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _kind(path: Path) -> str | None:
    """"dir", "file" (anything else that exists) or None when nothing is there; a path that cannot
    be looked at (permission denied on the way) is a one-line UserError naming it."""
    try:
        return "dir" if stat.S_ISDIR(path.stat().st_mode) else "file"
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG):
            return None
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None


class NoTrace(UserError):
    """The run has no PyTorch profiler trace to take a step apart."""


class NoCeilings(UserError):
    """No ceilings are known for the run's card, and measuring them was not asked for."""


@dataclass(frozen=True)
class Roofline:
    """A finished run placed against its card's ceilings (tinylab.analysis.roofline.for_run);
    tinylab.render.roofline draws it."""

    run_id: str
    result: Placement
    title: str
    has_table: bool  # whether the run's kernels are placed too (it was profiled)


@dataclass(frozen=True)
class Submitted:
    run: Run
    script: Path  # the job script in the run folder (an absolute path)
    job_id: str | None  # None: a dry run, written and not submitted


@dataclass(frozen=True)
class KernelStudy:
    anatomy: Any  # tinylab.anatomy.Anatomy
    stage_text: str | None = None
    points: list | None = None  # tinylab.anatomy.SweepPoint, one per value and target


class Lab:
    def __init__(self, runs_dir: str | os.PathLike[str] | None = None, *, exercises_root: Path | None = None,
                 machine: Callable[[], Machine] = Machine.probe):
        self.store = RunStore(runs_dir)
        self.exercises_root = exercises_root
        self._machine_probe = machine
        self._machine: Machine | None = None
        self._scenarios: list[ex.Scenario] | None = None

    # ------------------------------------------------------------------ machine
    @property
    def machine(self) -> Machine:
        """Probed once, on first need (the CLI's probe may import torch)."""
        if self._machine is None:
            self._machine = self._machine_probe()
        return self._machine

    # --------------------------------------------------------------------- runs
    def run(self, ref: str) -> Run:
        """A run of the store by id, unique prefix, `last` or folder path (UserError otherwise)."""
        return self.store.resolve(ref)

    def record(self, ref: str) -> RunRecord:
        """The run's record as the learner may see it (masked)."""
        return self.masked(self.run(ref).record())

    def records(self) -> list[RunRecord]:
        """Every run's record as the learner may see it (masked), oldest first; a run whose folder
        vanished mid-scan is skipped."""
        out = []
        progress: dict[str, Any] | None = None
        for run in self.store.list():
            try:
                record = run.record()
            except OSError:
                continue
            if record.from_exercise and progress is None:
                progress = self._progress_or_none()
            out.append(self.masked(record, progress))
        return out

    def masked(self, record: RunRecord, progress: dict[str, Any] | None = None) -> RunRecord:
        """`record` with what its exercise step hides (a fault the learner must find) masked, until
        the learner names it or reveals the step's answers; every face shows runs through this. A
        scenario or progress file that cannot be read masks nothing: listing runs must not fail."""
        found = ex.step_of_label(record.label)
        if found is None:
            return record
        progress = self._progress_or_none() if progress is None else progress
        try:
            scenario = self.scenario(found[0])
        except UserError:
            return record
        return record.masked(ex.hidden_fields(progress or {}, scenario, found[1]))

    def _progress_or_none(self) -> dict[str, Any] | None:
        try:
            return self.progress()
        except UserError:
            return None

    def check(self, cfg: RunConfig, *, final: bool = True) -> RunConfig:
        """Every pre-launch check (config, device, memory, profilers); ConfigError/UserError names the
        problem. `final=False` leaves out the checks that run a profiler (for a form's every key)."""
        return check_run(cfg, self.machine, self.profiler_problem, tool_checks=final)

    def profiler_problem(self, name: str) -> str | None:
        """Why profiler `name` cannot run here, or None (asks the tool)."""
        return probe_profiler(name)

    def launch(self, cfg: RunConfig) -> Run:
        """Start a run here. A run of several nodes starts on this one (the first): the command the
        other nodes run is in the run folder's nodes.txt (`tinylab submit` starts them through Slurm)."""
        if cfg.nnodes > 1 and not cfg.rdzv_endpoint:
            raise ConfigError(f"a run of {cfg.nnodes} nodes needs --rdzv-endpoint HOST:PORT (this node's address and a "
                              "free port), or `tinylab submit`, which finds it through Slurm")
        return launcher.launch(self.store, self.check(cfg))

    def submit(self, cfg: RunConfig, request: slurm.JobRequest, *, dry_run: bool = False) -> Submitted:
        """A run as a Slurm job of cfg.nnodes nodes x cfg.nproc_per_node GPUs: its folder, its job script
        (job.sbatch) and, unless `dry_run`, its submission with sbatch (job.json records the job id).

        The checks that need no compute node run first (the config; the device rules, for a GPU
        unless --device cpu); what the nodes have (GPUs, memory, profilers) their run checks. A
        refused submission leaves no run folder. sbatch detaches the job from this terminal.
        """
        cfg.validate().check_device("cpu" if cfg.device == "cpu" else "cuda")
        slurm.check_store_path(self.store.root)
        missing = None if dry_run else slurm.sbatch_missing()
        if missing:
            raise UserError(missing)
        run = self.store.create(cfg)
        run_dir = run.dir.resolve()
        script = run_dir / slurm.SCRIPT_FILE
        try:
            script.write_text(slurm.job_script(run_dir, cfg, request, launcher.supervisor_argv(run_dir)),
                              encoding="utf-8")
            job_id = None if dry_run else slurm.sbatch(script)
        except (OSError, UserError) as exc:
            self.store.remove(run)
            if isinstance(exc, UserError):
                raise
            raise UserError(f"cannot write {script}: {exc.strerror or exc}") from None
        if job_id is not None:
            job = slurm.Job(job_id, str(script), time.time(), socket.gethostname())
            try:
                write_record(run.dir, slurm.JOB_FILE, job.record())
            except OSError as exc:  # the supervisor records the job when it starts (slurm.running_job)
                raise UserError(f"run {run.id} is Slurm job {job_id}, but {slurm.JOB_FILE} could not be written "
                                f"({exc.strerror or exc}): it reads as lost until the job starts") from None
        return Submitted(run, script, job_id)

    def cancel(self, ref: str | Run) -> bool:
        """SIGINT, SIGTERM, SIGKILL to the run's process group; False when it was not running.

        A Run already resolved is cancelled as it is (its id is not looked up again)."""
        return launcher.cancel(ref if isinstance(ref, Run) else self.run(ref))

    def remove(self, refs: list[str], force: bool = False) -> list[str]:
        """Delete runs (all refs are resolved before anything is deleted, a run named twice once);
        returns their ids."""
        runs = list({run.dir: run for run in (self.run(ref) for ref in refs)}.values())
        for run in runs:
            if force:
                launcher.cancel(run)
            self.store.remove(run, force=force)
        return [run.id for run in runs]

    # ----------------------------------------------------------------- analysis
    def kernel_table(self, ref: str) -> KernelTables | None:
        """The run's newest kernel tables (tinylab.analysis.hotspots.KernelTables: one a rank in a run
        of several), or None."""
        from tinylab.analysis.hotspots import (
            load_run_kernel_tables,  # pandas: only when a table is asked for
        )

        return load_run_kernel_tables(self.run(ref).dir)

    def hotspots(self, ref: str, rank: int | str | None = None, top: int | None = None,
                 category: str | None = None) -> tuple[str, HotspotSummary]:
        """What the table is of (the run's id for a run named as `last` or a prefix, else the path)
        and the hotspot summary of `rank`'s table (hotspots_table; KernelTables.select picks the
        rank), its kernels narrowed by `top` and `category` (checked before anything is read)."""
        from tinylab.analysis.hotspots import check_category  # pandas: only when a table is asked for

        check_category(category)
        tables = self.hotspots_table(ref)
        return tables.source, tables.summarize(rank, top, category)

    def hotspots_table(self, ref: str) -> KernelTables:
        """KernelTables of a run (id, prefix, `last`, folder) or of any profiler output file/folder;
        a folder of rank<k> folders gives one table a rank."""
        from tinylab.analysis.hotspots import load_kernel_tables, load_run_kernel_tables

        path = Path(check_ref(ref))  # Path("") would be the current folder
        kind = _kind(path)
        if kind == "dir" and is_run_dir(path, legacy=self.store.holds(path)):
            run_dir = path
        elif kind == "dir" and (runs := [p.name for p in _children(path) if is_run_dir(p)]):
            raise UserError(f"{path} holds {len(runs)} runs, whose profiles would be mixed: name one "
                            f"(tinylab hotspots {runs[-1]} --runs-dir {path})")
        elif kind is not None:
            return load_kernel_tables(path)
        elif len(path.parts) > 1 or path.suffix:
            raise UserError(f"{ref}: no such file or folder")
        else:
            run_dir = self.run(ref).dir
        found = load_run_kernel_tables(run_dir)
        if found is not None:
            return found
        profiles = run_dir / "profiles"
        if is_plain_dir(profiles) and _children(profiles):  # never a `profiles` link to a neighbour's folder
            return replace(load_kernel_tables(profiles), source=run_dir.name)
        raise UserError(f"{run_dir}: this run has no kernel table; profile a run with --profile pytorch "
                        "(or rocprofv3, ncu, nsys, ...) to get one")

    def timeline(self, ref: str, step: int | None = None, rank: int | None = None,
                 progress: Callable[[str, int, int], None] | None = None) -> Timeline:
        """Step anatomy (tinylab.analysis.timeline) of a run's PyTorch trace, or of a trace file
        given by path; with the run's memory timeline when it has one. A run of several ranks has a
        trace a rank: `rank`'s (default: the first, 0), never a merge. UserError without a trace or
        for a rank the run does not have. `progress(what, bytes read, bytes)` hears how far the
        trace's read has come (a million-event trace takes seconds)."""
        from tinylab.analysis.formats import reporting
        from tinylab.analysis.timeline import analyze, run_traces, trainer_timing

        path = Path(ref)
        if _kind(path) == "file":
            if rank is not None:
                raise UserError(f"--rank {rank}: {ref} is one trace file; --rank picks a rank's trace of a run")
            memory = path.parent / MEMORY_TIMELINE
            with reporting(progress):
                result = analyze(path, memory if memory.is_file() else None, step)
            return replace(result, title=f"timeline of {path.name}")
        if path.suffix in (".json", ".gz"):
            raise UserError(f"{ref}: no such trace file")
        run = self.run(ref)
        log = run.events()  # the record and the trainer's step times beside the trace
        record = run.record(log)
        traced = run_traces(run.dir, record.profiles)
        if not traced:
            raise NoTrace(f"run {run.id} has no PyTorch profiler trace: launch it with --profile pytorch "
                          "(add --profile-memory for the memory timeline too)")
        ranks = sorted(r for r in traced if r is not None)
        if ranks:
            rank = ranks[0] if rank is None else rank
            if rank not in traced:
                raise UserError(f"--rank {rank}: run {run.id} has traces of ranks {', '.join(map(str, ranks))}")
        elif rank is not None:
            raise UserError(f"--rank {rank}: run {run.id} is one process, not a run of several ranks")
        trace, memory = traced[rank]
        with reporting(progress):
            result = analyze(trace, memory, step)
        cfg = record.settings
        whose = f" rank {rank} of {len(ranks)}" if ranks else ""
        return replace(
            result,
            notes=result.notes + ((MEMORY_HINT,) if memory is None else ()),
            timed=None if rank else trainer_timing(log.of("step"), result),  # the run's step events are rank 0's
            rank=rank, ranks=tuple(ranks),
            title=f"timeline of {run.id}{whose} {cfg.version if cfg else '?'} {cfg.precision if cfg else '?'} on "
                  f"{record.device_name or record.device or '?'}")

    def roofline(self, ref: str | Run, *, ceilings_file: Path | None = None, measure: bool = True,
                 record: RunRecord | None = None) -> Roofline:
        """The run's step and kernels against its card's ceilings: from `ceilings_file` (a `tinylab
        bench --roofline --out` JSON), else those cached beside the runs, else measured now on this
        GPU and cached (only with `measure`: it needs torch and that very card; NoCeilings otherwise).
        `record`: the run's record when the caller has read it already (else read here)."""
        from tinylab.analysis import roofline

        run = ref if isinstance(ref, Run) else self.run(ref)
        record = run.record() if record is None else record
        if not record.summary:
            raise UserError(f"run {run.id} has no summary ({record.status}): a roofline needs a finished run")
        ceilings = self._ceilings(run.id, record.device_name, ceilings_file, measure)
        result, title, has_table = roofline.for_run(run, record, ceilings)
        return Roofline(run.id, result, title, has_table)

    def _ceilings(self, run_id: str, device_name: str | None, path: Path | None, measure: bool) -> dict[str, Any]:
        import json

        from tinylab.analysis.roofline import cached_ceilings, ceilings_cache

        if path is not None:
            try:
                doc = read_json(path, DOCUMENT_LIMIT, follow_links=True)
            except FileNotFoundError:
                raise UserError(f"--ceilings {path}: no such file") from None
            except OSError as exc:
                raise UserError(f"--ceilings {path}: {exc.strerror or exc}") from None
            except UserError as exc:  # a FIFO, a device, too large, nested too deep, not JSON
                raise UserError(f"--ceilings: {exc}") from None
            ceilings = doc.get("ceilings", doc) if isinstance(doc, dict) else None
            if not isinstance(ceilings, dict):
                raise UserError(f"--ceilings {path}: not a `tinylab bench --roofline --out` JSON (no ceilings object)")
            return ceilings
        cached = cached_ceilings(self.store.root, device_name)
        if cached is not None:
            return cached
        if not measure:
            raise NoCeilings(f"no ceilings measured for {device_name or 'this device'} yet: run "
                             f"`tinylab roofline {run_id}` once on that GPU to measure and keep them")
        import torch

        if not torch.cuda.is_available():
            raise UserError("a roofline needs ceilings measured on a GPU: run this on the GPU machine, "
                            "or pass --ceilings from `tinylab bench --roofline --out FILE`")
        if device_name and torch.cuda.get_device_name() != device_name:
            raise UserError(f"the run used {device_name} but this GPU is {torch.cuda.get_device_name()}: "
                            "measure on the same card or pass --ceilings")
        from tinylab.analysis.ceilings import measure_ceilings

        ceilings = measure_ceilings()
        self.store.root.mkdir(parents=True, exist_ok=True)
        write_atomic(ceilings_cache(self.store.root, device_name), json.dumps(ceilings).encode("utf-8"))
        return ceilings

    def check_pair(self, a: str, b: str) -> None:
        """Refuse A and B that are one run (`compare last last`, an id and its prefix): a run
        compared with itself shows every ratio 1.00 and reads as "no change"."""
        run = self.run(a)
        if self.run(b).id == run.id:
            raise UserError(f"A and B are both run {run.id}: compare two runs (`tinylab runs` lists them)")

    def compare(self, a: str, b: str, *, more_a: Sequence[str] = (), more_b: Sequence[str] = (),
                variation: Variation | None = None) -> Comparison:
        """Runs A and B (with repeats of each side's config pooled in: `more_a`, `more_b`), their
        intervals starting from `variation` (default: this machine's, Lab.variation)."""
        from tinylab.analysis.compare import compare_runs

        self.check_pair(a, b)
        ra, rb = self.record(a), self.record(b)
        pool_a, pool_b = [self.record(r) for r in more_a], [self.record(r) for r in more_b]
        if variation is None:
            variation = self.variation(ra, [r.id for r in (ra, rb, *pool_a, *pool_b)])
        return compare_runs(ra, rb, more_a=pool_a, more_b=pool_b, variation=variation)

    def variation(self, like: RunRecord, leave_out: Sequence[str]) -> Variation:
        """This machine's run-to-run spread at `like`'s size, from the store's repeated configs
        (analysis.compare.machine_variation): one scan of every run, so a caller that compares
        again and again (a repeat, compare and its advice verdict) asks once."""
        from tinylab.analysis.compare import machine_variation

        return machine_variation(self.records(), like, leave_out=leave_out)

    # ------------------------------------------------------------------- advice
    def advise(self, ref: str, *, kernels: str | bool = False):
        """The advice of a run or of a PyTorch trace file (tinylab.service.advice.Advised)."""
        from tinylab.service.advice import advise_ref

        return advise_ref(self, ref, kernels)

    def try_advice(self, ref: str, rule: str):
        """Launch run `ref`'s advice item `rule` as run B: (B, the item)."""
        from tinylab.service.advice import try_item

        return try_item(self, ref, rule)

    def advice_verdict(self, a: str, b: str, variation: Variation | None = None) -> dict[str, Any]:
        """Whether run B, which applied an item of run A's advice, bore it out, and why
        (`variation`: as Lab.compare's, to spare a second scan of the store)."""
        from tinylab.service.advice import verdict

        return verdict(self, a, b, variation)

    # ----------------------------------------------------------------- kernels
    def kernel_pool(self, jobs: int | None = None) -> ContextManager[Any]:
        """The worker pool of one kernel call (tinylab.anatomy.Pool), closed after it; a long-lived
        face (the lab) keeps one pool instead."""
        from tinylab.anatomy import Pool

        return Pool(jobs)

    def kernel_study(self, cfg: RunConfig, targets: list[str] | None = None, name: str | None = None, *,
                     stage: str | None = None, sweep: tuple[str, list[int]] | None = None, jobs: int | None = None,
                     progress: Callable[[Any], None] | None = None) -> "KernelStudy":
        """The v3/v4 Triton kernels compiled for `targets` at `cfg`'s launches (tinylab.anatomy), and
        for one kernel `name` one IR `stage` on the first target, or a `sweep` of one parameter."""
        from tinylab.anatomy import analyze, stage_text
        from tinylab.anatomy import sweep as sweep_kernel

        text, points = None, None
        with self.kernel_pool(jobs) as pool:
            anatomy = analyze(cfg, targets, kernels=[name] if name else None, pool=pool, progress=progress)
            if stage and name and targets:
                text = stage_text(anatomy, name, targets[0], stage, pool=pool)
            elif sweep and name:
                points = sweep_kernel(anatomy, name, *sweep, pool=pool, progress=progress)
        return KernelStudy(anatomy, text, points)

    def kernel_stage(self, anatomy: Any, name: str, target: str, stage: str) -> str:
        """One IR stage of variant `name` of an Anatomy that kernel_study made, on one of its targets."""
        from tinylab.anatomy import stage_text

        with self.kernel_pool() as pool:
            return stage_text(anatomy, name, target, stage, pool=pool)

    def kernel_sweep(self, anatomy: Any, name: str, target: str, param: str, values: list[int] | None = None, *,
                     progress: Callable[[Any], None] | None = None) -> list:
        """Variant `name` of an Anatomy recompiled on one target with `param` at each of `values` (by
        default a range around the value the step launches: tinylab.anatomy.sweep_values)."""
        from tinylab.anatomy import sweep, sweep_values
        from tinylab.anatomy.targets import get_target

        variant = anatomy.variant(name)
        if target not in variant.launches:
            raise UserError(f"target {target!r} was not compiled: choose one of {', '.join(variant.launches)}")
        if values is None:
            values = sweep_values(variant.launches[target], get_target(target), param)
        with self.kernel_pool() as pool:
            return sweep(anatomy, variant.name, param, values, targets=[target], pool=pool, progress=progress)

    # ---------------------------------------------------------------- exercises
    def scenarios(self) -> list[ex.Scenario]:
        """Loaded and validated once: the files do not change under a learner."""
        if self._scenarios is None:
            self._scenarios = ex.load_scenarios(self.exercises_root)
        return self._scenarios

    def scenario(self, scenario_id: str) -> ex.Scenario:
        return ex.find_scenario(self.scenarios(), scenario_id)

    def progress(self) -> dict[str, Any]:
        return ex.load_progress()

    def reveal_answers(self, scenario_id: str, number: int) -> None:
        """The learner asked for a step's answers: what the step hides shows from now on (masked)."""
        ex.get_step(self.scenario(scenario_id), number)
        ex.record_answers_revealed(scenario_id, number)

    def diagnose(self, scenario_id: str, number: int, guess: str) -> exercise.Diagnosis:
        """The learner names the fault a step hides (exercise.diagnose); the right one shows from now on (masked)."""
        scenario = self.scenario(scenario_id)
        return exercise.diagnose(scenario, ex.get_step(scenario, number), guess, self.progress(), self.run)

    def plan_step(self, scenario_id: str, number: int, device: str = "auto",
                  overrides: dict | None = None) -> exercise.StepPlan:
        scenario = self.scenario(scenario_id)
        return exercise.plan_step(scenario, ex.get_step(scenario, number), self.machine, device, overrides,
                                  check=self.check)

    def run_step(self, plan: exercise.StepPlan, *, output: TextIO | None = None, poll_s: float = 0.2,
                 stop: Callable[[], bool] = lambda: False) -> Iterator[exercise.StepProgress]:
        return exercise.run_step(plan, start=self.launch, output=output, poll_s=poll_s, stop=stop,
                                 kernel_pool=self.kernel_pool)
