"""rocprofv3 (and legacy rocprof v1) kernel statistics and the `rocprofv3 -S` summary text, and
the kernels of the measured steps from a kernel trace and the trainer's roctx step ranges.

Its per-dispatch CSVs (kernel_trace, counter_collection) are read by dispatch.py.
"""

from __future__ import annotations

import math
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
    read_text,
    unit_factor,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.analysis.kernel_table import build_table, table_from_durations
from tinylab.markers import parse_step_range

_API_NAME = re.compile(r"(?:__)?(?:hip|hsa|rccl|nccl|roctx|rocdecode|rocjpeg|rocshmem)[A-Za-z0-9_]*")


_DOMAIN_NAME = re.compile(r"(?:KERNEL_DISPATCH|HIP_|HSA_|MEMORY_|SCRATCH_|MARKER_|RCCL_|ROCDECODE|ROCJPEG|OMPT|KFD)[A-Z0-9_]*")


def parse_stats(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head)
    i_name = columns.find("Name")
    i_calls = columns.find("Calls")
    i_total = columns.find("TotalDurationNs")
    i_min = columns.find("MinNs", required=False)
    i_max = columns.find("MaxNs", required=False)
    width = 1 + max(i for i in (i_name, i_calls, i_total, i_min, i_max) if i is not None)
    rows, note = complete_rows(rows, width)
    records = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    for line_no, f in rows:
        records["name"].append(f[i_name])
        records["calls"].append(number(f[i_calls], "Calls", line_no))
        records["total_ns"].append(number(f[i_total], "TotalDurationNs", line_no))
        records["min_ns"].append(number(f[i_min], "MinNs", line_no) if i_min is not None else math.nan)
        records["max_ns"].append(number(f[i_max], "MaxNs", line_no) if i_max is not None else math.nan)
    names = records["name"]
    if names and all(_DOMAIN_NAME.fullmatch(n.strip()) for n in names):
        raise FormatError("this is a domain or memory-copy stats file, not kernel stats (use *_kernel_stats.csv)")
    if names and all(_API_NAME.fullmatch(n.strip()) for n in names):
        raise FormatError("this is a HIP/HSA API stats file, not kernel stats (use *_kernel_stats.csv)")
    fmt = "rocprofv3-kernel-stats" if i_min is not None else "rocprof-v1-stats"
    if fmt == "rocprof-v1-stats":
        note = join("legacy rocprof stats: no min/max per kernel", note)
    return Parsed(build_table(pd.DataFrame(records)), fmt, note)


def parse_summary(path: Path, head: Head) -> Parsed:
    """`rocprofv3 -S` tables: the KERNEL_DISPATCH section, else kernel rows of the combined one."""
    lines = read_text(path, head).split("\n")
    sections: dict[str, list[tuple[int, dict[str, str]]]] = {}
    current = None
    header: list[str] | None = None
    for line_no, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("ROCPROFV3 ") and s.endswith("SUMMARY:"):
            current, header = s[len("ROCPROFV3 ") : -len("SUMMARY:")].strip() or "ALL", None
            sections[current] = []
            continue
        if current is None or not s.startswith("|") or set(s) <= set("|- "):
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if header is None:
            header = [c.upper() for c in cells]
            continue
        extra = len(cells) - len(header)
        if extra < 0:
            raise FormatError(f"line {line_no}: {len(cells)} cells, the header has {len(header)}")
        cells = ["|".join(cells[: extra + 1])] + cells[extra + 1 :]  # a '|' inside a kernel name
        sections[current].append((line_no, dict(zip(header, cells))))
    rows = sections.get("KERNEL_DISPATCH") or [
        r for section in sections.values() for r in section if r[1].get("DOMAIN") == "KERNEL_DISPATCH"
    ]
    if not rows:
        raise FormatError("rocprofv3 summary has no KERNEL_DISPATCH rows (was --kernel-trace on?)")
    records = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    for line_no, row in rows:
        unit_key = next((k for k in row if k.startswith("DURATION")), None)
        if unit_key is None or "NAME" not in row or "CALLS" not in row:
            raise FormatError(f"line {line_no}: summary table without NAME/CALLS/DURATION columns")
        m = re.search(r"\((\w+)\)", unit_key)
        factor = unit_factor(m.group(1) if m else "nsec", "DURATION")
        min_key = next((k for k in row if k.startswith("MIN")), None)
        max_key = next((k for k in row if k.startswith("MAX")), None)
        records["name"].append(row["NAME"])
        records["calls"].append(number(row["CALLS"], "CALLS", line_no))
        records["total_ns"].append(number(row[unit_key], "DURATION", line_no) * factor)
        records["min_ns"].append(number(row[min_key], "MIN", line_no) * factor if min_key else math.nan)
        records["max_ns"].append(number(row[max_key], "MAX", line_no) * factor if max_key else math.nan)
    return Parsed(build_table(pd.DataFrame(records)), "rocprofv3-summary", None)


# ----------------------------------------------------------------------------- measured steps
def step_windows(marker_csvs: list[Path]) -> list[tuple[int, bool, int, int]]:
    """(step, warm-up, start ns, end ns) of every tinylab step range in rocprofv3 marker_api_trace
    files (Function = the range's message; one row per push/pop pair), sorted by start."""
    windows = []
    for path in marker_csvs:
        try:
            df = pd.read_csv(path, usecols=["Function", "Start_Timestamp", "End_Timestamp"])
        except (ValueError, OSError, pd.errors.EmptyDataError):  # not a marker trace, or no rows
            continue
        for name, start, end in df.itertuples(index=False):
            parsed = parse_step_range(str(name))
            if parsed is not None and pd.notna(start) and pd.notna(end) and end >= start:
                windows.append((parsed[0], parsed[1], int(start), int(end)))
    return sorted(windows, key=lambda w: w[2])


def measured_kernels(trace_csvs: list[Path], windows: list[tuple[int, bool, int, int]]) -> tuple[pd.DataFrame, int] | None:
    """The kernel table of the dispatches that started inside a measured (not warm-up) step range,
    and how many steps that is; None when there is no measured step range.

    The trainer synchronizes before it closes a step's range, so a step's kernels start after its
    push and end before its pop: the start alone places a dispatch.
    """
    measured = sorted((start, end) for _, warmup, start, end in windows if not warmup)
    if not measured:
        return None
    starts = np.array([s for s, _ in measured], dtype=np.float64)
    ends = np.array([e for _, e in measured], dtype=np.float64)
    names, durations = [], []
    for path in trace_csvs:
        df = pd.read_csv(path, usecols=["Kernel_Name", "Start_Timestamp", "End_Timestamp"])
        begin = pd.to_numeric(df["Start_Timestamp"], errors="coerce").to_numpy(dtype=np.float64)
        finish = pd.to_numeric(df["End_Timestamp"], errors="coerce").to_numpy(dtype=np.float64)
        slot = np.searchsorted(starts, begin, side="right") - 1  # the last range that started before it
        inside = (slot >= 0) & (begin <= ends[np.clip(slot, 0, None)])
        keep = inside & (finish >= begin)  # NaN compares false: incomplete rows drop out
        names.append(df["Kernel_Name"][keep])
        durations.append(pd.Series(finish[keep] - begin[keep]))
    table = table_from_durations(pd.concat(names, ignore_index=True), pd.concat(durations, ignore_index=True))
    return table, len(measured)
