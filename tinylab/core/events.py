"""The events.jsonl schema shared by the trainer (writer) and every reader.

One JSON object per line, each with an "event" key:

start     config, device, device_name, device_memory_mb (a GPU's capacity), torch, triton, python, pid,
          params_total, param_tensors, model_flops_per_step, world_size, parallel, host, time
step      step, loss, step_ms, fwd_ms, bwd_ms, opt_ms (null when not separable, e.g. graph
          replay), samples_per_s, tokens_per_s, mem_alloc_mb, mem_peak_mb (null on CPU), warmup
summary   samples_per_s (median after warm-up), tokens_per_s, step_ms_median, step_ms_p10,
          step_ms_p90, fwd_ms_median, bwd_ms_median, opt_ms_median, peak_mem_mb,
          initial_loss, final_loss, params_trained, params_total, model_flops_per_step, mfu,
          steps, measured_steps, others_cpu_cores, spare_cpu_cores, others_gpu_share (from the
          load events); with several ranks also world_size, slowest_rank, comm_ms, comm_hidden
          (throughput is the whole run's, each step as long as its slowest rank)
rank      rank, local_rank, host, device, pid, steps, step_ms_median, step_ms_p90, fwd/bwd/opt
          medians, peak_mem_mb, weights (a digest), comm_ms, comm_hidden: one per rank, by rank 0
profile   tool, artifacts {name: path relative to the run dir}, kernel_table (path or null), note,
          steps (training steps the kernel table covers, when the tool says), passes (runs of the
          program by a counter-pass tool such as rocprof-compute), rank (a run of several ranks)
pass      pass, planned, tool, steps: a counter-pass tool started the program again (pass >= 1);
          passes after the first write their other events to events.pass<k>.jsonl
telemetry time, gpu_util_pct, mem_used_mb, power_w, sm_clock_mhz (any may be null), rank (each rank
          samples its own GPU in a run of several)
load      time, others_cores (CPU time processes outside the run used since the last sample, in
          cores' worth), cpus (the CPUs the run may use), gpu_others (processes outside the run
          using its GPU; null when no NVML/AMD SMI answers): twice a second, by the run's first rank
error     type, message, traceback, rank (any rank of a run of several may write one)
exit      returncode, signal, note (written by the supervisor after the trainer ends)

Readers must tolerate a partly written last line and corrupt records: they are skipped and
counted, never fatal. A record that parses but breaks FIELD_TYPES (a hand edit, a damaged line
that is still JSON) is corrupt too, so readers can compute with those fields without guarding.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tinylab.core.safeio import FULL_DISK, UnsafeFile, loads_json, open_append, open_regular, release_space

EVENTS_FILE = "events.jsonl"
KINDS = ("start", "step", "summary", "rank", "profile", "pass", "telemetry", "load", "error", "exit")

_NUM = (int, float, type(None))
_STR = (str, type(None))


# ----------------------------------------------------------------------------- the summary, declared once
def _metric(label: str, unit: str, fmt: str, description: str, *, direction: int = 0, check: str | None = None,
            shown: bool = True, timed: bool = False) -> Any:
    """A summary field: how people read it (label, unit, format), whether higher is better (+1) or
    lower (-1) or neither (0: not compared A/B), the name exercise checks read it by, and whether it
    is computed from step times (`timed`: an A/B difference in it is judged against the runs'
    step-time spread)."""
    return field(default=None, metadata={"label": label, "unit": unit, "fmt": fmt, "description": description,
                                         "direction": direction, "check": check, "shown": shown, "timed": timed})


# ----------------------------------------------------------------------------- a busy machine
#: Step times spread by more than this (half the p10-p90 interval over the median) say the machine
#: was busy: quiet machines measured (docs/performance.md, "A busy machine") stay well inside it,
#: while the first tour on a shared 2-core machine ran at p10 323 ms and p90 1,701 ms (+-82 %).
BUSY_SPREAD = 0.35
#: Other processes took more than the CPUs the run left free plus this many cores: its threads had
#: to share cores. Half a core is far above what the lab's own polling or a quiet desktop uses.
BUSY_CORES = 0.5
#: Another process computed on the run's GPU in at least this share of the load samples: the GPU
#: time-slices between them, so the run's kernels waited.
BUSY_GPU_SHARE = 0.25


@dataclass(frozen=True)
class Summary:
    """The `summary` event: medians after warm-up and the run's totals.

    This dataclass is the one declaration of the summary's fields: the trainer writes it, and the
    event schema (FIELD_TYPES), `show`, `compare`, `report`, the exercise checks and the lab's Run
    screen read their fields, labels and formats from SUMMARY_FIELDS.
    """

    samples_per_s: float | None = _metric("samples/s", "samples/s", ",.1f", "training throughput, median after warm-up",
                                          direction=+1, check="samples_per_s", timed=True)
    tokens_per_s: float | None = _metric("tokens/s", "tokens/s", ",.0f", "tokens per second, median after warm-up",
                                         direction=+1, check="tokens_per_s", timed=True)
    step_ms_median: float | None = _metric("step median", "ms", ".2f", "median step time (ms)", direction=-1,
                                           check="step_ms", timed=True)
    step_ms_p10: float | None = _metric("step p10", "ms", ".2f", "10th percentile step time (ms)", check="step_ms_p10",
                                        timed=True)
    step_ms_p90: float | None = _metric("step p90", "ms", ".2f", "90th percentile step time (ms)", direction=-1,
                                        check="step_ms_p90", timed=True)
    fwd_ms_median: float | None = _metric("forward", "ms", ".2f", "median forward time (ms)", direction=-1,
                                          check="fwd_ms", timed=True)
    bwd_ms_median: float | None = _metric("backward", "ms", ".2f", "median backward time (ms)", direction=-1,
                                          check="bwd_ms", timed=True)
    opt_ms_median: float | None = _metric("optimizer", "ms", ".2f", "median optimizer time (ms)", direction=-1,
                                          check="opt_ms", timed=True)
    peak_mem_mb: float | None = _metric("peak memory", "MB", ",.1f", "peak device memory allocated (MiB; GPU runs only)",
                                        direction=-1, check="peak_mem_mb")
    initial_loss: float | None = _metric("initial loss", "", ".4f", "loss of the first step", check="initial_loss")
    final_loss: float | None = _metric("final loss", "", ".4f", "loss of the last step", direction=-1,
                                       check="final_loss")
    params_trained: int | None = _metric("trained tensors", "", "d", "parameter tensors that changed during training",
                                         check="params_trained")
    params_total: int | None = _metric("parameter tensors", "", "d", "parameter tensors in the model",
                                       check="params_total")
    model_flops_per_step: float | None = _metric("model FLOPs a step", "FLOP", ".3g",
                                                 "analytic training FLOPs of one step", check="model_flops_per_step",
                                                 shown=False)
    mfu: float | None = _metric("MFU", "fraction", ".1%", "model FLOPs utilization, 0..1 (known GPUs only)",
                                direction=+1, check="mfu", timed=True)
    steps: int | None = _metric("steps", "", "d", "steps run", check="steps", shown=False)
    measured_steps: int | None = _metric("measured steps", "", "d", "steps after warm-up", check="measured_steps",
                                         shown=False)
    # a run of several ranks (shown with the ranks' table, not in a single process's summary)
    world_size: int | None = _metric("ranks", "", "d", "processes that trained together (None: one)",
                                     check="world_size", shown=False)
    slowest_rank: int | None = _metric("slowest rank", "", "d",
                                       "the rank with the longest median forward (its own work; the others wait for it)",
                                       check="slowest_rank", shown=False)
    comm_ms: float | None = _metric("collectives", "ms", ".2f", "time in collectives a step, mean over ranks "
                                    "(from the PyTorch profiler's trace)", direction=-1, check="comm_ms", shown=False)
    comm_hidden: float | None = _metric("hidden comm", "fraction", ".0%", "share of the collectives' time that ran "
                                        "under compute", direction=+1, check="comm_hidden", shown=False)
    # the machine's load by other processes while the run trained (tinylab.profilers.telemetry.LoadSampler)
    others_cpu_cores: float | None = _metric("others' CPU", "cores", ".1f", "CPU time other processes used during "
                                             "the run, in cores' worth (the mean of its load samples)")
    spare_cpu_cores: float | None = _metric("spare CPUs", "cores", ".0f", "CPUs the run may use that its own threads "
                                            "left free", shown=False)
    others_gpu_share: float | None = _metric("GPU shared", "fraction", ".0%", "share of the load samples in which "
                                             "another process used the run's GPU")

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "Summary":
        return cls(**{f.key: number(event.get(f.key)) for f in SUMMARY_FIELDS})

    def get(self, key: str) -> float | int | None:
        return getattr(self, key)

    def text(self, key: str) -> str:
        """One field as people read it ("-" when not measured)."""
        value = self.get(key)
        return "-" if value is None else format(value, FIELD_BY_KEY[key].fmt)

    @property
    def spread(self) -> float | None:
        """The step-to-step spread: half the p10-p90 interval over the median (0.1 = +-10 %)."""
        if not self.step_ms_median or self.step_ms_p10 is None or self.step_ms_p90 is None:
            return None
        return (self.step_ms_p90 - self.step_ms_p10) / (2 * self.step_ms_median)

    def busy(self, profiled: bool = False) -> str | None:
        """Why the machine was too busy for this run's timings to measure its code, or None.

        Three signs, thresholds in BUSY_*: other processes wanted more CPU than the run left
        free, another process used its GPU, or its step times spread further than a quiet
        machine's do. A profiled run's spread is left out: the profiler's own steps widen it.
        """
        reasons = []
        cores, spare = self.others_cpu_cores, self.spare_cpu_cores
        if cores is not None and spare is not None and cores > spare + BUSY_CORES:
            reasons.append(f"other processes used {cores:.1f} CPU cores, {spare:.0f} were spare")
        if self.others_gpu_share is not None and self.others_gpu_share >= BUSY_GPU_SHARE:
            reasons.append(f"another process used the GPU in {self.others_gpu_share:.0%} of the samples")
        if not profiled and self.spread is not None and self.spread > BUSY_SPREAD:
            reasons.append(f"step times spread ±{self.spread:.0%} (p10 {self.step_ms_p10:,.1f} ms, "
                           f"p90 {self.step_ms_p90:,.1f} ms)")
        return "; ".join(reasons) or None

    @property
    def partly_trained(self) -> bool:
        """Fewer parameter tensors changed than the model has: a fast step for the wrong reason."""
        return self.params_trained is not None and bool(self.params_total) and self.params_trained < self.params_total

    def lines(self, profiled: bool = False) -> list[str]:
        """The trainer's closing printout (`profiled`: see busy)."""
        def fmt(key: str, spec: str) -> str:
            value = self.get(key)
            return "n/a" if value is None else format(value, spec)

        return [
            "summary (medians after warm-up)",
            f"  samples/s      {fmt('samples_per_s', ',.1f')}   tokens/s {fmt('tokens_per_s', ',.0f')}",
            f"  step ms        {fmt('step_ms_median', '.2f')}  (p10 {fmt('step_ms_p10', '.2f')}, "
            f"p90 {fmt('step_ms_p90', '.2f')})",
            f"  fwd/bwd/opt ms {fmt('fwd_ms_median', '.2f')} / {fmt('bwd_ms_median', '.2f')} / "
            f"{fmt('opt_ms_median', '.2f')}",
            f"  peak memory    {fmt('peak_mem_mb', ',.1f')} MB" if self.peak_mem_mb is not None
            else "  peak memory    n/a (CPU run: device memory is tracked on GPUs only)",
            f"  loss           {fmt('initial_loss', '.4f')} -> {fmt('final_loss', '.4f')}",
            f"  trained        {self.params_trained}/{self.params_total} parameter tensors",
            f"  MFU            {100 * self.mfu:.1f}%" if self.mfu is not None
            else "  MFU            n/a (no peak rate known for this device and precision)",
            *([f"  ranks          {self.world_size} (samples/s of all of them; slowest rank {self.slowest_rank})"]
              if self.world_size else []),
            *([f"  collectives    {fmt('comm_ms', '.2f')} ms a step, {fmt('comm_hidden', '.0%')} hidden under compute"]
              if self.comm_ms is not None else []),
            *([f"  machine busy   {busy}: these timings measure the contention, not the code"]
              if (busy := self.busy(profiled)) else []),
        ]


