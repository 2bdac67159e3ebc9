"""Step anatomy: where one training step's time goes, from the PyTorch profiler's trace.

For each measured step (a `ProfilerStep#N` range of the trace) this gives its wall time, how long
the GPU ran a kernel in it, the idle gaps between, the kernels the step launched, its time per
phase (tinylab's `forward` / `backward` / `optimizer` ranges) and per kernel category, a
one-line diagnosis, and an ASCII lane of the step (busy/idle along time), as a frozen `Timeline`
(tinylab.render.timeline lays it out in 80 columns; its `to_json()` is `tinylab timeline --json`).

Definitions (Holistic Trace Analysis' temporal breakdown, facebookresearch/HolisticTraceAnalysis
hta/analyzers/breakdown_analysis.py, `get_temporal_breakdown` and `_get_idle_time_for_kernels`,
and hta/utils/utils.py `merge_kernel_intervals`):
- GPU events are the device's kernels, copies and memsets (HTA: every event with a stream),
  merged into a union of intervals over all streams of the device, so that kernels overlapping
  on two streams count once.
- busy = the length of that union; idle = the time no GPU event runs; compute = the union of
  compute kernels only; non-compute = busy - compute (HTA: copies, memsets and collectives).
  rocclr's copy kernels on ROCm are copies too (tinylab.core.categories "memcpy").
- HTA measures idle over the span from an iteration's first kernel to its last; here the span
  is the step's `ProfilerStep#N` window, the wall time the learner's step costs: host time
  before the first kernel is idle GPU time too, which is what a launch-bound step is made of.
  The trainer ends each window after the step's loss is read back, so the window holds all of
  that step's GPU work.
- A GPU event belongs to the step (and phase) whose window holds its launch (HTA's add_iteration:
  a GPU event takes the iteration of its correlated CPU launch); the busy time of a window is the
  union clipped to the window, so the steps' busy and idle times add up to the profiled time.
Without `ProfilerStep#N` ranges (a trace taken outside tinylab) the whole trace is one window.

The memory timeline that the profiler writes beside the trace with --profile-memory
(torch.profiler export_memory_timeline: `[times_us, sizes]`, one size per category) is cut to
the same windows: peak, when and in which phase it happens, and the series for a chart.

The trace comes through tinylab.analysis.trace_model (the windows, phases and GPU events of one
device, read as columns).
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from tinylab.core.categories import categorize
from tinylab.core.profile_files import MEMORY_TIMELINE
from tinylab.analysis.trace_model import (PHASES, GpuEvent, Trace, Window, load_trace, merge, merged_columns,
                                          read_json)
from tinylab.analysis.timeline_result import (Communication, Gaps, GraphReplay, MemoryPeak, PhaseTime, StepAnatomy,
                                             Timeline, TrainerTiming)
from tinylab.core.errors import UserError
from tinylab.runs.record import printable
from tinylab.core.safeio import inside

PHASE_MARKS = {"forward": "F", "backward": "B", "optimizer": "O"}

#: A step whose GPU idles this share of its wall time or more is bound by something else.
IDLE_BOUND = 0.5
#: ... and launch-bound when its median kernel is shorter than this: a launch from eager
#: PyTorch costs the host about 5-10 us, so shorter kernels leave the GPU waiting for the next.
LAUNCH_BOUND_US = 10.0
#: A step whose GPU idles at most this share is GPU-bound: only faster kernels help.
GPU_BOUND = 0.1
#: Torch's memory categories, in the order of export_memory_timeline's sizes (index 0 unused):
#: torch/profiler/_memory_profiler.py _CATEGORY_TO_INDEX (PARAMETER ... AUTOGRAD_DETAIL, None).
MEMORY_CATEGORIES = ("parameter", "optimizer state", "input", "temporary", "activation", "gradient",
                     "autograd detail", "unknown")
#: Why a graphed step's memory timeline is nearly empty (an H100 v4 step: 1.0 MB, the run's peak 960 MB).
GRAPH_MEMORY = ("a graph replay allocates nothing: its memory was allocated once, at capture, in the graph's "
                "private pool, so this step's memory timeline misses it (the run's peak is in its summary)")
LANE_WIDTH = 60
#: Lane characters by busy share of a cell; ASCII so that any terminal and log shows them.
LANE_CHARS = ((2 / 3, "#"), (1 / 3, "+"), (0.0, "-"))


# ------------------------------------------------------------------------------------ anatomy
def _clip(intervals: Iterable[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """The intervals that overlap [lo, hi], cut to it."""
    return [(max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi]


def _clipped(trace: Trace, lo: float, hi: float, keep: np.ndarray | None = None) -> list[tuple[float, float]]:
    """The union of the trace's GPU events that overlap [lo, hi], cut to it (`keep`: a mask of the
    events that count, all by default). Only the events near the window are looked at (1 µs of
    slack for the rounding of start + length)."""
    first, last = np.searchsorted(trace.starts, (lo - trace.longest - 1.0, hi), side="left").tolist()
    starts, ends = trace.starts[first:last], trace.ends[first:last]
    near = (ends > lo) & (starts < hi)
    if keep is not None:
        near &= keep[first:last]
    return merged_columns(np.maximum(starts[near], lo), np.minimum(ends[near], hi))


def _total(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def _gaps(busy: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    gaps, cursor = [], lo
    for a, b in busy:
        if a > cursor:
            gaps.append((cursor, a))
        cursor = max(cursor, b)
    if hi > cursor:
        gaps.append((cursor, hi))
    return gaps


def _phase_at(phases: list[tuple[str, float, float]], t: float) -> str | None:
    for name, a, b in phases:
        if a <= t < b:
            return name
    return None


def lane(busy: list[tuple[float, float]], lo: float, hi: float, width: int = LANE_WIDTH) -> str:
    """One character per 1/width of the window: '#' mostly busy, '+' about half, '-' a little, '.' idle.
    Each interval adds its overlap with each cell it touches, in order (as a loop over them would)."""
    cell = (hi - lo) / width
    filled = np.zeros(width)
    if busy:
        a, b = np.array(busy, dtype=np.float64).T
        first = np.maximum(((a - lo) / cell).astype(np.int64), 0)
        last = np.minimum(((b - lo) / cell).astype(np.int64), width - 1)
        spans = np.maximum(last - first + 1, 0)
        which = np.repeat(np.arange(len(a)), spans)  # (interval, cell) pairs, interval by interval
        cells = first[which] + np.arange(len(which)) - np.repeat(np.cumsum(spans) - spans, spans)
        c0, c1 = lo + cells * cell, lo + (cells + 1) * cell
        np.add.at(filled, cells, np.maximum(0.0, np.minimum(b[which], c1) - np.maximum(a[which], c0)))
    return "".join(next((ch for limit, ch in LANE_CHARS if f / cell > limit), ".") for f in filled.tolist())


def host_lane(phases: list[tuple[str, float, float]], lo: float, hi: float, width: int = LANE_WIDTH) -> str:
    """What the host was in at the middle of each cell: F forward, B backward, O optimizer, '.' other."""
    cell = (hi - lo) / width
    return "".join(PHASE_MARKS.get(_phase_at(phases, lo + (i + 0.5) * cell) or "", ".") for i in range(width))


def step_anatomy(trace: Trace, window: Window) -> StepAnatomy:
    lo, hi = window.start, window.end
    busy = _clipped(trace, lo, hi)
    compute = _clipped(trace, lo, hi, trace.compute)
    busy_us, compute_us, wall_us = _total(busy), _total(compute), hi - lo
    gaps = _gaps(busy, lo, hi)
    largest = max(gaps, key=lambda g: g[1] - g[0]) if gaps else None
    phases = [p for p in trace.phases if lo <= p[1] < hi]

    mine = trace.launched_in(lo, hi)
    kernels = [g for g in mine if g.is_kernel]
    durations = sorted(g.end - g.start for g in kernels)
    categories: dict[str, float] = {}
    for g in mine:
        category = categorize(g.name)
        categories[category] = categories.get(category, 0.0) + (g.end - g.start) / 1e3
    phase_rows = []
    for name in PHASES:
        ranges = [(a, b) for n, a, b in phases if n == name]
        if not ranges:
            continue
        inside = [g for a, b in ranges for g in trace.launched_in(a, b)]
        phase_rows.append(PhaseTime(name, sum(b - a for a, b in ranges) / 1e3, sum(g.is_kernel for g in inside),
                                    sum(g.end - g.start for g in inside) / 1e3))
    gpu = bool(trace.events)  # a CPU run has no device to be busy or idle
    anatomy = StepAnatomy(
        step=window.step,
        start_us=lo,
        wall_ms=wall_us / 1e3,
        busy_ms=busy_us / 1e3 if gpu else None,
        compute_ms=compute_us / 1e3 if gpu else None,
        non_compute_ms=(busy_us - compute_us) / 1e3 if gpu else None,
        idle_ms=(wall_us - busy_us) / 1e3 if gpu else None,
        idle_pct=100 * (wall_us - busy_us) / wall_us if gpu and wall_us > 0 else None,
        gaps=Gaps(
            count=len(gaps),
            total_ms=_total(gaps) / 1e3,
            largest_ms=(largest[1] - largest[0]) / 1e3 if largest else 0.0,
            largest_at_ms=(largest[0] - lo) / 1e3 if largest else None,
            largest_phase=_phase_at(phases, (largest[0] + largest[1]) / 2) if largest else None,
        ) if gpu else None,
        kernels=len(kernels),
        copies=len(mine) - len(kernels),
        kernel_median_us=statistics.median(durations) if durations else None,
        phases=tuple(phase_rows),
        categories_ms=dict(sorted(categories.items(), key=lambda kv: -kv[1])),
        lane=lane(busy, lo, hi) if gpu else None,
        host_lane=host_lane(phases, lo, hi),
        graph=_replay(busy, [g for g in mine if g.graph], lo, hi),
        host_calls=_host_calls(trace, phases, kernels, lo, hi),
    )
    return replace(anatomy, diagnosis=diagnose(anatomy, has_gpu=gpu))


def _host_calls(trace: Trace, phases: list[tuple[str, float, float]], kernels: list[GpuEvent], lo: float,
                hi: float) -> dict[str, dict[str, float]] | None:
    """HOST_CALLS inside the step's phases: by kind, how many, their host time, and the device time
    of the kernels each launched and (for a layout copy) of the next kernel launched after it, the
    one that reads the copy. None for a step without phases (a graph replay, a foreign trace): the
    loop's own waits (the loss read, the timers) cannot be told from the model's there."""
    if not phases:
        return None
    out: dict[str, dict[str, float]] = {}
    launched = sorted((g.launch, g.end - g.start) for g in kernels if g.launch is not None)
    times = [t for t, _ in launched]
    for kind, a, b in trace.host_calls:
        if not lo <= a < hi or _phase_at(phases, a) is None:
            continue
        row = out.setdefault(kind, {"count": 0, "ms": 0.0, "kernel_ms": 0.0})
        first, last = bisect.bisect_left(times, a), bisect.bisect_left(times, b)
        reader = launched[last:last + 1] if kind == "layout_copy" else []
        row["count"] += 1
        row["ms"] += (b - a) / 1e3
        row["kernel_ms"] += sum(d for _, d in launched[first:last] + reader) / 1e3
    return out


def _replay(busy: list[tuple[float, float]], replayed: list[GpuEvent], lo: float, hi: float) -> GraphReplay | None:
    """The step's graph replay (None without one): its GPU events, and how busy the GPU is from the
    replay's first event to its last. The host launches the whole graph in one call, so the GPU's
    idle time outside that span is host work between replays, not per-kernel launch cost."""
    if not replayed:
        return None
    a, b = max(lo, min(g.start for g in replayed)), min(hi, max(g.end for g in replayed))
    span = max(0.0, b - a)
    return GraphReplay(
        launches=len({g.launch for g in replayed}),
        kernels=sum(g.is_kernel for g in replayed),
        span_ms=span / 1e3,
        busy_pct=100 * _total(_clip(busy, a, b)) / span if span > 0 else None,
        outside_ms=(hi - lo - span) / 1e3,
    )


def diagnose(a: StepAnatomy, has_gpu: bool) -> str:
    """One line that says what bounds the step, with the numbers that show it."""
    if not has_gpu:
        phases = ", ".join(f"{p.name} {p.host_ms:.2f} ms" for p in a.phases)
        return "no GPU events in this trace (a CPU run): the whole step is host time" + (f"; {phases}" if phases else "")
    idle = (a.idle_pct or 0.0) / 100
    median = a.kernel_median_us
    kernels = f"{a.kernels} kernels of {format_us(median)} median" if median is not None else "no kernels"
    graph = a.graph
    if graph and graph.kernels * 2 >= a.kernels and graph.busy_pct is not None:
        launches = f"{graph.launches} graph launch{'es' if graph.launches > 1 else ''}"
        return (f"graph replay: {launches} ran {graph.kernels} kernels, the GPU busy {graph.busy_pct:.0f}% of "
                f"the replay's {graph.span_ms:.2f} ms; the step's other {graph.outside_ms:.2f} ms is host "
                f"time outside it (GPU idle {idle:.0%} of the step)")
    if idle >= IDLE_BOUND and median is not None and median < LAUNCH_BOUND_US:
        return f"launch-bound: the GPU is idle {idle:.0%} of the step; {kernels}"
    gaps = a.gaps
    if idle >= IDLE_BOUND:
        where = f" in {gaps.largest_phase}" if gaps.largest_phase else ""
        return (f"host-bound: the GPU is idle {idle:.0%} of the step in {gaps.count} gaps, the largest "
                f"{gaps.largest_ms:.2f} ms{where}; {kernels}")
    top = next(iter(a.categories_ms.items()), None)
    total = sum(a.categories_ms.values())
    top_text = f"; {top[0]} takes {100 * top[1] / total:.0f}% of kernel time" if top and total > 0 else ""
    if idle <= GPU_BOUND:
        return f"GPU-bound: the GPU is busy {1 - idle:.0%} of the step{top_text}"
    return f"partly idle: the GPU is busy {1 - idle:.0%} of the step, idle in {gaps.count} gaps{top_text}"


def format_us(value: float | None) -> str:
    """A kernel's time as people read it: "6 µs", "1.25 ms"; "-" when unknown."""
    if value is None:
        return "-"
    return f"{value:.0f} µs" if value < 1000 else f"{value / 1e3:.2f} ms"


