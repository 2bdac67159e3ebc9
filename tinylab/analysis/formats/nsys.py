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
from tinylab.analysis.formats.detect import csv_table, header_offset
from tinylab.analysis.formats.dispatch import read_columns
from tinylab.core.kernel_table import build_table, table_from_durations
from tinylab.core.safeio import open_regular


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
    """One row a kernel or copy: often a million rows, read by pandas' C parser (only the name,
    start and duration columns); a table it cannot take as plain numbers (thousands separators,
    short rows, another report after it) is read row by row, as a small table is."""
    offset, header, _ = header_offset(path, head)
    columns = Columns(header)
    i_name = columns.find("Name")
    i_dur, unit = columns.match(r"duration\s*\((\w+)\)")
    factor = unit_factor(unit, "Duration")
    i_start = (columns.match(r"start(?:\s*\(\w+\))?", required=False) or (None,))[0]
    wanted = sorted({i for i in (i_name, i_dur, i_start) if i is not None})
    try:
        df, last_complete = read_columns(path, offset, header, wanted, i_name, blank_lines=True)
    except (pd.errors.ParserError, FormatError):
        df = None
    if df is not None:
        blank = df.isna().all(axis=1).to_numpy()
        if blank.any():  # the table ends at its first blank line (nsys stats prints reports one after another)
            df = df.iloc[: int(blank.argmax())] if blank.argmax() > 0 else df.iloc[0:0]
        note = None
        if not last_complete and not blank.any() and len(df):
            df, note = df.iloc[:-1], "the last row was incomplete (truncated file?) and was skipped"
        plain = _numbers(df, [f"c{i}" for i in wanted if i != i_name])
        if plain and len(df) and not df.isna().any(axis=None):
            durations = df[f"c{i_dur}"].astype(float) * factor
            return Parsed(table_from_durations(df[f"c{i_name}"], durations), "nsys-gpu-trace", note)
    return _gpu_trace_rows(path, head)


def _numbers(df: pd.DataFrame, columns: list[str]) -> bool:
    """Whether the columns hold plain numbers only; text (the table ended in another report that
    pandas read too) becomes numbers as float() reads them, in place."""
    for column in columns:
        if not pd.api.types.is_numeric_dtype(df[column]):
            try:
                df[column] = df[column].map(float).astype(float)
            except (TypeError, ValueError):
                return False
    return True


def _gpu_trace_rows(path: Path, head: Head) -> Parsed:
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
    """Only `columns` of an nsys stats CSV written with --output (its "name" as a categorical), and
    the ns factor of each (a time column's unit is in its name: "Start (ns)"; --timeunit changes it)."""
    with open_regular(path) as fh:
        names = [str(c) for c in pd.read_csv(fh, nrows=0).columns]
    header = Columns(names)
    picked, factors = {}, {}
    for want in columns:
        found = header.match(rf"{want}(?:\s*\((\w+)\))?", required=False)
        if found is None:  # Columns' own message would name the pattern, not the column
            raise FormatError(f"{path.name}: no {want!r} column (columns: {', '.join(names[:8])})")
        picked[want] = found[0]
        factors[want] = unit_factor(found[1], want) if found[1] else 1.0
    with open_regular(path) as fh:
        df = pd.read_csv(fh, header=0, names=[f"c{i}" for i in range(len(names))], usecols=sorted(picked.values()),
                         dtype={f"c{picked['name']}": "category"} if "name" in picked else None)
    return df.rename(columns={f"c{i}": want for want, i in picked.items()}), factors


def gpu_trace_dispatches(path: Path) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(names, start ns, end ns) of every kernel and copy in a cuda_gpu_trace CSV."""
    df, factor = _timed_frame(path, "name", "start", "duration")
    starts = pd.to_numeric(df["start"], errors="coerce").to_numpy(dtype=np.float64) * factor["start"]
    durations = pd.to_numeric(df["duration"], errors="coerce").to_numpy(dtype=np.float64) * factor["duration"]
    return df["name"], starts, starts + durations


def pushpop_ranges(path: Path) -> list[tuple[str, float, float]]:
    """(name, start ns, end ns) of every range in an nvtx_pushpop_trace CSV."""
    df, factor = _timed_frame(path, "name", "start", "end")
    starts = pd.to_numeric(df["start"], errors="coerce") * factor["start"]
    ends = pd.to_numeric(df["end"], errors="coerce") * factor["end"]
    return [(str(n), s, e) for n, s, e in zip(df["name"], starts, ends) if pd.notna(s) and pd.notna(e)]