@dataclass(frozen=True)
class SummaryField:
    key: str
    label: str
    unit: str
    fmt: str
    description: str
    direction: int
    check: str | None
    shown: bool
    timed: bool


SUMMARY_FIELDS: tuple[SummaryField, ...] = tuple(SummaryField(f.name, **f.metadata) for f in fields(Summary))
FIELD_BY_KEY: dict[str, SummaryField] = {f.key: f for f in SUMMARY_FIELDS}


# ----------------------------------------------------------------------------- the other events, typed
@dataclass(frozen=True)
class StepEvent:
    step: int
    loss: float | None
    step_ms: float | None = None
    fwd_ms: float | None = None  # None when not separable (a graph replay)
    bwd_ms: float | None = None
    opt_ms: float | None = None
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    mem_alloc_mb: float | None = None  # None on CPU
    mem_peak_mb: float | None = None
    warmup: bool = False
    time: float | None = None

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "StepEvent":
        return _typed(cls, event)


@dataclass(frozen=True)
class StartEvent:
    config: dict[str, Any] = field(default_factory=dict)  # the config as it ran (toggles resolved)
    device: str | None = None
    device_name: str | None = None
    device_memory_mb: float | None = None  # the GPU's capacity (None on a CPU)
    torch: str | None = None
    triton: str | None = None
    python: str | None = None
    pid: int | None = None
    params_total: int | None = None
    param_elements: int | None = None
    model_flops_per_step: float | None = None
    world_size: int | None = None
    parallel: str | None = None
    host: str | None = None
    time: float | None = None

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "StartEvent":
        return _typed(cls, event)


