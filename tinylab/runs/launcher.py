"""Start runs detached from the terminal, and cancel them.

The launched process is the supervisor (tinylab/runs/supervisor.py) in a new session, with
stdin closed and output going to output.log: closing the terminal, losing the SSH link or
killing the launching process leaves it running. The supervisor starts the trainer (wrapped
by an external profiler when one is chosen) in the same process group, so cancel can signal
the whole group.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tinylab.core import childproc
from tinylab.runs import slurm
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.runs.record import printable
from tinylab.runs.store import LIVE, Run, RunStore, process_start_time, record_alive, write_json, write_record
from tinylab.core.safeio import UnsafeFile, open_append

#: Python flags of every process tinylab starts (tinylab.core.childproc): `-P` (3.11+) keeps the
#: caller's folder off sys.path, so a `models/` or `torch.py` there is never imported into a run.
#: Runs also start in their own folder, which is what 3.10 puts first on sys.path instead.
SAFE_PATH = childproc.SAFE_PATH

#: Grace periods after SIGINT and after SIGTERM before the next, stronger signal.
CANCEL_GRACE_S = (3.0, 2.0)


def supervisor_argv(run_dir: Path) -> list[str]:
    """The process that owns a run (tinylab/runs/supervisor.py), started here or by a Slurm job's script."""
    return childproc.python("-m", "tinylab.runs.supervisor", str(run_dir))


def launch(store: RunStore, cfg: RunConfig, env: dict[str, str] | None = None) -> Run:
    """Create the run folder and start its supervisor; returns at once.

    The mechanics only: tinylab.service.launch checks a config against the machine first.
    """
    cfg.validate()
    run = store.create(cfg)
    run_dir = run.dir.resolve()
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    argv = supervisor_argv(run_dir)
    with os.fdopen(open_append(run.output_log), "ab") as log, open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(
            argv,
            stdin=devnull,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=child_env,
            cwd=run_dir,
        )
    started = process_start_time(proc.pid)
    record = {
        "pid": proc.pid,
        "pgid": proc.pid,
        "start_time": started if started is not None else time.time(),
        "launched_at": time.time(),
        "argv": argv,
        "host": socket.gethostname(),
    }
    write_record(run.dir, "process.json", record)  # the disk may have filled since: the reserve is for this
    return run


def cancel(run: Run, grace_s: tuple[float, float] = CANCEL_GRACE_S) -> bool:
    """SIGINT, then SIGTERM, then SIGKILL to the run's process group, and to the group of each of
    its ranks (torchrun starts every rank in a session of its own); a Slurm run's job is cancelled
    with scancel instead, wherever it is. False if not running (nor queued)."""
    job = run.job
    if job is not None:
        return _cancel_job(run, job)
    if run.remote:
        raise UserError(f"run {run.id} was started on {run.host}: cancel it there (or with Slurm's scancel)")
    if not run.is_alive():
        return False
    pgid = run_group(run)
    groups = ([] if pgid is None else [pgid]) + [g for g in run.rank_groups() if _in_group_of_run(g, g, run.id)]
    if not groups:
        return False
    _record_cancel(run)
    for sig, wait in ((signal.SIGINT, grace_s[0]), (signal.SIGTERM, grace_s[1]), (signal.SIGKILL, 5.0)):
        live = []
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
                live.append(pgid)
            except ProcessLookupError:
                continue
            except PermissionError as exc:
                raise UserError(f"cannot signal run {run.id} (process group {pgid}): {exc}") from None
        if not live or _wait_groups_gone(live, wait):
            break
    return True


def _cancel_job(run: Run, job: slurm.Job) -> bool:
    status = run.status()
    if status == "remote":
        raise UserError(f"run {run.id} is Slurm job {job.id}, and no Slurm answers here: cancel it where Slurm is "
                        f"(scancel {job.id})")
    if status not in LIVE:
        return False
    slurm.scancel(job.id)
    _record_cancel(run)
    return True


def _record_cancel(run: Run) -> None:
    """cancel.json, written then renamed: one planted as a link is replaced, never written through; a
    run folder that is itself a link is refused (UnsafeFile, before anything is signalled). On a
    full disk the cancel goes on without its record (the run then reads as ended by a signal)."""
    try:
        write_json(run.dir / "cancel.json", {"time": time.time(), "by_pid": os.getpid()})
    except UnsafeFile:
        raise
    except OSError:
        pass


def run_group(run: Run) -> int | None:
    """The process group of a live run (None once it has ended), checked before anything is signalled.

    The launcher starts the supervisor as the leader of a new session, so the group's id is the
    supervisor's pid, and a live process of the run (the supervisor, or the trainer it started,
    each matching its pid AND start time, its command line naming the run) must be in it. A
    process.json naming any other group (edited, damaged, or this command's own group) is
    refused: UserError, nothing signalled.
    """
    process = run.process or {}
    pgid, pid = process.get("pgid"), process.get("pid")
    refuse = f"run {run.id}: process.json names process group {printable(repr(pgid))[:40]}, "
    if not isinstance(pgid, int) or isinstance(pgid, bool) or pgid <= 1 or pgid != pid:
        raise UserError(refuse + "which is not the group tinylab started for it: nothing signalled")
    if pgid == os.getpgrp():
        raise UserError(refuse + "which is this command's own group: nothing signalled")
    live = [record for record in (process, run.trainer_record) if record_alive(record)]
    for record in live:
        if _in_group_of_run(record["pid"], pgid, run.id):  # type: ignore[index]
            return pgid
    if not live or not run.is_alive():  # it ended meanwhile
        return None
    raise UserError(refuse + "but the run's live processes are not in it: nothing signalled")


def _in_group_of_run(pid: int, pgid: int, run_id: str) -> bool:
    """Process `pid` is in group `pgid` and was started for run `run_id` (the supervisor's argv
    names the run folder, the trainer's its config.json, a profiler wrapping it both)."""
    import psutil

    try:
        return os.getpgid(pid) == pgid and any(run_id in arg for arg in psutil.Process(pid).cmdline())
    except (OSError, psutil.Error):
        return False


def _wait_groups_gone(pgids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(group_alive(g) for g in pgids):
            return True
        time.sleep(0.05)
    return not any(group_alive(g) for g in pgids)


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process of the group exists."""
    import psutil

    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.info["pid"]) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, PermissionError, psutil.NoSuchProcess):
            continue
    return False
