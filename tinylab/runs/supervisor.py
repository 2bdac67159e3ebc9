"""The detached process that owns one run: `python -m tinylab.runs.supervisor RUN_DIR`.

It starts the trainer (behind the chosen external profiler's argv, if any), waits for it,
records its exit code as an `exit` event, and turns a wrapping profiler's native output into
the run's kernel table. Without it, a trainer killed by a signal would leave no record of how
it ended, and nobody would be left to parse a wrapper's files after a detached run.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import traceback
from pathlib import Path

from tinylab.config import RunConfig
from tinylab.errors import UserError
from tinylab.events import EVENTS_FILE, EventWriter, read_events
from tinylab.profilers import wrapper_adapter, write_kernel_table
from tinylab.profilers.base import WrapperAdapter
from tinylab.runs import passes
from tinylab.runs.launcher import SAFE_PATH
from tinylab.runs.store import process_start_time, write_json


def trainer_argv(run_dir: Path) -> list[str]:
    return [sys.executable, *SAFE_PATH, "-m", "tinylab.trainer", "--config", str(run_dir.resolve() / "config.json")]


def supervise(run_dir: Path) -> int:
    cfg = RunConfig.from_json_file(str(run_dir / "config.json"))
    adapter = wrapper_adapter(cfg) if cfg.profilers else None
    argv = trainer_argv(run_dir)
    out_dir = None
    if adapter is not None:
        out_dir = run_dir / "profiles" / adapter.name
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            argv = adapter.wrap_argv(out_dir, cfg) + argv
        except UserError as exc:  # the tool changed since the pre-launch check (another ROCm on PATH)
            return _not_started(run_dir, str(exc), 2)
    try:
        print("$ " + " ".join(argv), flush=True)
    except OSError:  # output.log on a full disk: the run still starts, and its events say how it ends
        pass
    # Cancel signals the whole group; the supervisor outlives the trainer to record the end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
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
    with EventWriter(run_dir / EVENTS_FILE) as ev:
        ev.emit("exit", returncode=rc, signal=signal.Signals(-rc).name if rc < 0 else None)
        if adapter is not None and out_dir is not None:
            try:
                _collect(run_dir, cfg, adapter, out_dir, ev)
            except OSError:  # no room for the profile: the run's end is already recorded
                pass
    return 0 if rc == 0 else 1


def _not_started(run_dir: Path, message: str, code: int, kind: str = "UserError") -> int:
    with EventWriter(run_dir / EVENTS_FILE) as ev:
        ev.emit("error", type=kind, message=message, traceback="")
        ev.emit("exit", returncode=code, signal=None)
    return code


def _collect(run_dir: Path, cfg: RunConfig, adapter: WrapperAdapter, out_dir: Path, ev: EventWriter) -> None:
    try:
        result = adapter.collect(out_dir)
        if result.steps is None and result.table is not None and adapter.whole_run_table:
            result = dataclasses.replace(result, steps=len(read_events(run_dir / EVENTS_FILE).of("step")))
        count = passes.passes_run(run_dir)
        if count:  # a counter-pass tool: say how many runs there were, and why
            why = passes.describe(count, adapter.name, cfg)
            result = dataclasses.replace(result, passes=count, note=f"{why}; {result.note}" if result.note else why)
        ev.emit("profile", **write_kernel_table(run_dir, adapter.name, result))
    except Exception as exc:  # a parse failure must not turn a finished run into a crash
        ev.emit(
            "profile",
            tool=adapter.name,
            artifacts={},
            kernel_table=None,
            format=None,
            note=f"could not read {adapter.name} output: {exc}",
        )
        traceback.print_exc()


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    raise SystemExit(supervise(Path(sys.argv[1])))