@dataclass(frozen=True)
class ProfileEvent:
    tool: str | None = None
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> path relative to the run dir
    kernel_table: str | None = None
    format: str | None = None
    note: str | None = None
    steps: int | None = None  # training steps the kernel table covers (None: not known)
    passes: int | None = None  # runs of the program by a counter-pass tool
    rank: int | None = None  # whose output this is, in a run of several ranks

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "ProfileEvent":
        return _typed(cls, event)


@dataclass(frozen=True)
class PassEvent:
    """A counter-pass profiler (rocprof-compute, rocprofv3 -i) started the program again."""

    number: int
    planned: int | None = None  # runs the tool will make, when known
    tool: str | None = None
    steps: int | None = None  # steps this pass trains
    time: float | None = None  # when this pass started

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "PassEvent":
        return _typed(cls, {**event, "number": event.get("pass")})

    @property
    def label(self) -> str:
        return f"counter pass {self.number}" + (f" of {self.planned}" if self.planned else "")


@dataclass(frozen=True)
class TelemetryEvent:
    time: float | None = None
    gpu_util_pct: float | None = None
    mem_used_mb: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    rank: int | None = None  # whose GPU, in a run of several ranks

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "TelemetryEvent":
        return _typed(cls, event)


@dataclass(frozen=True)
class RankEvent:
    """One rank of a run of several, as it reported to rank 0 at the end."""

    rank: int
    local_rank: int | None = None
    host: str | None = None
    device: str | None = None
    pid: int | None = None
    steps: int | None = None
    step_ms_median: float | None = None
    step_ms_p90: float | None = None
    fwd_ms_median: float | None = None
    bwd_ms_median: float | None = None
    opt_ms_median: float | None = None
    peak_mem_mb: float | None = None
    weights: str | None = None  # a digest of its weights at the end: equal on every rank that stayed in sync
    comm_ms: float | None = None
    comm_hidden: float | None = None

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "RankEvent":
        return _typed(cls, event)


