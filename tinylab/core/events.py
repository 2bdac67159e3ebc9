"""The events.jsonl schema shared by the trainer and the supervisor (writers) and every reader.

One JSON object a line: its kind (`event`), when it was written (`time`), and the fields of its kind.
The dataclasses below are the schema, one for each kind (EVENT_TYPES): FIELD_TYPES, which readers
check each record against, the decoding of a record into its dataclass (`from_event`), the line a
writer makes of one (`encode`) and docs/events.md (`schema_page`) are all made from them. A new
field is declared once, on its dataclass, and then regenerate docs/events.md.

Readers (tinylab/core/eventlog.py) must tolerate a partly written last line and corrupt records:
they are skipped and counted, never fatal. A record that parses but breaks FIELD_TYPES (a hand
edit, a damaged line that is still JSON) is corrupt too, so readers can compute with its fields
without guarding.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import MISSING, dataclass, field, fields
from types import UnionType
from typing import Any, ClassVar, get_args, get_origin, get_type_hints


def _field(description: str, default: Any = None, *, key: str | None = None, sparse: bool = False) -> Any:
    """An event field: `description` for docs/events.md; `default` MISSING when every record of its
    kind has it (one without it is corrupt), `dict` for an empty object; `key`, its name on disk
    where that is no Python name (`pass`); `sparse`: written only when it differs from its default,
    so a line of a run of one process names no rank."""
    metadata = {"description": description, "key": key, "sparse": sparse}
    if default is dict:
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


class Event:
    """What every event type shares: its kind, and how a record read from events.jsonl becomes one."""

    kind: ClassVar[str]

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Any:
        return decode(cls, event)


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
#: Step times spread by more than this (half the p10-p90 interval over the median) back up a busy
#: mark the load sampler gave, in its reason; they never mark a run alone: a run on an idle
#: machine was marked busy for +-35 % (issue 37), since a tiny step's allocator, caches and timer
#: spread it with no other process running. Quiet machines measured (docs/performance.md, "A busy
#: machine") stayed inside +-20 %, the first tour on a shared 2-core machine spread +-82 %.
BUSY_SPREAD = 0.35
#: Other processes took more than the CPUs the run left free plus this many cores: its threads had
#: to share cores. Half a core is far above what the lab's own polling or a quiet desktop uses
#: (0.02-0.10 on a quiet 2-core machine, 0.04-0.37 on quiet 16-core ones), and half the 1.0 that
#: two busy loops took beside a CPU run filling the 2-core machine.
BUSY_CORES = 0.5
#: The same for a run that left CPUs spare (a GPU run's one launching thread, a run of fewer
#: threads than CPUs): its few threads lose all the others take beyond the spare ones, so a
#: tenth of a core is a tenth of its one thread. On an H200 node (16 CPUs) 16 busy loops took
#: 15.4 cores beside a v1 GPU run that left 15 spare, and its step took 64 ms against 33 ms; on
#: the 2-core machine two loops took 1.12-1.31 cores beside a one-thread CPU run (1 spare) that
#: got 0.7-0.9 of its core. Quiet machines' others stay far below their spare CPUs (0.01 beside 15).
BUSY_CORES_BESIDE = 0.1
#: Another process computed on the run's GPU in at least this share of the load samples: the GPU
#: time-slices between them, so the run's kernels waited.
BUSY_GPU_SHARE = 0.25


@dataclass(frozen=True)
class Summary(Event):
    """The `summary` event: medians after warm-up and the run's totals.

    This dataclass is the one declaration of the summary's fields: the trainer writes it, and the
    event schema (FIELD_TYPES), `show`, `compare`, `report`, the exercise checks and the lab's Run
    screen read their fields, labels and formats from SUMMARY_FIELDS. In a run of several ranks the
    throughput is the whole run's, each step as long as its slowest rank.
    """

    kind: ClassVar[str] = "summary"

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
    energy_j_per_sample: float | None = _metric(
        "energy", "J/sample", ".3g", "GPU energy a trained sample: the power samples (once a second) integrated "
        "over the timed steps (trapezoids cut at the window's edges; a window with fewer than two samples takes "
        "the mean of the nearest ones over its length), over the samples those steps trained; the sum over ranks "
        "when every rank's GPU reported power, else rank 0's alone (null: no power readings, as on a CPU)",
        direction=-1, check="energy_j_per_sample", timed=True)
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

        Only what the load sampler measured marks a run (thresholds in BUSY_*): other processes
        wanted more CPU than the run left free, or another process used its GPU. A step-time
        spread wider than BUSY_SPREAD is named beside them, never alone: a quiet machine's tiny
        steps spread that far too. A run without load samples (an older run, telemetry off) is
        not busy: nothing measured says so. A profiled run's spread is left out: the profiler's
        own steps widen it.
        """
        reasons = []
        cores, spare = self.others_cpu_cores, self.spare_cpu_cores
        margin = BUSY_CORES_BESIDE if spare else BUSY_CORES
        if cores is not None and spare is not None and cores > spare + margin:
            reasons.append(f"other processes used {cores:.1f} CPU cores, {spare:.0f} were spare")
        if self.others_gpu_share is not None and self.others_gpu_share >= BUSY_GPU_SHARE:
            reasons.append(f"another process used the GPU in {self.others_gpu_share:.0%} of the samples")
        if reasons and not profiled and self.spread is not None and self.spread > BUSY_SPREAD:
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
            f"  energy         {fmt('energy_j_per_sample', '.3g')} J/sample" if self.energy_j_per_sample is not None
            else "  energy         not measured (no power readings: CPU run / no NVML or AMD SMI)",
            *([f"  ranks          {self.world_size} (samples/s of all of them; slowest rank {self.slowest_rank})"]
              if self.world_size else []),
            *([f"  collectives    {fmt('comm_ms', '.2f')} ms a step, {fmt('comm_hidden', '.0%')} hidden under compute"]
              if self.comm_ms is not None else []),
            *([f"  machine busy   {busy}: these timings measure the contention, not the code"]
              if (busy := self.busy(profiled)) else
              ["  machine load   not measured (no load samples): contention would go unnoticed"]
              if self.others_cpu_cores is None else []),
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


