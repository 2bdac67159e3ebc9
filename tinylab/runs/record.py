"""RunRecord: everything known about one run, parsed once from its folder into typed fields.

Every reader (the CLI's runs/show/compare/report, the lab's screens, the exercise checks) reads
runs through this record instead of event dicts, so a field is named and typed in one place
(tinylab/core/events.py declares the events; this module assembles them with the run's files).
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from tinylab.config import PROFILER_SETTINGS, RunConfig
from tinylab.core.eventlog import EventLog
from tinylab.core.events import (
    ErrorEvent,
    ExitEvent,
    PassEvent,
    ProfileEvent,
    RankEvent,
    StartEvent,
    StepEvent,
    Summary,
)
from tinylab.runs.slurm import Job

#: The fusion toggles key_config names, in the order it names them, by their short names.
_KEY_TOGGLES = {"qkv_fusion": "qkv", "sdpa": "sdpa", "swiglu_fusion": "swiglu", "torch_compile": "compile",
                "cuda_graph": "graph"}


#: The ids the run store makes (tinylab.runs.store.new_run_id); a folder of this shape counts as a run
#: of an older tinylab (see store.is_run_dir).
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4}")


def short_id(run_id: str) -> str:
    """The form the lab and `tinylab runs` show: "20261126-030223-88a3" -> "1126-0302-88a3" (month-day,
    hour-minute and the random tail). Every command accepts it (RunStore.resolve); other ids stay whole."""
    if RUN_ID.fullmatch(run_id):
        return f"{run_id[4:8]}-{run_id[9:13]}-{run_id[16:]}"
    return run_id


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Text from a run's files as a terminal may show it: control characters (escape sequences,
    newlines that would split a table row) and bidirectional overrides (which make a terminal show
    text in another order than it is stored) become '?'."""
    return _CONTROL.sub("?", text)


def printable_lines(text: str) -> str:
    """Text of several lines (a table, a chart) as a terminal may show it: each line printable."""
    return "\n".join(printable(line) for line in text.split("\n"))


def key_config(cfg: RunConfig | None) -> str:
    """The few settings that tell two runs apart, in one short string ("?" for a damaged config).

    A profiler or a fault comes right after the sizes: a table cut at 80 columns still shows
    that a run was profiled (it measures something else than a clean one)."""
    if cfg is None:
        return "?"
    parts = [f"b{cfg.batch_size} s{cfg.seq_len} h{cfg.hidden_dim} l{cfg.num_layers}"]
    if cfg.precision != "fp32":
        parts.append(cfg.precision)
    if cfg.profilers:
        parts.append("prof=" + ",".join(cfg.profilers))
    if cfg.fault:
        parts.append(f"fault={cfg.fault}")
    on = [short for k, short in _KEY_TOGGLES.items() if getattr(cfg, k)]
    if cfg.spec.peer and on:  # the peer's runs differ by which of its fusions are on
        parts.append("+".join(on))
    elif cfg.cuda_graph:
        parts.append("graph")
    if cfg.recompute_ffn:
        parts.append("recompute")
    if cfg.parallel:
        parts.append(f"{cfg.parallel}x{cfg.world_size}")
    return printable(" ".join(parts))


@dataclass(frozen=True)
class CancelRecord:
    time: float | None = None
    by_pid: int | None = None


#: How the label of a run an exercise step started begins ("exercise v1-baseline step 1").
EXERCISE_LABEL = "exercise "
#: What a learner sees instead of a config value an exercise step hides (RunRecord.masked).
HIDDEN = "(hidden)"