@dataclass(frozen=True)
class ErrorEvent:
    type: str | None = None
    message: str | None = None
    traceback: str | None = None
    rank: int | None = None  # which rank wrote it, in a run of several
    time: float | None = None

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "ErrorEvent":
        return _typed(cls, event)


@dataclass(frozen=True)
class ExitEvent:
    returncode: int
    signal: str | None = None
    note: str | None = None  # what the supervisor saw besides the code (torchrun killed while its ranks trained on)

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> "ExitEvent":
        return _typed(cls, event)


def number(value: Any) -> float | int | None:
    """A finite number from an event field, or None (a corrupt record must not break a view)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _typed(cls: Any, event: dict[str, Any]) -> Any:
    """cls from an event's known fields, each of its declared type or left at the default.

    Only well-typed records reach readers (parse_lines drops the others); this guards the fields
    FIELD_TYPES does not cover, so a hand-edited record never puts a list where a number goes.
    """
    values = {}
    for f in fields(cls):
        if f.name not in event:
            continue
        value = event[f.name]
        if _fits(value, str(f.type)):
            values[f.name] = value
    return cls(**values)


def _fits(value: Any, annotation: str) -> bool:
    if value is None:
        return "None" in annotation
    if isinstance(value, bool):
        return annotation.startswith("bool")
    if isinstance(value, (int, float)):
        return (annotation.startswith("float") or (annotation.startswith("int") and isinstance(value, int))) \
            and math.isfinite(value)
    if isinstance(value, str):
        return annotation.startswith("str")
    if isinstance(value, dict):
        return annotation.startswith("dict")
    return False


#: kind -> field -> (allowed types, required): the fields readers format or compute with.
FIELD_TYPES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "start": {"config": ((dict,), False), "pid": ((int,), False)},
    "step": {
        "step": ((int,), True),
        "loss": (_NUM, True),
        **{k: (_NUM, False) for k in ("step_ms", "fwd_ms", "bwd_ms", "opt_ms", "samples_per_s",
                                       "tokens_per_s", "mem_alloc_mb", "mem_peak_mb")},
    },
    "summary": {f.key: (_NUM, False) for f in SUMMARY_FIELDS},
    "rank": {"rank": ((int,), True), **{k: (_NUM, False) for k in ("step_ms_median", "step_ms_p90", "fwd_ms_median",
                                                                    "bwd_ms_median", "opt_ms_median", "peak_mem_mb")}},
    "profile": {"artifacts": ((dict, type(None)), False), "kernel_table": (_STR, False)},
    "pass": {"pass": ((int,), True), "planned": ((int, type(None)), False)},
    "load": {"others_cores": (_NUM, False), "cpus": ((int,), False), "gpu_others": ((int, type(None)), False)},
    "error": {"type": (_STR, False), "message": (_STR, False), "traceback": (_STR, False),
              "rank": ((int, type(None)), False)},
    "exit": {"returncode": ((int,), True), "signal": (_STR, False)},
}


#: The events a run writes last: on a full disk they may use the run folder's reserve.
LAST_WORDS = ("error", "exit")


class EventWriter:
    """Appends events with one write() each, so concurrent writers never interleave a line.

    On a full disk an ordinary event raises (the run must stop); its last words (an error, the
    exit) release the run folder's reserve and are written after a newline that ends whatever
    fragment the failed write left, so the run still says why it ended.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = open_append(self.path)  # never through a planted link; read: see _after_fragment

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        record = {"event": kind, "time": time.time(), **fields}
        line = (json.dumps(record, default=_jsonable, allow_nan=False) + "\n").encode("utf-8")
        if kind not in LAST_WORDS:
            self._write(line)
            return record
        try:
            self._write(self._after_fragment(line))
        except OSError as exc:
            if exc.errno not in FULL_DISK or not release_space(self.path.parent):
                raise
            self._write(self._after_fragment(line))
        return record

    def _write(self, data: bytes) -> None:
        while data:
            data = data[os.write(self._fd, data):]

    def _after_fragment(self, line: bytes) -> bytes:
        """The line, after a newline when a failed write left the file's last line unfinished."""
        size = os.fstat(self._fd).st_size
        return line if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n" else b"\n" + line

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def clean_float(value: float | None) -> float | None:
    """NaN/inf are not JSON: store them as null."""
    if value is None:
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None