# ----------------------------------------------------------------------------- the other events
@dataclass(frozen=True)
class StartEvent(Event):
    """The run began training: what ran, where, with which software (rank 0 writes it once the
    model is built)."""

    kind: ClassVar[str] = "start"
    config: dict[str, Any] = _field("the config as it ran (toggles resolved)", dict)
    device: str | None = _field("the torch device (`cuda:0`, `cpu`)")
    device_name: str | None = _field("the GPU's name, or the CPU's")
    device_memory_mb: float | None = _field("the GPU's capacity in MiB (null on a CPU)")
    torch: str | None = _field("torch's version")
    triton: str | None = _field("Triton's version (null without Triton)")
    python: str | None = _field("Python's version")
    pid: int | None = _field("the trainer's process id")
    params_total: int | None = _field("parameter tensors in the model")
    param_elements: int | None = _field("parameters in the model (elements of all its tensors)")
    model_flops_per_step: float | None = _field("analytic training FLOPs of one step")
    world_size: int | None = _field("processes that train together")
    parallel: str | None = _field("how several ranks share the work (`ddp`, `fsdp`, `zero1`, `zero2`; null: one process)")
    host: str | None = _field("rank 0's host, in a run of several ranks")
    time: float | None = None


@dataclass(frozen=True)
class StepEvent(Event):
    """One training step, as rank 0 timed it (the other ranks' steps meet it in the summary)."""

    kind: ClassVar[str] = "step"
    step: int = _field("the step's number, from 0", MISSING)
    loss: float | None = _field("the step's loss (null when not finite)", MISSING)
    step_ms: float | None = _field("the step's time (ms)")
    fwd_ms: float | None = _field("its forward (ms; null when not separable, e.g. a graph replay)")
    bwd_ms: float | None = _field("its backward (ms; null when not separable)")
    opt_ms: float | None = _field("its optimizer step (ms; null when not separable)")
    samples_per_s: float | None = _field("samples a second at this step's time")
    tokens_per_s: float | None = _field("tokens a second at this step's time")
    mem_alloc_mb: float | None = _field("device memory the run holds after the step (MiB; null on a CPU)")
    mem_peak_mb: float | None = _field("the step's peak device memory (MiB; null on a CPU)")
    warmup: bool = _field("a warm-up step (left out of the summary's medians)", False)
    time: float | None = None


