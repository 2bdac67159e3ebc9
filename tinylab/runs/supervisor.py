"""The detached process that owns one run: `python -m tinylab.runs.supervisor RUN_DIR`.

It starts the trainer (behind the chosen external profiler's argv, if any), waits for it,
records its exit code as an `exit` event, and turns a wrapping profiler's native output into
the run's kernel table. Without it, a trainer killed by a signal would leave no record of how
it ended, and nobody would be left to parse a wrapper's files after a detached run.

A run of several ranks starts torchrun instead, which starts the ranks (each behind its own
profiler wrapper, tinylab/runs/rank.py): afterwards every rank's output becomes its own kernel
table, and a rank that died without a word is named in an error event. In a Slurm job, a run of
several nodes starts torchrun on every node of the job through srun (tinylab/runs/slurm.py).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

from tinylab.core import childproc
from tinylab.runs import engines
from tinylab.runs import slurm
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.core.eventlog import EVENTS_FILE, EventWriter, read_events
from tinylab.core.events import ErrorEvent, ExitEvent, ProfileEvent
from tinylab.profilers.base import profile_dir, write_kernel_table
from tinylab.profilers.registry import wrapper_adapter
from tinylab.profilers.base import WrapperAdapter
from tinylab.runs import passes
from tinylab.runs.store import process_start_time, record_alive, write_json, write_record
from tinylab.core.safeio import UnsafeFile, read_tail, write_atomic


#: What the other nodes of a run started by hand (not through Slurm) run to join it.
NODES_FILE = "nodes.txt"


def trainer_argv(run_dir: Path) -> list[str]:
    return childproc.python("-m", "tinylab.training.trainer", "--config", str(run_dir.resolve() / "config.json"))


def wrapped_trainer_argv(run_dir: Path, cfg: RunConfig, adapter: WrapperAdapter | None,
                         rank: int | None = None) -> list[str]:
    """The trainer, behind the profiler wrapper when there is one, its output going to
    profiles/<tool> (profiles/<tool>/rank<k> for one rank of several: tinylab/runs/rank.py)."""
    if adapter is None:
        return trainer_argv(run_dir)
    out_dir = profile_dir(run_dir, adapter.name, rank)
    out_dir.mkdir(parents=True, exist_ok=True)
    return adapter.wrap_argv(out_dir, cfg) + trainer_argv(run_dir)


def torchrun_argv(cfg: RunConfig, program: list[str], *, run_id: str, endpoint: str | None = None) -> list[str]:
    """`python -m torch.distributed.run ...` starting `program` once a rank.

    One node: --standalone (a free port of its own, so two runs on one node never meet). Several
    nodes: c10d rendezvous at the first node's address, keyed by the run id. `program` is the
    argv of a rank, started as it is (--no-python): torchrun's own `-m` would start Python without
    -P, and a PYTHONSAFEPATH in the environment would reach the profilers too, whose Python scripts
    import modules from their own folder.
    """
    argv = childproc.python("-m", "torch.distributed.run",
                            "--nproc-per-node", str(cfg.nproc_per_node), "--nnodes", str(cfg.nnodes))
    if cfg.nnodes == 1:
        argv.append("--standalone")
    else:
        where = endpoint or cfg.rdzv_endpoint
        if not where:
            raise UserError(f"a run of {cfg.nnodes} nodes needs --rdzv-endpoint HOST:PORT, or `tinylab submit`")
        argv += ["--rdzv-backend", "c10d", "--rdzv-endpoint", where, "--rdzv-id", run_id]
    return argv + ["--no-python", *program]


def through_srun(cfg: RunConfig) -> bool:
    """A run of several nodes inside a Slurm job: srun starts torchrun on each node of the job."""
    return cfg.nnodes > 1 and slurm.JOB_ENV in os.environ


def launch_argv(run_dir: Path, cfg: RunConfig, adapter: WrapperAdapter | None) -> list[str]:
    """What the supervisor starts: the trainer, behind the run's profiler wrapper; or for a run of
    ranks, torchrun, which starts the trainer (or, with a wrapper, tinylab.runs.rank) once a rank;
    in a Slurm job of several nodes, srun, which starts that torchrun on every node."""
    if cfg.parallel is None:
        return wrapped_trainer_argv(run_dir, cfg, adapter)
    if cfg.parallel in ("zero1", "zero2"):
        write_json(run_dir / engines.DEEPSPEED_CONFIG, engines.deepspeed_config(cfg))
    program = trainer_argv(run_dir) if adapter is None else \
        childproc.python("-m", "tinylab.runs.rank", str(run_dir.resolve()))
    argv = torchrun_argv(cfg, program, run_id=run_dir.name, endpoint=os.environ.get(engines.ENDPOINT_ENV))
    return slurm.srun_argv(cfg) + argv if through_srun(cfg) else argv


def supervise(run_dir: Path) -> int:
    cfg = RunConfig.from_json_file(str(run_dir / "config.json"))
    adapter = wrapper_adapter(cfg) if cfg.profilers else None
    try:
        argv = launch_argv(run_dir, cfg, adapter)
    except UserError as exc:  # the tool changed since the pre-launch check (another ROCm on PATH)
        return _not_started(run_dir, str(exc), 2)
    job = slurm.running_job(run_dir)
    if job is not None and not (run_dir / slurm.JOB_FILE).exists():  # its script was submitted by hand
        try:
            write_record(run_dir, slurm.JOB_FILE, job.record())
        except OSError:  # the run goes on; seen from elsewhere it reads as lost until it ends
            pass
    if cfg.nnodes > 1 and not through_srun(cfg):  # started by hand: the other nodes join by hand
        write_atomic(run_dir / NODES_FILE, (
            f"This run has {cfg.nnodes} nodes; this one started it. On each of the others, in a folder that sees\n"
            f"{run_dir.resolve()} at the same path, run:\n\n  {shlex.join(argv)}\n").encode("utf-8"), follow_dir_link=False)
    try:
        print("$ " + " ".join(argv), flush=True)
    except OSError:  # output.log on a full disk: the run still starts, and its events say how it ends
        pass
    # Cancel signals the whole group; the supervisor outlives the trainer to record the end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if cfg.parallel is not None:
        adopt_orphans()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=_default_signals, cwd=run_dir)
    except OSError as exc:
        return _not_started(run_dir, f"could not start {argv[0]}: {exc}", 127, type(exc).__name__)
    # The trainer outlives a killed supervisor; this record keeps such a run `running` and cancellable.
    try:
        write_json(run_dir / "trainer.json", {"pid": proc.pid, "start_time": process_start_time(proc.pid)})
    except OSError:  # a full disk: process.json (ours) still shows the run as running while we live
        pass
    rc = proc.wait()
    note = None
    if cfg.parallel is not None and rc != 0:  # torchrun killed alone: its ranks train on; the run ends with them
        rc, note = _after_ranks(run_dir, cfg, rc)
    with EventWriter(run_dir / EVENTS_FILE) as ev:
        if cfg.parallel is not None and rc != 0:
            for error in silent_ranks(run_dir, cfg):
                ev.emit(error)
        ev.emit(ExitEvent(rc, signal.Signals(-rc).name if rc < 0 else None, note))
        if adapter is not None:
            ranks = [None] if cfg.parallel is None else list(range(cfg.world_size))
            for rank in ranks:
                out_dir = profile_dir(run_dir, adapter.name, rank)
                if rank is not None and not out_dir.is_dir():
                    continue  # that rank runs on another node, or never started
                try:
                    _collect(run_dir, cfg, adapter, out_dir, ev, rank)
                except OSError:  # no room for the profile: the run's end is already recorded
                    pass
    return 0 if rc == 0 else 1


def adopt_orphans() -> bool:
    """Make this process the one that orphaned descendants are re-parented to (Linux's child
    subreaper): when torchrun alone is killed, its ranks train on as this process's children, so
    their end is waited for and their exit codes are known. False where the system has no such thing."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _after_ranks(run_dir: Path, cfg: RunConfig, rc: int) -> tuple[int, str | None]:
    """Wait for the ranks of this host that outlived torchrun (each rank's own record names it), and
    the run's exit code: torchrun's, unless it died while every rank of the run trained on here to
    exit code 0 (then 0, with a note of what happened to torchrun)."""
    here = socket.gethostname()
    records = {r["pid"]: r for r in engines.rank_records(run_dir) if r.get("host") == here and isinstance(r.get("pid"), int)}
    codes: dict[int, int | None] = {}
    for pid, record in records.items():
        try:  # re-parented to this process (adopt_orphans): its exit code, even if it has already ended
            codes[pid] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except ChildProcessError:  # not this process's child: it ended under torchrun, or no subreaper here
            while record_alive(record):
                time.sleep(RANK_POLL_S)
            codes[pid] = None
    outlived = [pid for pid, code in codes.items() if code is not None]
    if not outlived or len(codes) != cfg.world_size or any(codes[pid] != 0 for pid in codes):
        return rc, None
    how = f"was killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exited {rc}"
    return 0, f"torchrun {how} while its {len(codes)} ranks trained on; every rank ended with exit code 0"


