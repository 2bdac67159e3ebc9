"""Nsight Systems `nsys stats` CSV reports: cuda_gpu_kern_sum and cuda_gpu_trace, and for the
measured steps the dispatches of cuda_gpu_trace and the ranges of nvtx_pushpop_trace.

Both reports time events on the session's clock in ns (their scripts select `start` as
"Start:ts_ns" from CUPTI_ACTIVITY_KIND_KERNEL and NVTX_EVENTS), written "Start (ns)" in CSV;
nvtx_pushpop_trace's Name is "<domain>:<message>" (":tinylab step 3" for torch's default domain).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from tinylab.analysis.formats._base import (
    Columns,
    FormatError,
    Head,
    Parsed,
    complete_rows,
    number,
    unit_factor,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.analysis.kernel_table import build_table, table_from_durations


def parse_kern_sum(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head, stop_at_blank=True)
    i_name = columns.find("Name")
    i_total, unit = columns.match(r"total time(?:\s*\((\w+)\))?")
    factor = unit_factor(unit or "ns", "Total Time")
    i_calls = columns.match(r"instances|calls|count")[0]
    i_min = (columns.match(r"min(?:imum)?(?:\s*\(\w+\))?", required=False) or (None,))[0]
    i_max = (columns.match(r"max(?:imum)?(?:\s*\(\w+\))?", required=False) or (None,))[0]
    rows, note = complete_rows(rows, 1 + max(i for i in (i_name, i_total, i_calls, i_min, i_max) if i is not None))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [number(f[i_calls], "Instances", n) for n, f in rows],
        "total_ns": [number(f[i_total], "Total Time", n) * factor for n, f in rows],
        "min_ns": [number(f[i_min], "Min", n) * factor if i_min is not None else math.nan for n, f in rows],
        "max_ns": [number(f[i_max], "Max", n) * factor if i_max is not None else math.nan for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "nsys-kern-sum", note)


def parse_gpu_trace(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head, stop_at_blank=True)
    i_name = columns.find("Name")
    i_dur, unit = columns.match(r"duration\s*\((\w+)\)")
    factor = unit_factor(unit, "Duration")
    rows, note = complete_rows(rows, 1 + max(i_name, i_dur))
    names = pd.Series([f[i_name] for _, f in rows], dtype=object)
    durations = pd.Series([number(f[i_dur], "Duration", n) * factor for n, f in rows], dtype=float)
    valid = durations.notna()
    return Parsed(table_from_durations(names[valid], durations[valid]), "nsys-gpu-trace", note)


def _timed_frame(path: Path, *columns: str) -> tuple[pd.DataFrame, dict[str, float]]:
    """An nsys stats CSV written with --output, and the ns factor of each of `columns` (a time
    column's unit is in its name: "Start (ns)"; --timeunit changes it)."""
    df = pd.read_csv(path)
    header = Columns([str(c) for c in df.columns])
    picked, factors = {}, {}
    for want in columns:
        found = header.match(rf"{want}(?:\s*\((\w+)\))?", required=False)
        if found is None:  # Columns' own message would name the pattern, not the column
            raise FormatError(f"{path.name}: no {want!r} column (columns: {', '.join(df.columns[:8])})")
        picked[want] = df.columns[found[0]]
        factors[want] = unit_factor(found[1], want) if found[1] else 1.0
    return df.rename(columns={v: k for k, v in picked.items()}), factors


def gpu_trace_dispatches(path: Path) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(names, start ns, end ns) of every kernel and copy in a cuda_gpu_trace CSV."""
    df, factor = _timed_frame(path, "name", "start", "duration")
    starts = pd.to_numeric(df["start"], errors="coerce").to_numpy(dtype=np.float64) * factor["start"]
    durations = pd.to_numeric(df["duration"], errors="coerce").to_numpy(dtype=np.float64) * factor["duration"]
    return df["name"].astype(str), starts, starts + durations


def pushpop_ranges(path: Path) -> list[tuple[str, float, float]]:
    """(name, start ns, end ns) of every range in an nvtx_pushpop_trace CSV."""
    df, factor = _timed_frame(path, "name", "start", "end")
    starts = pd.to_numeric(df["start"], errors="coerce") * factor["start"]
    ends = pd.to_numeric(df["end"], errors="coerce") * factor["end"]
    return [(str(n), s, e) for n, s, e in zip(df["name"], starts, ends) if pd.notna(s) and pd.notna(e)]