@dataclass(frozen=True)
class RankEvent(Event):
    """One rank of a run of several, as it reported to rank 0 at the end (rank 0 writes one a rank)."""

    kind: ClassVar[str] = "rank"
    rank: int = _field("the rank", MISSING)
    local_rank: int | None = _field("its rank on its host")
    host: str | None = _field("its host")
    device: str | None = _field("its torch device")
    pid: int | None = _field("its process id")
    steps: int | None = _field("steps it ran")
    step_ms_median: float | None = _field("its median step time after warm-up (ms)")
    step_ms_p90: float | None = _field("its 90th percentile step time (ms)")
    fwd_ms_median: float | None = _field("its median forward (ms)")
    bwd_ms_median: float | None = _field("its median backward (ms)")
    opt_ms_median: float | None = _field("its median optimizer step (ms)")
    peak_mem_mb: float | None = _field("its peak device memory (MiB)")
    weights: str | None = _field("a digest of its weights at the end: equal on every rank that stayed in sync")
    comm_ms: float | None = _field("its time in collectives a step (ms; from its PyTorch profiler trace)",
                                   sparse=True)
    comm_hidden: float | None = _field("the share of that time that ran under compute", sparse=True)


@dataclass(frozen=True)
class ProfileEvent(Event):
    """A profiler's output: its files and the kernel table normalized from them. The trainer writes
    one for each in-process profiler, the supervisor one for a tool that wraps the trainer (one a
    rank in a run of several)."""

    kind: ClassVar[str] = "profile"
    tool: str | None = _field("the profiler")
    artifacts: dict[str, str] = _field("its files: name -> path relative to the run folder", dict)
    kernel_table: str | None = _field("the normalized kernels.csv, relative to the run folder (null: none)")
    format: str | None = _field("the format the table was read from")
    note: str | None = _field("what people should know about the table (or why there is none)")
    steps: int | None = _field("training steps the kernel table covers (null: not known)")
    passes: int | None = _field("runs of the program by a counter-pass tool such as rocprof-compute")
    rank: int | None = _field("whose output this is, in a run of several ranks", sparse=True)


@dataclass(frozen=True)
class PassEvent(Event):
    """A counter-pass profiler (rocprof-compute, rocprofv3 -i) started the program again. Passes
    after the first write their other events to events.pass<k>.jsonl (tinylab/runs/passes.py)."""

    kind: ClassVar[str] = "pass"
    number: int = _field("which run of the program this is, from 1", MISSING, key="pass")
    planned: int | None = _field("runs the tool will make, when known")
    tool: str | None = _field("the profiler")
    steps: int | None = _field("steps this pass trains")
    time: float | None = None

    @property
    def label(self) -> str:
        return f"counter pass {self.number}" + (f" of {self.planned}" if self.planned else "")


@dataclass(frozen=True)
class TelemetryEvent(Event):
    """A sample of the run's GPU, once a second (tinylab/profilers/telemetry.py); any value is null
    where the driver does not say. Each rank samples its own GPU in a run of several."""

    kind: ClassVar[str] = "telemetry"
    gpu_util_pct: float | None = _field("GPU utilization (%)")
    mem_used_mb: float | None = _field("device memory used, by every process (MiB)")
    power_w: float | None = _field("power draw (W)")
    sm_clock_mhz: float | None = _field("SM (GFX) clock (MHz)")
    rank: int | None = _field("whose GPU, in a run of several ranks", sparse=True)
    time: float | None = None


@dataclass(frozen=True)
class LoadEvent(Event):
    """The machine's load by processes outside the run, twice a second, by the run's first rank
    (tinylab.profilers.telemetry.LoadSampler; the summary's others_* fields are made from them)."""

    kind: ClassVar[str] = "load"
    others_cores: float | None = _field("CPU time processes outside the run used since the last sample, in cores' worth")
    cpus: int | None = _field("the CPUs the run may use")
    gpu_others: int | None = _field("processes outside the run using its GPU (null when no NVML or AMD SMI answers)")


@dataclass(frozen=True)
class ErrorEvent(Event):
    """Why the run failed: the trainer's exception, or the supervisor's word for a trainer that
    could not start or a rank that died without one. Any rank of a run of several may write one."""

    kind: ClassVar[str] = "error"
    type: str | None = _field("the exception's class (`RankDied`: a rank that left no error)")
    message: str | None = _field("what went wrong, in one line")
    traceback: str | None = _field("the end of the traceback (empty for a signal or a full disk)")
    rank: int | None = _field("which rank it is about, in a run of several", sparse=True)
    root: bool = _field("the rank torchrun saw fail first (the others followed from it)", False, sparse=True)
    time: float | None = None


@dataclass(frozen=True)
class ExitEvent(Event):
    """The trainer ended: written by the supervisor after it exits."""

    kind: ClassVar[str] = "exit"
    returncode: int = _field("its exit code (negative: killed by a signal)", MISSING)
    signal: str | None = _field("the signal's name, when a signal ended it")
    note: str | None = _field("what the supervisor saw besides the code (torchrun killed while its ranks "
                              "trained on)", sparse=True)