#: How often the supervisor looks whether a rank it cannot wait for (not its child) has ended.
RANK_POLL_S = 0.5


#: torchrun's report of a failed worker ("rank      : 1 (local_rank: 1)" then "exitcode  : -9 (pid: 41)").
_TORCHRUN_FAILURE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


def silent_ranks(run_dir: Path, cfg: RunConfig) -> list[ErrorEvent]:
    """Error events for the ranks of a failed run that left none: killed (SIGKILL, the OOM killer),
    or never started. torchrun's own failure report, in output.log, says how each ended and which
    failed first (`root`: the others' errors, a peer's closed connection say, followed from it)."""
    log = read_events(run_dir / EVENTS_FILE)
    spoke = {e.get("rank") for e in log.of("error")} | {e.get("rank") for e in log.of("rank")}
    try:
        report = read_tail(run_dir / "output.log", 64 << 10).decode("utf-8", "replace")
    except (OSError, UnsafeFile):
        report = ""
    codes = {int(r): int(c) for r, c in _TORCHRUN_FAILURE.findall(report)}
    cause = report.rfind("Root Cause")  # torchrun's first observed failure
    root = _TORCHRUN_FAILURE.search(report, cause) if cause >= 0 else None
    root_rank = int(root.group(1)) if root else None
    records = {r["rank"]: r for r in engines.rank_records(run_dir)}
    out = []
    for rank in range(cfg.world_size):
        if rank in spoke:
            continue
        record = records.get(rank)
        code = codes.get(rank)
        how = (f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0 and -code in
               signal.valid_signals() else f"exited with code {code}" if code is not None else "ended")
        if record is None:
            message = f"rank {rank} never started (torchrun's output in output.log says why)"
        else:
            message = f"rank {rank} (pid {record.get('pid')} on {record.get('host')}) {how} without recording an error"
        out.append(ErrorEvent("RankDied", message, "", rank, root=rank == root_rank))
    return out


