"""PyTorch profiler: its Chrome/Perfetto trace (device kernels, else CPU operators by self time) and
tinylab's operators.csv of key_averages()."""

from __future__ import annotations

import re
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
from tinylab.core.kernel_table import build_table, table_from_codes

#: The note of a table of CPU operators (a CPU run has no device kernels): its rows are operators.
CPU_NOTE = "CPU run: no device kernels; table shows operators by self CPU time"

#: Kineto's categories of device kernels (older traces: "Kernel") and of CPU operators.
KERNEL_CATS = ("kernel", "Kernel")
KERNELS = frozenset(KERNEL_CATS)
OPERATOR_CATS = ("cpu_op", "Operator", "operator")
OPERATORS = frozenset(OPERATOR_CATS)
#: Kineto's deviceProperties with a device in it (a CPU run's list is empty), before the events.
_DEVICES = re.compile(rb'"deviceProperties"\s*:\s*\[\s*\{')


def lists_devices(head: bytes) -> bool:
    """Whether a trace's first bytes list a GPU: its table will be of kernels, as a rule."""
    return bool(_DEVICES.search(head))


def parse_trace(events: TraceEvents) -> Parsed:
    """Device kernels from `cat == "kernel"` events (µs); CPU operators by self time otherwise
    (events read whole, or only the categories a table is made of: `events.only`)."""
    named = events.named()
    kernels = events.of_cats(KERNEL_CATS) & named
    if kernels.any():
        table = table_from_codes(events.name[kernels], events.names, events.dur[kernels] * 1e3)
        return Parsed(table, "pytorch-trace", None)
    ops = np.flatnonzero(events.of_cats(OPERATOR_CATS) & named & ~np.isnan(events.ts))
    if not len(ops):
        raise FormatError("trace has no kernel or cpu_op events")
    return Parsed(
        table_from_codes(*_self_times(events, ops)),
        "pytorch-trace",
        CPU_NOTE,
    )


def _self_times(events: TraceEvents, ops: np.ndarray) -> tuple[np.ndarray, tuple[str | None, ...], np.ndarray]:
    """(name codes, names, self ns) of the ops: self time = an op's duration minus its directly
    nested ops', per thread (threads in the order of their ids as text, ops by start, the longer
    first); each op's parent is the innermost op still open when it starts."""
    by_text = sorted(range(len(events.ids)), key=lambda c: str(events.ids[c]))
    rank = np.empty(len(events.ids), dtype=np.int64)
    rank[by_text] = np.arange(len(by_text))
    pid, tid, ts, dur = events.pid[ops], events.tid[ops], events.ts[ops], events.dur[ops]
    order = np.lexsort((-dur, ts, rank[tid], rank[pid]))  # stable: ties keep the file's order
    ops, pid, tid, ts, dur = ops[order], pid[order], tid[order], ts[order], dur[order]
    new_thread = np.ones(len(ops), dtype=bool)
    new_thread[1:] = (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])
    parent = np.full(len(ops), -1, dtype=np.int64)
    starts, ends, fresh = ts.tolist(), (ts + dur).tolist(), new_thread.tolist()
    stack: list[int] = []
    for i, start in enumerate(starts):
        if fresh[i]:
            stack = []
        while stack and ends[stack[-1]] <= start:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    dur_ns = dur * 1e3
    self_ns = dur_ns.copy()
    nested = parent >= 0
    np.subtract.at(self_ns, parent[nested], dur_ns[nested])  # one op at a time, in the order they were met
    return events.name[ops], events.names, np.where(self_ns > 0.0, self_ns, 0.0)


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
        join(note, CPU_NOTE),
    )
