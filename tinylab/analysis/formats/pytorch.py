"""PyTorch profiler: its Chrome/Perfetto trace (device kernels, else CPU operators by self time) and
tinylab's operators.csv of key_averages()."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis.formats._base import (
    FormatError,
    Head,
    Parsed,
    complete_rows,
    join,
    json_number,
    number,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.analysis.kernel_table import build_table, table_from_durations

#: The files the PyTorch profiler adapter writes in its folder (tinylab/profilers/pytorch.py).
TRACE = "trace.json.gz"
OPERATORS_CSV = "operators.csv"
MEMORY_TIMELINE = "memory_timeline.json.gz"

#: The note of a table of CPU operators (a CPU run has no device kernels): its rows are operators.
CPU_NOTE = "CPU run: no device kernels; table shows operators by self CPU time"


def parse_events(events: list[Any]) -> Parsed:
    """Device kernels from `cat == "kernel"` events (µs); CPU operators by self time otherwise."""
    kernels_name: list[str] = []
    kernels_dur: list[float] = []
    ops: list[tuple[Any, Any, float, float, str]] = []
    wanted = {"kernel": True, "Kernel": True, "cpu_op": False, "Operator": False, "operator": False}
    for e in events:  # the hot loop of a million-event trace: cheapest test first
        if type(e) is not dict:
            continue
        cat = e.get("cat")
        is_kernel = wanted.get(cat) if type(cat) is str else None
        if is_kernel is None or e.get("ph") != "X":
            continue
        name, dur = e.get("name"), json_number(e.get("dur"))
        if not isinstance(name, str) or not dur >= 0:
            continue
        if is_kernel:
            kernels_name.append(name)
            kernels_dur.append(dur * 1e3)
        else:
            ts = json_number(e.get("ts"))
            if not math.isnan(ts):
                ops.append((_hashable(e.get("pid")), _hashable(e.get("tid")), ts, dur, name))
    if kernels_name:
        return Parsed(table_from_durations(pd.Series(kernels_name), pd.Series(kernels_dur)), "pytorch-trace", None)
    if not ops:
        raise FormatError("trace has no kernel or cpu_op events")
    names, self_ns = _self_times(ops)
    return Parsed(
        table_from_durations(pd.Series(names), pd.Series(self_ns)),
        "pytorch-trace",
        CPU_NOTE,
    )


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float)) or value is None else repr(value)


def _self_times(ops: list[tuple[Any, Any, float, float, str]]) -> tuple[list[str], list[float]]:
    """Self time of each op = its duration minus its directly nested ops, per thread."""
    ops.sort(key=lambda o: (str(o[0]), str(o[1]), o[2], -o[3]))
    names: list[str] = []
    self_ns: list[float] = []
    stack: list[tuple[float, int]] = []  # (end, index into self_ns)
    thread = None
    for pid, tid, ts, dur, name in ops:
        if (pid, tid) != thread:
            stack, thread = [], (pid, tid)
        while stack and stack[-1][0] <= ts:
            stack.pop()
        if stack:
            parent = stack[-1][1]
            self_ns[parent] -= dur * 1e3
        names.append(name)
        self_ns.append(dur * 1e3)
        stack.append((ts + dur, len(self_ns) - 1))
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
        join(note, CPU_NOTE),
    )
