"""The run store: one folder per run, and a status derived from files and processes only.

<runs-dir>/<run-id>/
    .tinylab-run    the marker `create` writes first: only folders holding it (or, from tinylab
                    versions before the marker, an id-shaped folder with config.json and
                    process.json) are runs that `rm`, `cancel` and `show` may act on
    config.json     the resolved RunConfig
    process.json    pid, process start time and argv of the detached supervisor
    trainer.json    pid and start time of the trainer (or its profiler wrapper), from the supervisor
    events.jsonl    the trainer's events, then the supervisor's `exit` event
    output.log      stdout + stderr of the trainer (and of a wrapping profiler)
    cancel.json     written by `cancel` before it signals the process group
    profiles/<tool>/ profiler artifacts and the normalized kernels.csv

Status is never stored, because a stored status goes stale the moment a process dies:
running    the supervisor or the trainer is alive (pid AND start time match: pids get reused);
           the trainer counts too because it keeps training when only the supervisor is killed
cancelled  cancel.json exists and the process is gone
failed     an error event, or a non-zero exit code
finished   a summary event and a zero (or not yet recorded) exit code
lost       the process is gone with no summary, error or exit record
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinylab.config import ConfigError, RunConfig
from tinylab.errors import UserError
from tinylab.events import EVENTS_FILE, EventLog, read_events
from tinylab.runs.record import RunRecord

STATUSES = ("running", "finished", "failed", "cancelled", "lost")
TERMINAL = ("finished", "failed", "cancelled", "lost")
ENV_RUNS_DIR = "TINYLAB_RUNS_DIR"
MARKER = ".tinylab-run"
#: The ids `new_run_id` makes; a folder of this shape counts as a run of an older tinylab (see is_run_dir).
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4}")


def default_runs_dir() -> Path:
    return Path(os.environ.get(ENV_RUNS_DIR) or "tinylab_runs")


def new_run_id(now: float | None = None) -> str:
    """Sortable by start time; the random tail keeps two runs in one second apart."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(2)}"


def mark_run(run_dir: Path) -> None:
    """Claim a new folder as a run: written before anything else, so a run is never unrecognised."""
    write_json(run_dir / MARKER, {"id": run_dir.name, "created": time.time()})


def is_run_dir(path: Path) -> bool:
    """A folder tinylab created as a run: never a symlink, and marked (or a pre-marker run folder).

    A folder merely holding a config.json is not a run: `rm` deletes what this accepts.
    """
    if path.is_symlink() or not path.is_dir():
        return False
    if (path / MARKER).is_file() and not (path / MARKER).is_symlink():
        return True
    return bool(RUN_ID.fullmatch(path.name)) and all(
        (path / name).is_file() and not (path / name).is_symlink() for name in ("config.json", "process.json"))


def write_json(path: Path, obj: dict[str, Any]) -> None:
    """Write-then-rename, so a reader never sees half a record."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj), encoding="utf-8")
    tmp.replace(path)


def process_start_time(pid: int) -> float | None:
    """Start time of a live, non-zombie process, or None."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


@dataclass
class Run:
    dir: Path

    @property
    def id(self) -> str:
        return self.dir.name

    # ------------------------------------------------------------- files
    def _json(self, name: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.dir / name).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    @property
    def config_dict(self) -> dict[str, Any]:
        return self._json("config.json") or {}

    def config(self) -> RunConfig:
        data = self._json("config.json")
        if data is None:
            raise UserError(f"run {self.id}: config.json is missing or not valid JSON")
        try:
            return RunConfig.from_dict(data)
        except (ConfigError, TypeError) as exc:
            raise UserError(f"run {self.id}: config.json: {exc}") from None

    @property
    def process(self) -> dict[str, Any] | None:
        return self._json("process.json")

    @property
    def cancel_record(self) -> dict[str, Any] | None:
        return self._json("cancel.json")

    def events(self) -> EventLog:
        return read_events(self.dir / EVENTS_FILE)

    @property
    def output_log(self) -> Path:
        return self.dir / "output.log"

    # ------------------------------------------------------------ status
    def is_alive(self) -> bool:
        return _record_alive(self.process) or _record_alive(self._json("trainer.json"))

    def status(self, log: EventLog | None = None) -> str:
        log = log if log is not None else self.events()
        if self.is_alive():
            return "running"
        if self.cancel_record is not None:
            return "cancelled"
        exit_ev = log.last("exit")
        if log.last("error") is not None or (exit_ev is not None and exit_ev.get("returncode") != 0):
            return "failed"
        if log.last("summary") is not None:
            return "finished"
        return "lost"

    def record(self) -> RunRecord:
        """Everything `show`, `runs`, compare, report, the exercises and the lab display, read once."""
        log = self.events()
        return RunRecord.from_files(self.dir, self.status(log), log, self.config_dict, self.process,
                                    self.cancel_record)


def _record_alive(record: dict[str, Any] | None) -> bool:
    """The process of a {pid, start_time} record is alive and is still that same process."""
    pid, started_then = (record or {}).get("pid"), (record or {}).get("start_time")
    if not isinstance(pid, int) or pid <= 0 or not isinstance(started_then, (int, float)):
        return False
    started = process_start_time(pid)
    return started is not None and abs(started - started_then) < 1.0


class RunStore:
    def __init__(self, root: str | os.PathLike[str] | None = None):
        self.root = Path(root) if root is not None else default_runs_dir()

    def create(self, cfg: RunConfig) -> Run:
        self.root.mkdir(parents=True, exist_ok=True)
        for _ in range(10):
            run_dir = self.root / new_run_id()
            try:
                run_dir.mkdir()
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - ten collisions of a 16-bit random tail in one second
            raise UserError(f"could not create a unique run folder in {self.root}")
        mark_run(run_dir)
        (run_dir / "config.json").write_text(cfg.resolved().to_json() + "\n", encoding="utf-8")
        return Run(run_dir)

    def list(self) -> list[Run]:
        if not self.root.is_dir():
            return []
        return [Run(p) for p in sorted(self.root.iterdir()) if is_run_dir(p)]

    def resolve(self, ref: str) -> Run:
        """A full id, a unique prefix, `last`, or a path to a run folder of this store."""
        runs = self.list()
        if ref == "last":
            if not runs:
                raise UserError(f"no runs in {self.root}: start one with `tinylab run`")
            return runs[-1]
        if os.sep in ref or ref in (".", ".."):
            return self._run_at(Path(ref))
        matches = [r for r in runs if r.id.startswith(ref)]
        exact = [r for r in matches if r.id == ref]
        if exact:
            return exact[0]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UserError(f"no run matches {ref!r} in {self.root} (use an id, a unique prefix, or 'last')")
        shown = ", ".join(r.id for r in matches[:5])
        raise UserError(f"run prefix {ref!r} is ambiguous: {len(matches)} runs match ({shown})")

    def _run_at(self, path: Path) -> Run:
        """The run folder at a path: only a folder tinylab created, never one reached by a link."""
        if not is_run_dir(path) or path.name in ("", ".", ".."):
            raise UserError(f"{path} is not a run folder tinylab created (no {MARKER} marker, or a link): nothing done")
        return Run(path)

    def remove(self, run: Run, force: bool = False) -> None:
        """Delete a run folder of this store; anything else (a link, a foreign folder) is refused."""
        self._run_at(run.dir)
        if run.is_alive() and not force:
            raise UserError(f"run {run.id} is running: cancel it first or pass --force")
        shutil.rmtree(run.dir)
