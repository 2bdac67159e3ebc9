"""The run store: one folder per run, and a status derived from files and processes only.

<runs-dir>/<run-id>/
    .tinylab-run    the marker `create` writes first ({"id": <run-id>, ...}): only folders directly
                    inside the store holding it with their own id (or, from tinylab versions
                    before the marker, an id-shaped folder of the store with config.json and
                    process.json) are runs that `rm`, `cancel` and `show` may act on
    config.json     the resolved RunConfig
    process.json    pid, process start time, host and argv of the detached supervisor (a run started here)
    job.sbatch      the Slurm job script of a run `tinylab submit` wrote (tinylab/runs/slurm.py)
    job.json        the Slurm job id sbatch gave, when, and from which host
    trainer.json    pid and start time of the trainer (or its profiler wrapper, or torchrun), from the supervisor
    ranks/rank<k>.json  pid, start time and host of each rank of a run of several (tinylab/training/parallel.py)
    events.jsonl    the trainer's events, then the supervisor's `exit` event
    output.log      stdout + stderr of the trainer (and of a wrapping profiler)
    cancel.json     written by `cancel` before it signals the process group
    profiles/<tool>/ profiler artifacts and the normalized kernels.csv

Status is never stored, because a stored status goes stale the moment a process dies:
queued     a Slurm job waiting for its nodes (squeue says PENDING)
running    the supervisor, the trainer or a rank is alive (pid AND start time match: pids get reused);
           the trainer counts too because it keeps training when only the supervisor is killed;
           or Slurm says the run's job runs
remote     the run was started on another host and has not ended: its processes cannot be seen
           from here (a compute node's run, seen from the login node); or it is a Slurm job and no
           Slurm can be asked here (a laptop reading a shared folder)
cancelled  cancel.json exists, the process is gone, and it wrote no summary; or Slurm cancelled its job
           (a cancel that lands after the summary leaves the run finished: it interrupted no training)
failed     an error event, or a non-zero exit code; or Slurm ended its job as failed (TIMEOUT, NODE_FAIL ...)
finished   a summary event and a zero (or not yet recorded) exit code
lost       the process is gone with no summary, error or exit record
dry-run    `tinylab submit --dry-run` wrote the job script and nobody submitted it through tinylab

A Slurm run whose supervisor has not recorded its end (no `exit` event) asks Slurm first.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import secrets
import shutil
import socket
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinylab.runs import slurm
from tinylab.config import ConfigError, RunConfig
from tinylab.core.errors import UserError
from tinylab.core.eventlog import EVENTS_FILE, EventLog, read_events
from tinylab.runs.record import RUN_ID, RunRecord, printable, short_id
from tinylab.core.safeio import FULL_DISK, exposed, read_json, release_space, reserve_space, write_atomic

STATUSES = ("queued", "running", "remote", "finished", "failed", "cancelled", "lost", "dry-run")
#: Statuses that do not change by themselves (a dry run's script waits for a hand-typed sbatch).
TERMINAL = ("finished", "failed", "cancelled", "lost", "dry-run")
#: Exit codes a cancel's signals give: killed by SIGINT, SIGTERM or SIGKILL, or the trainer's own
#: code for an interrupt (130); a shell's 128 + signal for the others.
CANCEL_CODES = (-2, -15, -9, 130, 143, 137)
#: What a cancel stops (and `rm` refuses without --force).
LIVE = ("queued", "running")
ENV_RUNS_DIR = "TINYLAB_RUNS_DIR"
MARKER = ".tinylab-run"
#: The most a marker may hold (it holds an id and a time).
MARKER_LIMIT = 4096


def default_runs_dir() -> Path:
    return Path(os.environ.get(ENV_RUNS_DIR) or "tinylab_runs")


def new_run_id(now: float | None = None) -> str:
    """Sortable by start time; the random tail keeps two runs in one second apart."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(2)}"


def mark_run(run_dir: Path) -> None:
    """Claim a new folder as a run: written before anything else, so a run is never unrecognised."""
    write_json(run_dir / MARKER, {"id": run_dir.name, "created": time.time()})