def mask_config(cfg: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    """`cfg` with the values of `fields` replaced by HIDDEN (a fault still reads as a fault: the
    placeholder is set, so a run with a hidden fault is never taken for a clean one)."""
    return {k: (HIDDEN if k in fields and v not in (None, "", []) else v) for k, v in cfg.items()}


@dataclass(frozen=True)
class RunRecord:
    id: str
    dir: Path
    status: str
    started: float | None  # launch time (the local clock can show it), else the start event's
    config: dict[str, Any]  # config.json as stored ({} when missing or unreadable)
    start: StartEvent | None
    pid: int | None
    summary: Summary | None
    error: ErrorEvent | None
    exit: ExitEvent | None
    cancel: CancelRecord | None
    steps_done: int
    last_step: StepEvent | None
    profiles: tuple[ProfileEvent, ...] = ()
    corrupt_lines: tuple[int, ...] = field(default=())
    #: when the program ended: its exit record (after every counter pass), else its summary or error
    #: (or when it was cancelled)
    ended: float | None = None
    problem: str | None = None  # why the record is damaged (config.json or events.jsonl unreadable or invalid)
    skipped_bytes: int = 0  # the middle of a huge events.jsonl, not read (steps_done counts from the last step)
    corrupt_unnumbered: int = 0
    counter_pass: PassEvent | None = None  # the latest counter pass, when a profiler re-ran the program
    ranks: tuple[RankEvent, ...] = ()  # a run of several ranks: each rank's figures, by rank
    job: Job | None = None  # the Slurm job of a run `tinylab submit` started, with Slurm's state when asked
    hidden: frozenset[str] = frozenset()  # config fields masked for the learner (masked)

    @classmethod
    def from_files(cls, run_dir: Path, status: str, log: EventLog, config: dict[str, Any],
                   process: dict[str, Any] | None, cancel: dict[str, Any] | None,
                   problem: str | None = None, job: Job | None = None) -> "RunRecord":
        start = log.last("start")
        summary, exit_ev, last = log.last("summary"), log.last("exit"), log.last("step")
        error = root_cause(log.of("error"))
        pid = (process or {}).get("pid")
        slurm_failure = job.failure if job is not None and status == "failed" else None
        return cls(
            id=run_dir.name,
            dir=run_dir,
            status=status,
            started=_clock_time((process or {}).get("launched_at")) or _clock_time(job.submitted if job else None)
            or _clock_time((start or {}).get("time")),
            config=config,
            start=StartEvent.from_event(start) if start else None,
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            summary=Summary.from_event(summary) if summary else None,
            # Slurm ended the job before the supervisor could record the end: Slurm's reason is the root
            error=ErrorEvent(type="SlurmJob", message=slurm_failure) if slurm_failure
            else ErrorEvent.from_event(error) if error else None,
            exit=ExitEvent.from_event(exit_ev) if exit_ev else None,
            cancel=CancelRecord(**{k: v for k, v in cancel.items() if k in ("time", "by_pid")}) if cancel else None,
            # a huge log is read at its head and tail: steps are numbered from 0, so count from the last
            steps_done=(last["step"] + 1 if last else 0) if log.skipped_bytes else len(log.of("step")),
            last_step=StepEvent.from_event(last) if last else None,
            profiles=tuple(ProfileEvent.from_event(p) for p in log.of("profile")),
            corrupt_lines=tuple(log.corrupt_lines),
            ended=next((float(e["time"]) for e in (exit_ev, summary, error) if e and _is_number(e.get("time"))),
                       _clock_time((cancel or {}).get("time"))),
            problem=printable(problem) if problem else None,
            skipped_bytes=log.skipped_bytes,
            corrupt_unnumbered=log.corrupt_unnumbered,
            counter_pass=PassEvent.from_event(p) if (p := log.last("pass")) else None,
            ranks=tuple(sorted((RankEvent.from_event(r) for r in log.of("rank")), key=lambda r: r.rank)),
            job=job,
        )

    def masked(self, fields: frozenset[str]) -> "RunRecord":
        """This record as a learner may see it while an exercise step hides `fields` of its run
        (a fault the learner must find): in config.json's values and the start event's alike, so
        every view made from the record (show, runs, the lab, compare, report) masks them."""
        if not fields:
            return self
        start = replace(self.start, config=mask_config(self.start.config, fields)) if self.start else None
        out = replace(self, config=mask_config(self.config, fields), start=start, hidden=self.hidden | fields)
        # the typed views too, from the real config: "(hidden)" is no valid setting, and a config that
        # fails validation would read as damaged (no version, no key config)
        for name in ("settings", "ran_settings"):
            typed = getattr(self, name)
            out.__dict__[name] = None if typed is None else replace(typed, **{
                k: HIDDEN for k in fields if getattr(typed, k, None) not in (None, "", [])})
        return out

    # ------------------------------------------------------------------ derived
    @cached_property
    def settings(self) -> RunConfig | None:
        """The typed view of config.json (what was launched), None when it is damaged: readers use
        this, never the raw dict (`config`, kept as read for `show` and the problem it had)."""
        return RunConfig.read(self.config)

    @cached_property
    def ran_settings(self) -> RunConfig | None:
        """The typed view of `ran_config`: what really ran."""
        return RunConfig.read(self.ran_config)

    @property
    def shown_config(self) -> dict[str, Any]:
        """config.json as `show` and the report list it: without the settings of profilers the run
        did not use (they cannot have changed what it recorded)."""
        used = self.config.get("profilers")
        used = used if isinstance(used, list) else []
        return {k: v for k, v in self.config.items() if k not in PROFILER_SETTINGS or PROFILER_SETTINGS[k] in used}

    @property
    def version(self) -> str | None:
        return self.settings.version if self.settings else None

    @property
    def label(self) -> str:
        return printable(self.settings.label) if self.settings else ""

    @property
    def from_exercise(self) -> bool:
        """Started by an exercise step (its label says so, see tinylab.exercises)."""
        return self.label.startswith(EXERCISE_LABEL)

    @property
    def device(self) -> str | None:
        return self.start.device if self.start else None

    @property
    def device_name(self) -> str | None:
        return self.start.device_name if self.start else None

    @property
    def ran_config(self) -> dict[str, Any]:
        """config.json overlaid with the start event's config, which records what really ran
        (e.g. v4's CUDA graph resolves to off on a CPU), and the device it ran on (not "auto")."""
        cfg = {**self.config, **(self.start.config if self.start else {})}
        if self.device:
            cfg["device"] = self.device
        return cfg

    @property
    def key_config(self) -> str:
        return key_config(self.settings)

    @property
    def world_size(self) -> int:
        """Ranks that trained together (1: one process)."""
        return self.settings.world_size if self.settings else 1

    @property
    def ranks_in_sync(self) -> bool | None:
        """Whether every rank ended with the same weights (None: not a run of several, or not reported)."""
        digests = {r.weights for r in self.ranks if r.weights}
        return len(digests) == 1 if len(self.ranks) > 1 and digests else None

    @property
    def busy(self) -> str | None:
        """Why the machine was too busy for this run's timings to be its code's (Summary.busy), or None."""
        profiled = bool(self.settings and self.settings.profilers)  # a profiler's own steps widen the spread
        return self.summary.busy(profiled) if self.summary else None

    @property
    def has_kernel_table(self) -> bool:
        return any(p.kernel_table for p in self.profiles)

    def row(self) -> dict[str, Any]:
        """One line of `tinylab runs` (and its --json), and of the lab's run tables."""
        s = self.summary
        return {
            "id": self.id,
            "short_id": short_id(self.id),
            "started": self.started,
            "status": self.status,
            "version": self.version,
            "config": self.key_config,
            "label": self.label,
            "samples_per_s": s.samples_per_s if s else None,
            "peak_mem_mb": s.peak_mem_mb if s else None,
            "final_loss": s.final_loss if s else None,
            "device": self.device,
            "problem": self.problem,
            "busy": self.busy,
        }

    def to_json(self) -> dict[str, Any]:
        """`tinylab show --json`: the record with its events as they were written."""
        def plain(value: Any) -> Any:
            return asdict(value) if value is not None else None

        return {
            "id": self.id,
            "dir": str(self.dir),
            "status": self.status,
            "started": self.started,
            "version": self.version,
            "label": self.label,
            "config": self.config,
            "start": plain(self.start),
            "device": self.device,
            "device_name": self.device_name,
            "pid": self.pid,
            "summary": plain(self.summary),
            "busy": self.busy,
            "error": plain(self.error),
            "exit": plain(self.exit),
            "cancel": plain(self.cancel),
            "steps_done": self.steps_done,
            "last_step": plain(self.last_step),
            "profiles": [asdict(p) for p in self.profiles],
            "corrupt_lines": list(self.corrupt_lines),
            "problem": self.problem,
            "counter_pass": plain(self.counter_pass),
            "ranks": [asdict(r) for r in self.ranks],
            "ranks_in_sync": self.ranks_in_sync,
            "job": plain(self.job),
            "hidden": sorted(self.hidden),
        }


def root_cause(errors: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The error that explains a run's end. In a run of several ranks: the rank torchrun saw fail
    first when it left no error of its own (`root`), else the first error that is not a rank
    stopped by a signal (torchrun stops every other rank when one fails); else the last."""
    roots = [e for e in errors if e.get("root") is True]
    own = [e for e in errors if e.get("type") != "KeyboardInterrupt"]
    return (roots or own or errors[-1:] or [None])[0]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _clock_time(value: Any) -> float | None:
    """A timestamp the local clock can show, or None: a damaged record must not break a listing."""
    if not _is_number(value):
        return None
    try:
        time.localtime(value)
    except (OverflowError, OSError, ValueError):
        return None
    return float(value)
