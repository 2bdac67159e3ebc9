"""A PyTorch profiler trace as the step anatomy reads it: the step windows, the phase ranges and
the GPU events of one device (tinylab.analysis.timeline computes the anatomy from it).

The trace is read as columns (tinylab.analysis.formats.read_trace: streamed, only the fields used),
and only the GPU events of the device shown become objects: a million-event trace in seconds.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tinylab.core.categories import categorize
from tinylab.core.errors import UserError
from tinylab.core.safeio import loads_json, read_bounded

#: Kineto's categories of events that run on the device.
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"})
#: Host events that launch device work and carry the correlation id of what they launched.
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "hip_runtime"})
#: Host ranges (record_function): step windows and phases come only from these, never from the
#: `gpu_user_annotation` copies Kineto draws of the same ranges on the GPU timeline.
HOST_RANGE_CATEGORIES = frozenset({"user_annotation", "cpu_op"})
PHASES = ("forward", "backward", "optimizer")
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
#: The host call that replays a captured graph: every kernel of the replay carries its correlation id.
_GRAPH_LAUNCH = re.compile(r"^(?:cuda|hip|cu)GraphLaunch")
#: Kernel categories that are no compute: copies, and (HTA's CommunicateKernelGroupingPattern) the
#: NCCL/RCCL collectives.
NON_COMPUTE = frozenset({"memcpy", "communication"})
#: Collectives as the backend records them on the host: gloo runs them on its own threads (a CPU
#: run's only record of the collective itself), NCCL/RCCL issue them from the host.
_HOST_COLLECTIVE = re.compile(r"^(?:gloo|nccl|rccl):")
#: Host calls the advisor counts inside a step's phases (tinylab.analysis.advice): the runtime's
#: blocking waits for the device (a `.item()` or a blocking copy ends in one), and the operator that
#: copies a tensor into a new memory layout (a no-op, so not recorded, when it is contiguous already).
HOST_CALLS = {**{f"{api}{call}": "sync" for api in ("cuda", "hip")
                 for call in ("StreamSynchronize", "DeviceSynchronize", "EventSynchronize", "Memcpy")},
              "aten::contiguous": "layout_copy"}
#: The most JSON a memory timeline may hold (a step's series is a few hundred KB).
MEMORY_LIMIT = 64 << 20


@dataclass
class GpuEvent:
    start: float  # µs, trace clock
    end: float
    name: str
    launch: float | None  # µs: when the host launched it (None: no correlated launch found)
    compute: bool
    is_kernel: bool
    graph: bool = False  # replayed from a captured graph (launched by cudaGraphLaunch/hipGraphLaunch)


@dataclass
class Window:
    step: int | None
    start: float
    end: float


@dataclass
class Trace:
    """What the anatomy needs from a trace: step windows, phase ranges, the GPU events of one device."""

    source: str
    windows: list[Window]
    phases: list[tuple[str, float, float]]  # (name, start, end), host clock = trace clock
    events: list[GpuEvent]  # sorted by start
    device: int | None
    devices: int
    base_us: float | None  # baseTimeNanoseconds / 1000: trace ts + base = wall-clock µs
    notes: list[str] = field(default_factory=list)
    collectives: list[tuple[float, float]] = field(default_factory=list)  # host-recorded collectives (gloo, c10d)
    host_ops: list[tuple[float, float]] = field(default_factory=list)  # the phases' thread's other operators
    host_calls: list[tuple[str, float, float]] = field(default_factory=list)  # (HOST_CALLS kind, start, end)

    def __post_init__(self) -> None:
        # which events can overlap a window: those that start before its end and at most the
        # longest event's length before its start
        count = len(self.events)
        self.starts = np.fromiter((g.start for g in self.events), dtype=np.float64, count=count)
        self.ends = np.fromiter((g.end for g in self.events), dtype=np.float64, count=count)
        self.longest = float((self.ends - self.starts).max()) if count else 0.0
        self.compute = np.fromiter((g.compute for g in self.events), dtype=bool, count=count)
        kinds = {name: categorize(name) == "communication" for name in {g.name for g in self.events}}
        self.communication = np.fromiter((kinds[g.name] for g in self.events), dtype=bool, count=count)
        # the events by when they were launched (the GPU start where no launch was recorded), as
        # their indices: which ones a window or a phase launched is then two bisections
        keys = np.fromiter((g.launch if g.launch is not None else g.start for g in self.events), dtype=np.float64,
                           count=count)
        self.by_launch = np.argsort(keys, kind="stable")  # NaN last: never launched in a window
        self.launches = keys[self.by_launch]

    def launched_in(self, lo: float, hi: float) -> list[GpuEvent]:
        """The events launched in [lo, hi), in the order of `events`."""
        first, last = np.searchsorted(self.launches, (lo, hi), side="left").tolist()
        return [self.events[i] for i in np.sort(self.by_launch[first:last]).tolist()]


def read_json(path: Path) -> Any:
    """A small JSON document (the memory timeline), gzipped or not; UserError naming the file otherwise."""
    try:
        raw = read_bounded(path, MEMORY_LIMIT, follow_links=True)
        if raw[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(MEMORY_LIMIT + 1)
            if len(raw) > MEMORY_LIMIT:
                raise UserError(f"{path}: more than {MEMORY_LIMIT >> 20} MiB of JSON: not read")
        return loads_json(raw)  # depth and integer caps: a crafted file is a one-line error
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (EOFError, ValueError, UnicodeDecodeError, zlib.error) as exc:
        raise UserError(f"{path}: not a readable JSON document (truncated or corrupt?): {str(exc)[:120]}") from None


def load_trace(path: Path) -> Trace:
    """Step windows, phases and GPU events of a PyTorch profiler (Kineto) Chrome trace, from its
    events as columns (tinylab.analysis.formats.trace_events: one streamed read)."""
    from tinylab.analysis.formats import read_trace  # pandas, msgspec: only when a trace is read

    ev = read_trace(path)
    timed = ~np.isnan(ev.ts)
    ends = ev.ts + ev.dur
    is_gpu = timed & ev.of_cats(GPU_CATEGORIES)
    host = timed & ~is_gpu & ~ev.of_cats(("gpu_user_annotation",))  # not Kineto's GPU copies of host ranges
    host_start = float(ev.ts[host].min()) if host.any() else float("inf")
    host_end = float(ends[host].max()) if host.any() else float("-inf")
    launch = host & ev.of_cats(LAUNCH_CATEGORIES) & ~np.isnan(ev.correlation)
    launches = dict(zip(ev.correlation[launch].tolist(), ev.ts[launch].tolist()))  # the last launch of an id wins
    graphed = np.array([isinstance(n, str) and bool(_GRAPH_LAUNCH.match(n)) for n in ev.names], dtype=bool)
    graph_launches = set(ev.correlation[launch & graphed[ev.name]].tolist()) if len(ev.names) else set()
    # host ranges (record_function): what each distinct name is, then its rows (few but the operators)
    kinds = [_range_kind(n) for n in ev.names]
    ranged = host & ev.of_cats(HOST_RANGE_CATEGORIES) & ev.named()
    steps: dict[int, Window] = {}
    phases: list[tuple[str, float, float]] = []
    collectives: list[tuple[float, float]] = []
    phase_tids: set[int] = set()
    special = np.array([k not in ("op", None) for k in kinds], dtype=bool)
    rows = np.flatnonzero(ranged & special[ev.name]) if len(kinds) else np.empty(0, dtype=np.int64)
    for code, ts, end, tid in zip(ev.name[rows].tolist(), ev.ts[rows].tolist(), ends[rows].tolist(),
                                  ev.tid[rows].tolist()):
        kind = kinds[code]
        if isinstance(kind, int):  # one window a step: the longest host range of that number
            if kind not in steps or end - ts > steps[kind].end - steps[kind].start:
                steps[kind] = Window(kind, ts, end)
        elif kind == "phase":
            phases.append((ev.names[code], ts, end))
            phase_tids.add(tid)
        else:
            collectives.append((ts, end))
    # the phases' thread's other operators (what a collective on another thread may hide under)
    is_op = np.array([k == "op" for k in kinds], dtype=bool)
    ops = ranged & ev.of_cats(("cpu_op",)) & np.isin(ev.tid, list(phase_tids))
    ops &= is_op[ev.name] if len(kinds) else ops
    # the host calls the advisor counts (HOST_CALLS: device syncs, layout copies), by name
    wanted = np.array([isinstance(n, str) and n in HOST_CALLS for n in ev.names], dtype=bool)
    picked = np.flatnonzero(host & wanted[ev.name]) if len(ev.names) else np.empty(0, dtype=np.int64)
    calls = sorted((HOST_CALLS[ev.names[code]], ts, end) for code, ts, end in
                   zip(ev.name[picked].tolist(), ev.ts[picked].tolist(), ends[picked].tolist()))
    notes: list[str] = []
    gpu = np.flatnonzero(is_gpu)
    counts: dict[Any, int] = {}
    for d in ev.device[gpu].tolist():
        counts[d] = counts.get(d, 0) + 1
    device = max(counts, key=lambda d: counts[d]) if counts else None
    if len(counts) > 1:
        notes.append(f"{len(counts)} devices in the trace; showing device {ev.ids[device]}, the one with the most "
                     "GPU events")
    mine = gpu[ev.device[gpu] == device] if counts else gpu
    mine = mine[np.argsort(ev.ts[mine], kind="stable")]
    kernel_cats = {i for i, c in enumerate(ev.cats) if c in ("kernel", "Kernel")}
    compute_cat = next((i for i, c in enumerate(ev.cats) if c == "kernel"), -1)  # Kineto's; not "Kernel"
    gpu_events = [
        GpuEvent(ts, end, name, launches.get(corr), cat == compute_cat and categorize(name) not in NON_COMPUTE,
                 cat in kernel_cats, corr in graph_launches)
        for ts, end, name, corr, cat in zip(ev.ts[mine].tolist(), ends[mine].tolist(),
                                            [str(n) for n in ev.name_of(ev.name[mine])],
                                            ev.correlation[mine].tolist(), ev.cat[mine].tolist())
    ]
    windows = sorted(steps.values(), key=lambda w: w.start)
    if not windows:
        start = min([host_start, *(g.start for g in gpu_events)])
        end = max([host_end, *(g.end for g in gpu_events)])
        if not end > start:
            raise UserError(f"{path}: the trace holds no timed events")
        windows = [Window(None, start, end)]
        notes.append("no ProfilerStep# ranges in this trace: the whole trace is one window")
    base = ev.base_ns
    device_id = ev.ids[device] if device is not None else None
    return Trace(str(path), windows, sorted(phases, key=lambda p: p[1]), gpu_events,
                 device_id if isinstance(device_id, int) else None, len(counts), base / 1e3 if base else None, notes,
                 sorted(collectives), merged_columns(ev.ts[ops], ends[ops]), calls)


def _range_kind(name: str | None) -> int | str | None:
    """What a host range of this name is: a step (its number), "phase", "collective", "op" (any
    other, counted among the host's operators when it is a cpu_op), or None (no name)."""
    if not isinstance(name, str):
        return None
    m = _STEP.match(name)
    if m:
        return int(m.group(1))
    if name in PHASES:
        return "phase"
    if _HOST_COLLECTIVE.match(name):
        return "collective"
    return "op" if categorize(name) != "communication" else None


# ------------------------------------------------------------------------------------ intervals
def merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of intervals, sorted and disjoint (HTA's merge_kernel_intervals)."""
    if not intervals:
        return []
    starts, ends = np.array(intervals, dtype=np.float64).T
    return merged_columns(starts, ends)


def merged_columns(starts: np.ndarray, ends: np.ndarray) -> list[tuple[float, float]]:
    """merge() of intervals given as columns: sorted by start (then end), an interval joins the one
    before when it starts at or before the running end."""
    if not len(starts):
        return []
    order = np.lexsort((ends, starts))
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    first = np.flatnonzero(np.concatenate(([True], starts[1:] > ends[:-1])))
    last = np.concatenate((first[1:] - 1, [len(starts) - 1]))
    return list(zip(starts[first].tolist(), ends[last].tolist()))