def run_dir_state(path: Path, *, legacy: bool = True) -> bool | None:
    """True for a folder tinylab created as a run, False for anything else, None when it cannot be
    read (a permission denied: the caller skips it with a note; it never raises).

    A run folder is never a symlink and holds a `.tinylab-run` marker that is a regular file whose
    JSON `id` is the folder's name (a marker copied into another folder, an empty one, or one
    naming another run does not count). With `legacy`, a folder of tinylab's id shape holding
    config.json and process.json counts too (runs of a tinylab before the marker): callers pass it
    only for entries of the run store itself. A folder merely holding a config.json is not a run:
    `rm` deletes what this accepts.
    """
    try:
        if not stat.S_ISDIR(path.lstat().st_mode):
            return False
        try:
            data = read_json(path / MARKER, limit=MARKER_LIMIT)
        except FileNotFoundError:
            pass
        except UserError:  # a link, a FIFO, too large, not JSON, nested too deep
            return False
        else:
            return isinstance(data, dict) and data.get("id") == path.name
        if not (legacy and RUN_ID.fullmatch(path.name)):
            return False
        return all(stat.S_ISREG((path / name).lstat().st_mode) for name in ("config.json", "process.json"))
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            return None
        return False


def is_run_dir(path: Path, *, legacy: bool = True) -> bool:
    """A folder tinylab created as a run (see run_dir_state); an unreadable one is not."""
    return bool(run_dir_state(path, legacy=legacy))


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return exc.strerror or str(exc)


#: Written into a run launched to try an advice item of another run (tinylab.service.advice).
TRIED_FILE = "tried.json"


def write_json(path: Path, obj: dict[str, Any]) -> None:
    """A record of a run folder, written then renamed (tinylab.core.safeio.write_atomic): a reader never
    sees half a record, and a link planted at its name, or a run folder that is a link, is never
    written through."""
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=True).encode("utf-8"), follow_dir_link=False)