# ------------------------------------------------------------------------------------- memory
def load_memory(path: Path) -> tuple[list[float], list[list[int]]]:
    """torch's export_memory_timeline JSON: ([times µs], [[0, bytes per category...] per time])."""
    doc = read_json(path)
    if (not isinstance(doc, list) or len(doc) != 2 or not isinstance(doc[0], list) or not isinstance(doc[1], list)
            or len(doc[0]) != len(doc[1])):
        raise UserError(f"{path}: not a PyTorch memory timeline ([times, sizes] from export_memory_timeline)")
    try:
        times = [float(t) for t in doc[0]]
        sizes = [[int(v) for v in row[1:1 + len(MEMORY_CATEGORIES)]] for row in doc[1]]
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{printable(str(path))}: a PyTorch memory timeline with values that are not numbers") from None
    return times, sizes


def memory_in_window(times: list[float], sizes: list[list[int]], trace: Trace, window: Window,
                     points: int = 200) -> MemoryPeak | None:
    """Memory over one step: its peak (when, in which phase, by category) and a thinned series.

    The timeline's times are wall-clock µs; the trace's are offset by its baseTimeNanoseconds,
    so a point's place in the trace is time - base."""
    offset = trace.base_us or 0.0
    lo, hi = window.start + offset, window.end + offset
    first = bisect.bisect_left(times, lo)
    last = bisect.bisect_right(times, hi)
    idx = ([first - 1] if first > 0 else []) + list(range(first, last))
    if not idx:
        return None
    totals = [sum(sizes[i]) for i in idx]
    peak_i = idx[max(range(len(idx)), key=lambda j: totals[j])]
    peak_t = min(max(times[peak_i], lo), hi)
    phases = [p for p in trace.phases if window.start <= p[1] < window.end]
    stride = max(1, -(-len(idx) // points))
    kept = idx[::stride] + ([idx[-1]] if idx[-1] not in idx[::stride] else [])
    used = [i for i, _ in enumerate(MEMORY_CATEGORIES) if any(sizes[j][i] for j in idx)]
    return MemoryPeak(
        peak_mb=sum(sizes[peak_i]) / 2**20,
        peak_at_ms=(peak_t - lo) / 1e3,
        peak_phase=_phase_at(phases, peak_t - offset),
        peak_by_category_mb={MEMORY_CATEGORIES[i]: sizes[peak_i][i] / 2**20 for i in used},
        start_mb=sum(sizes[idx[0]]) / 2**20,
        series={
            "ms": [(min(max(times[i], lo), hi) - lo) / 1e3 for i in kept],
            **{MEMORY_CATEGORIES[c]: [sizes[i][c] / 2**20 for i in kept] for c in used},
        },
    )


# ------------------------------------------------------------------------------------ the whole
def run_traces(run_dir: Path, profiles: Any) -> dict[int | None, tuple[Path, Path | None]]:
    """Each rank's (PyTorch trace, memory timeline or None) among a run's profile artifacts; the
    key is the rank, None for a run of one process. An artifact path that leads outside the run
    folder (absolute, `..`, a link on the way) is an UnsafeFile: a neighbour's file is never read."""
    found: dict[int | None, dict[str, Path]] = {}
    for profile in profiles:
        for name, rel in profile.artifacts.items():
            if not name.endswith((".trace.json.gz", ".trace.json", "trace.json.gz")) and name != MEMORY_TIMELINE:
                continue
            full = inside(Path(run_dir), rel)  # UnsafeFile: absolute, `..`, or a link on the way
            if name.endswith((".trace.json.gz", ".trace.json", "trace.json.gz")) and full.is_file():
                found.setdefault(profile.rank, {})["trace"] = full
            elif name == MEMORY_TIMELINE and full.is_file():
                found.setdefault(profile.rank, {})["memory"] = full
    return {rank: (files["trace"], files.get("memory")) for rank, files in found.items() if "trace" in files}


def run_trace(run_dir: Path, profiles: Any) -> tuple[Path | None, Path | None]:
    """(PyTorch trace, memory timeline) of a run, its first rank's in a run of several; None where it has none."""
    traces = run_traces(run_dir, profiles)
    return traces[min(traces, key=lambda r: -1 if r is None else r)] if traces else (None, None)


def idle_pct(result: Timeline) -> float | None:
    """The GPU's idle share of the step an analysis shows (None: no GPU events, a CPU trace)."""
    return result.shown.idle_pct


def analyze(trace_path: Path, memory_path: Path | None = None, step: int | None = None) -> Timeline:
    """Every step's anatomy, the step to show (`step`, else the one of median wall time), that
    step's memory when a memory timeline is given, and the collectives a step (`communication`:
    ms, hidden share, steps; None without collectives). UserError on a missing step."""
    trace = load_trace(Path(trace_path))
    anatomies = [step_anatomy(trace, w) for w in trace.windows]
    if step is not None:
        numbered = [a for a in anatomies if a.step == step]
        if not numbered:
            have = ", ".join(str(a.step) for a in anatomies if a.step is not None) or "none (one window)"
            raise UserError(f"--step {step}: this trace has no ProfilerStep#{step}; its steps: {have}")
        shown = numbered[0]
    else:
        by_wall = sorted(anatomies, key=lambda a: a.wall_ms)
        shown = by_wall[(len(by_wall) - 1) // 2]
    memory = None
    notes = list(trace.notes)
    if memory_path is not None:
        times, sizes = load_memory(Path(memory_path))
        window = trace.windows[anatomies.index(shown)]
        memory = memory_in_window(times, sizes, trace, window)
        if memory is None:
            notes.append("the memory timeline has no point in this step's window")
        elif shown.graph:
            notes.append(GRAPH_MEMORY)
    comm = collectives(trace)
    return Timeline(
        source=trace.source,
        memory_source=str(memory_path) if memory_path else None,
        communication=None if comm is None else Communication(comm[0], comm[1], len(trace.windows)),
        device=trace.device,
        has_gpu_events=bool(trace.events),
        steps=tuple(anatomies),
        shown_step=shown.step,
        diagnosis=shown.diagnosis,
        memory=memory,
        notes=tuple(notes),
    )


def trainer_timing(step_events: list[dict[str, Any]], result: Timeline) -> TrainerTiming | None:
    """The trainer's own clock beside the trace: the shown step's step_ms and the median of the run's
    measured steps that the profiler did not record (None when either is missing). A step window
    also holds the loop between steps (the last step's records, the next batch) and the profiler's
    own work, so it is longer than the step the trainer timed; unprofiled steps show what the
    profiler added."""
    profiled = {a.step for a in result.steps}
    times = {e.get("step"): e.get("step_ms") for e in step_events if not e.get("warmup")}
    shown = times.get(result.shown_step)
    others = [ms for step, ms in times.items() if step not in profiled and isinstance(ms, (int, float))]
    if not isinstance(shown, (int, float)) or not others:
        return None
    return TrainerTiming(shown, statistics.median(others), len(others))


def communication(trace_path: Path) -> tuple[float, float | None] | None:
    """collectives() of a trace file."""
    return collectives(load_trace(Path(trace_path)))


def collectives(trace: Trace) -> tuple[float, float | None] | None:
    """Time in collectives a step (ms, mean over the trace's steps) and the share of it that ran
    under compute; None when the trace recorded no collective.

    On a GPU: the union of NCCL/RCCL kernels, and its overlap with the compute kernels' union (HTA's
    comm/comp overlap). On a CPU: gloo's collectives (run on gloo's own threads), and their overlap
    with the operators of the thread that runs the step, less its calls into the collectives
    (`c10d::allreduce_`: a step thread that waits in one hides nothing).
    """
    op_starts, op_ends = [a for a, _ in trace.host_ops], [b for _, b in trace.host_ops]  # merged: both sorted
    comm_us, hidden_us = [], 0.0
    for w in trace.windows:
        if trace.events:
            comm = _clipped(trace, w.start, w.end, trace.communication)
            compute = _clipped(trace, w.start, w.end, trace.compute) if comm else []
        else:
            comm = merge(_clip(trace.collectives, w.start, w.end))
            inside = trace.host_ops[bisect.bisect_right(op_ends, w.start): bisect.bisect_left(op_starts, w.end)]
            compute = _clip(inside, w.start, w.end) if comm else []
        comm_us.append(_total(comm))
        # both are unions of disjoint intervals: their overlap is what their union lacks of their sum
        hidden_us += max(0.0, _total(comm) + _total(compute) - _total(merge(comm + compute)))
    total = sum(comm_us)
    if total <= 0:
        return None
    return statistics.mean(comm_us) / 1e3, hidden_us / total
