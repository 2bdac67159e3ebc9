"""rocprofv3 (and legacy rocprof v1) kernel statistics and the `rocprofv3 -S` summary text, and the
dispatches and roctx ranges of its kernel and marker traces (tinylab.core.steps cuts them to
the measured steps).

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
from tinylab.core.kernel_table import build_table
from tinylab.core.safeio import open_regular

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
def marker_ranges(marker_csvs: list[Path]) -> list[tuple[str, object, object]]:
    """(name, start ns, end ns) of every range in rocprofv3 marker_api_trace files (Function = the
    range's message; one row per push/pop pair, on the kernels' clock)."""
    ranges = []
    for path in marker_csvs:
        try:
            df = pd.read_csv(path, usecols=["Function", "Start_Timestamp", "End_Timestamp"])
        except (ValueError, OSError, pd.errors.EmptyDataError):  # not a marker trace, or no rows
            continue
        ranges += [(str(n), s, e) for n, s, e in df.itertuples(index=False) if pd.notna(s) and pd.notna(e)]
    return ranges


def trace_dispatches(trace_csvs: list[Path]) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(names, start ns, end ns) of every dispatch in rocprofv3 kernel_trace files."""
    frames = []
    for path in trace_csvs:
        with open_regular(path) as fh:  # names as a categorical: a million rows, a few hundred names
            frames.append(pd.read_csv(fh, usecols=["Kernel_Name", "Start_Timestamp", "End_Timestamp"],
                                      dtype={"Kernel_Name": "category"}))
    df = pd.concat(frames, ignore_index=True)
    return (df["Kernel_Name"], pd.to_numeric(df["Start_Timestamp"], errors="coerce").to_numpy(dtype=np.float64),
            pd.to_numeric(df["End_Timestamp"], errors="coerce").to_numpy(dtype=np.float64))