def write_record(run_dir: Path, name: str, obj: dict[str, Any]) -> None:
    """A record of a run that has started (process.json, job.json): on a full disk, the run's reserve
    is given up for it."""
    try:
        write_json(run_dir / name, obj)
    except OSError as exc:
        if exc.errno not in FULL_DISK or not release_space(run_dir):
            raise
        write_json(run_dir / name, obj)


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
    def _read_json(self, name: str) -> dict[str, Any]:
        """A record file as an object; UserError (one line) when missing, unsafe, too large or not an object."""
        try:
            data = read_json(self.dir / name)
        except FileNotFoundError:
            raise UserError(f"{name} is missing") from None
        except UserError as exc:  # a link, a FIFO, too large, not JSON, nested too deep
            raise UserError(printable(str(exc).replace(str(self.dir) + os.sep, ""))) from None
        except OSError as exc:
            raise UserError(f"{name} cannot be read ({exc.strerror or type(exc).__name__})") from None
        if not isinstance(data, dict):
            raise UserError(f"{name} holds a {type(data).__name__}, not an object")
        return data

    def _json(self, name: str) -> dict[str, Any] | None:
        try:
            return self._read_json(name)
        except UserError:
            return None

    @property
    def config_dict(self) -> dict[str, Any]:
        return self._json("config.json") or {}

    def config(self) -> RunConfig:
        """The run's config, validated; UserError naming the run and the problem when it is damaged."""
        try:
            data = self._read_json("config.json")
        except UserError as exc:
            raise UserError(f"run {self.id}: {exc}") from None
        try:
            return RunConfig.from_dict(data).validate()
        except (ConfigError, TypeError, ValueError) as exc:
            raise UserError(f"run {self.id}: config.json: {exc}") from None

    def problem(self) -> str | None:
        """Why this run's record is damaged (its config or events unreadable), or None."""
        try:
            self.config()
        except UserError as exc:
            return str(exc).removeprefix(f"run {self.id}: ")
        return None

    @property
    def process(self) -> dict[str, Any] | None:
        return self._json("process.json")

    @property
    def trainer_record(self) -> dict[str, Any] | None:
        return self._json("trainer.json")

    @property
    def cancel_record(self) -> dict[str, Any] | None:
        return self._json("cancel.json")

    @property
    def tried(self) -> dict[str, Any] | None:
        """The advice item this run was launched to try (TRIED_FILE: run A, the rule, its bound), or None."""
        return self._json(TRIED_FILE)

    @property
    def job(self) -> slurm.Job | None:
        """The Slurm job the run was submitted as (job.json), or None."""
        data = self._json(slurm.JOB_FILE)
        return slurm.Job.from_record(data) if data is not None else None

    def events(self) -> EventLog:
        return read_events(self.dir / EVENTS_FILE)

    @property
    def output_log(self) -> Path:
        return self.dir / "output.log"

    # ------------------------------------------------------------ status
    @property
    def host(self) -> str | None:
        """The host the run was started on (None: a run of an older tinylab, taken as this one)."""
        return _host(self.process)

    @property
    def remote(self) -> bool:
        """Started on another host: its pids mean nothing here."""
        return _remote(self.process)

    def rank_groups(self) -> list[int]:
        """Process groups of this host's live ranks (torchrun starts each rank in a session of its own)."""
        from tinylab.runs.engines import rank_records

        here = socket.gethostname()
        return [r["pid"] for r in rank_records(self.dir) if r.get("host") == here and record_alive(r)]

    def is_alive(self) -> bool:
        return self._alive(self.process)

    def _alive(self, process: dict[str, Any] | None) -> bool:
        """is_alive, with process.json as already read."""
        if _remote(process):
            return False
        return record_alive(process) or record_alive(self.trainer_record) or bool(self.rank_groups())

    def status(self, log: EventLog | None = None) -> str:
        return self._status(log if log is not None else self.events(), self.process)[0]

    def _status(self, log: EventLog, process: dict[str, Any] | None) -> tuple[str, slurm.Job | None]:
        """The status, and the run's Slurm job with the state Slurm gave, when it was asked
        (`process`: process.json, read once by the caller)."""
        job = self.job
        if self._alive(process):
            return "running", job
        if job is not None and log.last("exit") is None:  # the supervisor has not recorded the end
            job = dataclasses.replace(job, state=slurm.job_state(job.id))
            status = slurm.status_of(job.state, summarized=log.last("summary") is not None)
            if status is not None:
                return status, job
        return self._ended(log, process), job

    def _ended(self, log: EventLog, process: dict[str, Any] | None) -> str:
        if process is None and not log.events and (self.dir / slurm.SCRIPT_FILE).exists() \
                and not (self.dir / slurm.JOB_FILE).exists():
            return "dry-run"  # a job script that `submit --dry-run` wrote; tinylab submitted nothing
        cancel, summary = self.cancel_record, log.last("summary")
        if _remote(process) and summary is None and log.last("exit") is None and log.last("error") is None \
                and cancel is None:
            return "remote"
        if cancel is not None and summary is None:
            return "cancelled"
        errors, exit_ev = log.of("error"), log.last("exit")
        if cancel is not None:  # a cancel after the summary came too late to stop the training: what its
            # signal interrupted (a profile's export, the teardown) is no failure of the run
            errors = [e for e in errors if e.get("type") != "KeyboardInterrupt"]
            if exit_ev is not None and exit_ev.get("returncode") in CANCEL_CODES:
                exit_ev = None
        if errors or (exit_ev is not None and exit_ev.get("returncode") != 0):
            return "failed"
        if summary is not None:
            return "finished"
        return "lost"

    def record(self, log: EventLog | None = None) -> RunRecord:
        """Everything `show`, `runs`, compare, report, the exercises and the lab display, read once
        (`log`: the run's events when the caller has read them for more than the record)."""
        log = log if log is not None else self.events()
        process = self.process
        status, job = self._status(log, process)
        return RunRecord.from_files(self.dir, status, log, self.config_dict, process,
                                    self.cancel_record, self.damage(log), job)

    def damage(self, log: EventLog | None = None) -> str | None:
        """Why the record is damaged (config.json or events.jsonl unreadable or invalid), or None:
        what `runs` and `show` name a run by instead of its status. Asks no process and no Slurm."""
        log = log if log is not None else self.events()
        problems = [p.replace(f"{self.dir}{os.sep}", "") for p in (self.problem(), log.problem) if p]
        return "; ".join(problems) or None