# ----------------------------------------------------------------------------- the schema, made from them
#: Every kind of event, in the order docs/events.md lists them.
EVENT_TYPES: tuple[type[Event], ...] = (StartEvent, StepEvent, Summary, RankEvent, ProfileEvent, PassEvent,
                                        TelemetryEvent, LoadEvent, ErrorEvent, ExitEvent)
KINDS = tuple(t.kind for t in EVENT_TYPES)
#: What every record carries besides its kind; a kind readers do not know is checked for it alone.
ENVELOPE: dict[str, tuple[tuple[type, ...], bool]] = {"time": ((int, float), False)}


def _json_types(annotation: Any) -> tuple[type, ...]:
    """The JSON values a field of this annotation may hold: a float may be written as an integer."""
    out: list[type] = []
    for part in get_args(annotation) if isinstance(annotation, UnionType) else (annotation,):
        base = get_origin(part) or part
        out += [int, float] if base is float else [base]
    return tuple(out)


@functools.cache
def _schema(cls: type[Event]) -> tuple[tuple[str, str, tuple[type, ...], bool], ...]:
    """(attribute, key on disk, the JSON values it may hold, required) for each field of an event type."""
    hints = get_type_hints(cls)
    return tuple((f.name, f.metadata.get("key") or f.name, _json_types(hints[f.name]), f.default is MISSING
                  and f.default_factory is MISSING) for f in fields(cls))


#: kind -> key -> (the JSON values it may hold, required).
FIELD_TYPES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    t.kind: {**{key: (types, required) for _, key, types, required in _schema(t)}, **ENVELOPE} for t in EVENT_TYPES
}


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    # true/false is no count: `"returncode": false` would break ExitEvent
    return isinstance(value, types) and (not isinstance(value, bool) or bool in types)


def well_typed(record: dict[str, Any]) -> bool:
    """Whether a record's known fields hold what FIELD_TYPES allows, and its required ones are there."""
    for key, (types, required) in FIELD_TYPES.get(record["event"], ENVELOPE).items():
        if key in record:
            if not _fits(record[key], types):
                return False
        elif required:
            return False
    return True


def decode(cls: type[Event], event: dict[str, Any]) -> Any:
    """cls from a record's fields, a value not of its declared type left at the default.

    Records that readers parsed are well typed already; this also takes records from elsewhere
    (fixtures, a rank's report), and makes NaN or infinity (JSON parses them) a null.
    """
    values = {}
    for name, key, types, _ in _schema(cls):
        if key in event:
            value = event[key]
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            if _fits(value, types):
                values[name] = value
    return cls(**values)


def encode(event: Event, now: float) -> dict[str, Any]:
    """The record of an event: its kind and time first (sample_steps finds a step line by its
    opening), stamped `now` unless it has its own; then its fields in their declared order, a
    sparse one only when it differs from its default."""
    stamp = getattr(event, "time", None)
    record: dict[str, Any] = {"event": event.kind, "time": now if stamp is None else stamp}
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name != "time" and not (f.metadata.get("sparse") and value == f.default):
            record[f.metadata.get("key") or f.name] = value
    return record


def number(value: Any) -> float | int | None:
    """A finite number from an event field, or None (a corrupt record must not break a view)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def schema_page() -> str:
    """docs/events.md: the schema as people read it (tests/core/test_events.py fails when the page
    in the repository is not this)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    out = ["# events.jsonl", "",
           "<!-- Made by schema_page() in tinylab/core/events.py from the event dataclasses: edit those, then",
           "     regenerate this page (tests/core/test_events.py says how). -->", "",
           "A run's events, one JSON object a line. Every line has `event` (its kind) and `time` (when it was",
           "written, in seconds since the epoch), then the fields of its kind below. A *required* field is on",
           "every line of its kind; one *written when set* is left out at its default. Readers skip and count a",
           "line that is not JSON, or whose field does not hold its type (a `float` may be written as an integer),",
           "and never fail on it; they read NaN or infinity as null, and ignore fields not listed here.", ""]
    for cls in EVENT_TYPES:
        out += [f"## `{cls.kind}`", "", inspect.cleandoc(cls.__doc__ or ""), "", "| field | type | meaning |",
                "|---|---|---|"]
        for f, (_, key, _, required) in zip(fields(cls), _schema(cls)):
            if f.name == "time":
                continue
            how = "required; " if required else "written when set; " if f.metadata.get("sparse") else ""
            out.append(f"| `{key}` | `{cell(str(f.type))}` | {how}{cell(f.metadata['description'])} |")
        out.append("")
    return "\n".join(out)
