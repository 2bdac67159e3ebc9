"""PyTorch profiler: its Chrome/Perfetto trace (device kernels, else CPU operators by self time) and
tinylab's operators.csv of key_averages()."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tinylab.analysis.formats._base import (
    FormatError,
    Head,
    Parsed,
    complete_rows,
    join,
    number,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.analysis.formats.trace_events import TraceEvents
from tinylab.analysis.kernel_table import build_table, table_from_codes, table_from_durations

#: The files the PyTorch profiler adapter writes in its folder (tinylab/profilers/pytorch.py).
TRACE = "trace.json.gz"
OPERATORS_CSV = "operators.csv"
MEMORY_TIMELINE = "memory_timeline.json.gz"


#: Kineto's categories of device kernels (older traces: "Kernel") and of CPU operators.
KERNEL_CATS = ("kernel", "Kernel")
OPERATOR_CATS = ("cpu_op", "Operator", "operator")


def parse_trace(events: TraceEvents) -> Parsed:
    """Device kernels from `cat == "kernel"` events (µs); CPU operators by self time otherwise."""
    named = events.named()
    kernels = events.of_cats(KERNEL_CATS) & named
    if kernels.any():
        table = table_from_codes(events.name[kernels], events.names, events.dur[kernels] * 1e3)
        return Parsed(table, "pytorch-trace", None)
    ops = np.flatnonzero(events.of_cats(OPERATOR_CATS) & named & ~np.isnan(events.ts))
    if not len(ops):
        raise FormatError("trace has no kernel or cpu_op events")
    names, self_ns = _self_times(events, ops)
    return Parsed(
        table_from_durations(pd.Series(names, dtype=object), pd.Series(self_ns)),
        "pytorch-trace",
        "CPU run: no device kernels; table shows operators by self CPU time",
    )


def _self_times(events: TraceEvents, ops: np.ndarray) -> tuple[list[str | None], list[float]]:
    """Self time of each op = its duration minus its directly nested ops, per thread (threads in
    the order of their ids as text, ops by start, the longer first)."""
    by_text = {code: rank for rank, code in enumerate(sorted(range(len(events.ids)), key=lambda c: str(events.ids[c])))}
    rank = np.array([by_text[c] for c in range(len(events.ids))], dtype=np.int64)
    pid, tid, ts, dur = events.pid[ops], events.tid[ops], events.ts[ops], events.dur[ops]
    order = np.lexsort((-dur, ts, rank[tid], rank[pid]))  # stable: ties keep the file's order
    ops = ops[order]
    names = events.name_of(events.name[ops])
    self_ns: list[float] = []
    stack: list[tuple[float, int]] = []  # (end, index into self_ns)
    thread = None
    for p, t, start, length in zip(events.pid[ops].tolist(), events.tid[ops].tolist(), events.ts[ops].tolist(),
                                   events.dur[ops].tolist()):
        if (p, t) != thread:
            stack, thread = [], (p, t)
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:
            self_ns[stack[-1][1]] -= length * 1e3
        self_ns.append(length * 1e3)
        stack.append((start + length, len(self_ns) - 1))
    return names, [max(0.0, v) for v in self_ns]


def parse_operators(path: Path, head: Head) -> Parsed:
    """tinylab's operators.csv: kernel rows (device_type CUDA), else CPU operators by self time."""
    columns, rows = csv_table(path, head)
    i_key = columns.find("key")
    i_count = columns.find("count")
    i_self_cpu = columns.find("self_cpu_time_total")
    i_self_dev = columns.find("self_device_time_total", "self_cuda_time_total", required=False)
    i_type = columns.find("device_type", required=False)
    i_annot = columns.find("is_user_annotation", required=False)
    width = 1 + max(i for i in (i_key, i_count, i_self_cpu, i_self_dev, i_type, i_annot) if i is not None)
    rows, note = complete_rows(rows, width)

    def on_device(f: list[str]) -> bool:
        return i_type is not None and "cuda" in f[i_type].lower()

    annotated = {f[i_key] for _, f in rows if i_annot is not None and f[i_annot].strip().lower() == "true"}
    cpu_names = {f[i_key] for _, f in rows if not on_device(f)}
    # GPU-side user annotations (record_function spans) come as device rows; without the
    # is_user_annotation column they are told apart by also having a CPU row of the same name.
    device = [(n, f) for n, f in rows if on_device(f) and f[i_key] not in annotated and f[i_key] not in cpu_names]
    if device and i_self_dev is not None:
        records = {
            "name": [f[i_key] for _, f in device],
            "calls": [number(f[i_count], "count", n) for n, f in device],
            "total_ns": [number(f[i_self_dev], "self_device_time_total", n) * 1e3 for n, f in device],
        }
        return Parsed(build_table(pd.DataFrame(records)), "pytorch-operators", note)
    cpu = [(n, f) for n, f in rows if not on_device(f) and f[i_key] not in annotated and not f[i_key].startswith("ProfilerStep")]
    records = {
        "name": [f[i_key] for _, f in cpu],
        "calls": [number(f[i_count], "count", n) for n, f in cpu],
        "total_ns": [number(f[i_self_cpu], "self_cpu_time_total", n) * 1e3 for n, f in cpu],
    }
    return Parsed(
        build_table(pd.DataFrame(records)),
        "pytorch-operators",
        join(note, "CPU run: no device kernels; table shows operators by self CPU time"),
    )
