"""`Lab`: the one door to tinylab's engine, for the CLI's commands and the Textual lab alike.

It owns the run store and the machine facts, and offers the use cases both faces need: list and
read typed run records, check and launch a run, cancel and remove runs, read kernel tables,
compare, report, and plan and run exercise steps. Neither face reaches past it into the engine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, TextIO

from tinylab import exercises as ex
from tinylab.config import RunConfig
from tinylab.errors import UserError
from tinylab.profilers.pytorch import MEMORY_TIMELINE
from tinylab.runs import launcher
from tinylab.runs.record import RunRecord
from tinylab.runs.store import Run, RunStore, is_run_dir
from tinylab.service import exercise
from tinylab.service.launch import check_run, probe_profiler
from tinylab.service.machine import Machine


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


class NoTrace(UserError):
    """The run has no PyTorch profiler trace to take a step apart."""


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
        return self.run(ref).record()

    def records(self) -> list[RunRecord]:
        """Every run's record, oldest first; a run whose folder vanished mid-scan is skipped."""
        out = []
        for run in self.store.list():
            try:
                out.append(run.record())
            except OSError:
                continue
        return out

    def check(self, cfg: RunConfig, *, final: bool = True) -> RunConfig:
        """Every pre-launch check (config, device, memory, profilers); ConfigError/UserError names the
        problem. `final=False` leaves out the checks that run a profiler (for a form's every key)."""
        return check_run(cfg, self.machine, self.profiler_problem, tool_checks=final)

    def profiler_problem(self, name: str) -> str | None:
        """Why profiler `name` cannot run here, or None (asks the tool)."""
        return probe_profiler(name)

    def launch(self, cfg: RunConfig) -> Run:
        return launcher.launch(self.store, self.check(cfg))

    def cancel(self, ref: str) -> bool:
        """SIGINT, SIGTERM, SIGKILL to the run's process group; False when it was not running."""
        return launcher.cancel(self.run(ref))

    def remove(self, refs: list[str], force: bool = False) -> list[str]:
        """Delete runs (all refs are resolved before anything is deleted); returns their ids."""
        runs = [self.run(ref) for ref in refs]
        for run in runs:
            if force:
                launcher.cancel(run)
            self.store.remove(run, force=force)
        return [run.id for run in runs]

    # ----------------------------------------------------------------- analysis
    def kernel_table(self, ref: str):
        """(DataFrame, format) of the run's newest kernel table, or None."""
        from tinylab.analysis.hotspots import (
            load_run_kernel_table,  # pandas: only when a table is asked for
        )

        return load_run_kernel_table(self.run(ref).dir)

    def hotspots_table(self, ref: str):
        """(DataFrame, format) of a run (id, prefix, `last`, folder) or of any profiler output file/folder."""
        from tinylab.analysis.hotspots import load_kernel_table, load_run_kernel_table

        path = Path(ref)
        if is_run_dir(path):
            run_dir = path
        elif path.is_dir() and (runs := [p.name for p in _children(path) if is_run_dir(p)]):
            raise UserError(f"{path} holds {len(runs)} runs, whose profiles would be mixed: name one "
                            f"(tinylab hotspots {runs[-1]} --runs-dir {path})")
        elif path.exists():
            return load_kernel_table(path)
        elif len(path.parts) > 1 or path.suffix:
            raise UserError(f"{ref}: no such file or folder")
        else:
            run_dir = self.run(ref).dir
        found = load_run_kernel_table(run_dir)
        if found is not None:
            return found
        profiles = run_dir / "profiles"
        if profiles.is_dir() and any(profiles.iterdir()):
            return load_kernel_table(profiles)
        raise UserError(f"{run_dir}: this run has no kernel table; profile a run with --profile pytorch "
                        "(or rocprofv3, ncu, nsys, ...) to get one")

    def timeline(self, ref: str, step: int | None = None) -> dict[str, Any]:
        """Step anatomy (tinylab.analysis.timeline) of a run's PyTorch trace, or of a trace file
        given by path; with the run's memory timeline when it has one. UserError without a trace."""
        from tinylab.analysis.timeline import analyze

        path = Path(ref)
        if path.is_file():
            memory = path.parent / MEMORY_TIMELINE
            result = analyze(path, memory if memory.is_file() else None, step)
            result["title"] = f"timeline of {path.name}"
            return result
        if path.suffix in (".json", ".gz"):
            raise UserError(f"{ref}: no such trace file")
        run = self.run(ref)
        record = run.record()
        trace = memory = None
        for profile in record.profiles:
            for name, rel in profile.artifacts.items():
                full = run.dir / rel
                if name.endswith((".trace.json.gz", ".trace.json", "trace.json.gz")) and full.is_file():
                    trace = full
                elif name == MEMORY_TIMELINE and full.is_file():
                    memory = full
        if trace is None:
            raise NoTrace(f"run {run.id} has no PyTorch profiler trace: launch it with --profile pytorch "
                            "(add TINYLAB_PROFILE_MEMORY=1 for the memory timeline too)")
        result = analyze(trace, memory, step)
        cfg = record.config
        result["title"] = (f"timeline of {run.id} {cfg.get('version', '?')} {cfg.get('precision', '?')} "
                           f"on {record.device_name or record.device or '?'}")
        return result

    def compare(self, a: str, b: str) -> dict[str, Any]:
        from tinylab.analysis.compare import compare_runs

        return compare_runs(self.record(a), self.record(b))

    def report(self, refs: list[str], fmt: str) -> str:
        from tinylab.analysis.report import build_report

        return build_report([self.run(ref) for ref in refs], fmt)

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
        for scenario in self.scenarios():
            if scenario.id == scenario_id:
                return scenario
        known = ", ".join(s.id for s in self.scenarios()) or "(none)"
        raise UserError(f"unknown exercise {scenario_id!r}: choose one of {known}")

    def progress(self) -> dict[str, Any]:
        return ex.load_progress()

    def plan_step(self, scenario_id: str, number: int, device: str = "auto",
                  overrides: dict | None = None) -> exercise.StepPlan:
        scenario = self.scenario(scenario_id)
        return exercise.plan_step(scenario, ex.get_step(scenario, number), self.machine, device, overrides,
                                  check=self.check)

    def run_step(self, plan: exercise.StepPlan, *, output: TextIO | None = None, poll_s: float = 0.2,
                 stop: Callable[[], bool] = lambda: False) -> Iterator[exercise.StepProgress]:
        return exercise.run_step(plan, start=self.launch, output=output, poll_s=poll_s, stop=stop,
                                 kernel_pool=self.kernel_pool)