def _host(process: dict[str, Any] | None) -> str | None:
    """The host a process.json names (None: a run of an older tinylab, taken as this one)."""
    host = (process or {}).get("host")
    return host if isinstance(host, str) else None


def _remote(process: dict[str, Any] | None) -> bool:
    """A process.json of another host: its pids mean nothing here."""
    host = _host(process)
    return host is not None and host != socket.gethostname()


def record_alive(record: dict[str, Any] | None) -> bool:
    """The process of a {pid, start_time} record is alive and is still that same process."""
    pid, started_then = (record or {}).get("pid"), (record or {}).get("start_time")
    if not isinstance(pid, int) or pid <= 0 or not isinstance(started_then, (int, float)):
        return False
    started = process_start_time(pid)
    return started is not None and abs(started - started_then) < 1.0


def check_ref(ref: str) -> str:
    """A run reference without its surrounding blanks; UserError when nothing is left: an unset
    variable in a script (`tinylab rm "$RUN"`) must never pick a run, nor a folder."""
    ref = ref.strip()
    if not ref:
        raise UserError("the run reference is empty: nothing done (give a run id from `tinylab runs`, "
                        "a unique prefix of one, or 'last')")
    return ref


class RunStore:
    def __init__(self, root: str | os.PathLike[str] | None = None):
        self.root = Path(root) if root is not None else default_runs_dir()
        #: Entries of the store the last `list` could not read (permission denied): skipped, not runs.
        self.unreadable: list[str] = []

    def create(self, cfg: RunConfig) -> Run:
        """A new run folder with its marker, config and disk reserve, or UserError with nothing left behind.

        A store that cannot be written (a file in the way, read-only, a name too long, a full disk)
        is a one-line error here, before anything starts: never a half-written run.
        """
        if self._exists():
            self._check_folder()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot use {self.root} as the run store: {_why(exc)}") from None
        for _ in range(10):
            run_dir = self.root / new_run_id()
            try:
                run_dir.mkdir()
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise UserError(f"cannot create a run in {self.root}: {_why(exc)}") from None
        else:  # pragma: no cover - ten collisions of a 16-bit random tail in one second
            raise UserError(f"could not create a unique run folder in {self.root}")
        try:
            mark_run(run_dir)
            write_json(run_dir / "config.json", cfg.resolved().to_dict())
            reserve_space(run_dir)
        except OSError as exc:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise UserError(f"cannot create a run in {self.root}: {_why(exc)}") from None
        return Run(run_dir)

    def list(self) -> list[Run]:
        """The store's runs, oldest first; a store that exists but cannot be read is a UserError."""
        if not self._exists():
            return []
        self._check_folder()
        try:
            entries = sorted(self.root.iterdir())
        except OSError as exc:
            raise UserError(f"cannot read the run store {self.root}: {_why(exc)}") from None
        runs, self.unreadable = [], []
        for path in entries:
            state = run_dir_state(path)
            if state is None:
                self.unreadable.append(path.name)
            elif state:
                runs.append(Run(path))
        return runs

    def unreadable_note(self) -> str | None:
        """One line naming what the last `list` skipped because it could not be read, or None."""
        if not self.unreadable:
            return None
        names = ", ".join(self.unreadable[:3]) + (", ..." if len(self.unreadable) > 3 else "")
        return (f"skipped {len(self.unreadable)} entr{'y' if len(self.unreadable) == 1 else 'ies'} of "
                f"{self.root} that could not be read (permission denied): {printable(names)}")

    def exposure_note(self) -> str | None:
        """One line when others may write into the store's folder (shared scratch made group- or
        world-writable): they could plant, replace or delete runs there. None otherwise."""
        who = exposed(self.root)
        if who is None:
            return None
        shown = printable(str(self.root))
        return (f"warning: the run store {shown} is writable by {who}: a neighbour could plant, replace or delete "
                f"runs there (chmod go-w {shown}, or use a --runs-dir of your own)")

    def _exists(self) -> bool:
        try:
            self.root.stat()
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:  # a name too long, a file where a folder should be on the way ...
            if exc.errno == errno.ENOTDIR:
                raise UserError(f"the run store {self.root} is not a folder: a file is in its path") from None
            raise UserError(f"cannot use {self.root} as the run store: {_why(exc)}") from None

    def _check_folder(self) -> None:
        if not self.root.is_dir():
            raise UserError(f"the run store {self.root} is not a folder (set --runs-dir or $TINYLAB_RUNS_DIR)")

    def resolve(self, ref: str) -> Run:
        """A full id, the short id the lab shows (short_id), a unique prefix of either, `last`, or a
        path to a run folder of this store. An empty reference is refused (a script's unset
        variable must never pick a run), and so is a prefix that fits several runs (they are named)."""
        ref = check_ref(ref)
        runs = self.list()
        if ref == "last":
            if not runs:
                raise UserError(f"no runs in {self.root}: start one with `tinylab run`")
            return runs[-1]
        if os.sep in ref or ref in (".", ".."):
            return self._run_at(Path(ref))
        exact = [r for r in runs if ref in (r.id, short_id(r.id))]
        if len(exact) == 1:
            return exact[0]
        matches = exact or [r for r in runs if r.id.startswith(ref) or short_id(r.id).startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UserError(f"no run matches {printable(ref)!r} in {self.root} (use an id from `tinylab runs`, "
                            "a unique prefix, or 'last')")
        shown = ", ".join(f"{short_id(r.id)} ({r.id})" if short_id(r.id) != r.id else r.id for r in matches[:5])
        more = f", and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise UserError(f"run reference {printable(ref)!r} is ambiguous: {len(matches)} runs match: {shown}{more}; "
                        "nothing done")

    def holds(self, path: Path) -> bool:
        """`path` is an entry directly inside this store (the very entry, not a link to it): its
        parent folder resolves to the store's, and it is the entry of that name there."""
        if path.name in ("", ".", ".."):
            return False
        try:
            return os.path.samestat(path.lstat(), (self.root / path.name).lstat())
        except OSError:
            return False

    def _run_at(self, path: Path) -> Run:
        """The run folder at a path: only a folder directly inside this store (itself no link) that
        tinylab created, acted on as the store's own entry; anything else is a UserError."""
        name = path.name
        entry = self.root / name
        shown = printable(str(path))
        if name in ("", ".", ".."):
            raise UserError(f"{shown} is not a run folder tinylab created: nothing done")
        if not self.holds(path):
            raise UserError(f"{shown} is not a run folder inside the run store {printable(str(self.root))} "
                            "(pass --runs-dir to name its store): nothing done")
        state = run_dir_state(entry)
        if state is None:
            raise UserError(f"{shown}: permission denied: nothing done")
        if not state:
            raise UserError(f"{shown} is not a run folder tinylab created (no {MARKER} marker with its id, "
                            "or a link): nothing done")
        return Run(entry)

    def remove(self, run: Run, force: bool = False) -> None:
        """Delete a run folder of this store; anything else (a link, a foreign folder) is refused."""
        self._run_at(run.dir)
        status = run.status()
        if status in LIVE and not force:
            raise UserError(f"run {run.id} is {status}: cancel it first or pass --force")
        try:
            shutil.rmtree(run.dir)
        except OSError as exc:
            raise UserError(f"cannot remove run {run.id} completely: {_why(exc)}") from None