def _not_started(run_dir: Path, message: str, code: int, kind: str = "UserError") -> int:
    with EventWriter(run_dir / EVENTS_FILE) as ev:
        ev.emit(ErrorEvent(kind, message, ""))
        ev.emit(ExitEvent(code))
    return code


def _collect(run_dir: Path, cfg: RunConfig, adapter: WrapperAdapter, out_dir: Path, ev: EventWriter,
             rank: int | None = None) -> None:
    try:
        result = adapter.collect(out_dir)
        if result.steps is None and result.table is not None and adapter.whole_run_table:
            result = dataclasses.replace(result, steps=len(read_events(run_dir / EVENTS_FILE).of("step")))
        count = passes.passes_run(run_dir)
        if count:  # a counter-pass tool: say how many runs there were, and why
            why = passes.describe(count, adapter.name, cfg)
            result = dataclasses.replace(result, passes=count, note=f"{why}; {result.note}" if result.note else why)
        ev.emit(ProfileEvent(**write_kernel_table(run_dir, adapter.name, result, rank)))
    except Exception as exc:  # a parse failure must not turn a finished run into a crash
        ev.emit(ProfileEvent(adapter.name, note=f"could not read {adapter.name} output: {exc}", rank=rank))
        traceback.print_exc()


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    raise SystemExit(supervise(Path(sys.argv[1])))
