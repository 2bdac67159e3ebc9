"""Start runs detached from the terminal, and cancel them.

The launched process is the supervisor (tinylab/runs/supervisor.py) in a new session, with
stdin closed and output going to output.log: closing the terminal, losing the SSH link or
killing the launching process leaves it running. The supervisor starts the trainer (wrapped
by an external profiler when one is chosen) in the same process group, so cancel can signal
the whole group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tinylab import childproc
from tinylab.config import RunConfig
from tinylab.errors import UserError
from tinylab.runs.record import printable
from tinylab.runs.store import Run, RunStore, process_start_time, record_alive, write_json
from tinylab.safeio import FULL_DISK, release_space

#: Python flags of every process tinylab starts (tinylab.childproc): `-P` (3.11+) keeps the
#: caller's folder off sys.path, so a `models/` or `torch.py` there is never imported into a run.
#: Runs also start in their own folder, which is what 3.10 puts first on sys.path instead.
SAFE_PATH = childproc.SAFE_PATH

#: Grace periods after SIGINT and after SIGTERM before the next, stronger signal.
CANCEL_GRACE_S = (3.0, 2.0)


def launch(store: RunStore, cfg: RunConfig, env: dict[str, str] | None = None) -> Run:
    """Create the run folder and start its supervisor; returns at once.

    The mechanics only: tinylab.service.launch checks a config against the machine first.
    """
    cfg.validate()
    run = store.create(cfg)
    run_dir = run.dir.resolve()
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    argv = [sys.executable, *SAFE_PATH, "-m", "tinylab.runs.supervisor", str(run_dir)]
    with open(run.output_log, "ab") as log, open(os.devnull, "rb") as devnull:
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
    }
    try:
        write_json(run.dir / "process.json", record)
    except OSError as exc:  # the disk filled since the reserve was made: use it, the run has started
        if exc.errno not in FULL_DISK or not release_space(run.dir):
            raise
        write_json(run.dir / "process.json", record)
    return run


def cancel(run: Run, grace_s: tuple[float, float] = CANCEL_GRACE_S) -> bool:
    """SIGINT, then SIGTERM, then SIGKILL to the run's process group. False if not running."""
    if not run.is_alive():
        return False
    pgid = run_group(run)
    if pgid is None:
        return False
    (run.dir / "cancel.json").write_text(json.dumps({"time": time.time(), "by_pid": os.getpid()}), encoding="utf-8")
    for sig, wait in ((signal.SIGINT, grace_s[0]), (signal.SIGTERM, grace_s[1]), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        except PermissionError as exc:
            raise UserError(f"cannot signal run {run.id} (process group {pgid}): {exc}") from None
        if _wait_group_gone(pgid, wait):
            break
    return True


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


def _wait_group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.05)
    return not group_alive(pgid)


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