#: Up to this size events.jsonl is read whole; past it readers that need only the run's start and
#: end (listing, show, compare, status) read its head and tail: a 400 MB log lists in milliseconds.
FULL_READ_LIMIT = 8 << 20
HEAD_BYTES = 256 << 10
TAIL_BYTES = 4 << 20


@dataclass
class EventLog:
    """Parsed events plus what could not be parsed (and what was not read, for a huge log)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    corrupt_lines: list[int] = field(default_factory=list)
    partial_tail: bool = False
    offset: int = 0
    skipped_bytes: int = 0  # the middle of a huge log, not read
    corrupt_unnumbered: int = 0  # corrupt lines in the tail of a huge log (their numbers are unknown)
    problem: str | None = None  # why the file could not be read at all (a link, a FIFO ...)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    def last(self, kind: str) -> dict[str, Any] | None:
        for e in reversed(self.events):
            if e.get("event") == kind:
                return e
        return None


def parse_lines(data: bytes, first_line_no: int = 1) -> tuple[list[dict[str, Any]], list[int], int]:
    """Parse complete lines of `data`; return events, corrupt line numbers, bytes consumed.

    A trailing fragment without a newline is left unconsumed (it may still be being written).
    """
    events: list[dict[str, Any]] = []
    corrupt: list[int] = []
    end = data.rfind(b"\n") + 1
    for i, raw in enumerate(data[:end].splitlines()):
        if not raw.strip():
            continue
        try:
            obj = loads_json(raw)  # depth and integer size bounded: 5,000 brackets are a corrupt line
        except (ValueError, UnicodeDecodeError):
            corrupt.append(first_line_no + i)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event"), str) and _well_typed(obj):
            events.append(obj)
        else:
            corrupt.append(first_line_no + i)
    return events, corrupt, end


def _well_typed(record: dict[str, Any]) -> bool:
    if not isinstance(record.get("time", 0.0), (int, float)):  # every writer stamps it
        return False
    for name, (types, required) in FIELD_TYPES.get(record["event"], {}).items():
        if name in record:
            value = record[name]  # true/false is no count: `"returncode": false` would break ExitEvent
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                return False
        elif required:
            return False
    return True


def read_events(path: str | os.PathLike[str]) -> EventLog:
    """An events file: whole up to FULL_READ_LIMIT, else its head and tail; a missing file is an
    empty log, and one that is a link, a FIFO or a device an empty log with its `problem`."""
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        return EventLog()
    except (UnsafeFile, OSError) as exc:
        return EventLog(problem=str(exc) if isinstance(exc, UnsafeFile) else f"{path}: {exc.strerror or exc}")
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= FULL_READ_LIMIT:
            data = fh.read(FULL_READ_LIMIT)
            events, corrupt, end = parse_lines(data)
            return EventLog(events=events, corrupt_lines=corrupt, partial_tail=end < len(data), offset=end)
        head = fh.read(HEAD_BYTES)
        head = head[: head.rfind(b"\n") + 1]
        fh.seek(size - TAIL_BYTES)
        tail = fh.read(TAIL_BYTES)
    cut = tail.find(b"\n") + 1  # the tail starts inside a line: drop that fragment
    head_events, head_corrupt, _ = parse_lines(head)
    tail_events, tail_corrupt, end = parse_lines(tail[cut:])
    return EventLog(events=head_events + tail_events, corrupt_lines=head_corrupt, partial_tail=end < len(tail) - cut,
                    offset=size - TAIL_BYTES + cut + end, skipped_bytes=size - TAIL_BYTES + cut - len(head),
                    corrupt_unnumbered=len(tail_corrupt))


def sample_steps(path: str | os.PathLike[str], max_points: int = 2000) -> list[StepEvent]:
    """Step events of a whole run, every k-th one past `max_points` (charts need no more), in
    bounded memory: the file is read in chunks and only the kept lines are parsed. The first and
    the last step are always kept."""
    marker = b'"event": "step"'  # how EventWriter writes a step line (its first key)
    try:
        fh = open_regular(path)
    except (FileNotFoundError, UnsafeFile, OSError):
        return []
    with fh:
        total = sum(chunk.count(marker) for chunk in iter(lambda: fh.read(8 << 20), b""))
        stride = max(1, -(-total // max_points))
        fh.seek(0)
        steps: list[StepEvent] = []
        index, rest = 0, b""
        for chunk in iter(lambda: fh.read(8 << 20), b""):
            *complete, rest = (rest + chunk).split(b"\n")
            for raw in complete:
                if marker not in raw:
                    continue
                if index % stride == 0 or index == total - 1:
                    steps += _step(raw)
                index += 1
    return steps


def _step(raw: bytes) -> list[StepEvent]:
    events, _, _ = parse_lines(raw + b"\n")
    return [StepEvent.from_event(e) for e in events if e.get("event") == "step"]


class EventTail:
    """Incremental reader: each poll() returns the events appended since the last one.

    A log already past FULL_READ_LIMIT on the first poll is read from its head (the start event)
    and its last TAIL_BYTES, like read_events: a live view needs the recent steps, not every one.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.offset = 0
        self.line_no = 1
        self.corrupt_lines: list[int] = []

    def poll(self) -> list[dict[str, Any]]:
        try:
            with open_regular(self.path) as fh:
                size = os.fstat(fh.fileno()).st_size
                head: list[dict[str, Any]] = []
                if self.offset == 0 and size > FULL_READ_LIMIT:
                    data = fh.read(HEAD_BYTES)
                    head = parse_lines(data[: data.rfind(b"\n") + 1])[0]
                    fh.seek(size - TAIL_BYTES)
                    skip = fh.readline()
                    self.offset, self.line_no = size - TAIL_BYTES + len(skip), 0  # line numbers unknown from here
                fh.seek(self.offset)
                data = fh.read(max(0, size - self.offset))
        except (FileNotFoundError, UnsafeFile):
            return []
        events, corrupt, end = parse_lines(data, self.line_no)
        self.offset += end
        if self.line_no:
            self.line_no += data[:end].count(b"\n")
            self.corrupt_lines.extend(corrupt)
        return head + events

