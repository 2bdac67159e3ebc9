"""rocprof-compute (formerly Omniperf): its workload folder (where it is, the longest dispatch, the
roofline ceilings) and `analyze`'s pmc_kernel_top.csv. The workload's per-dispatch files
(timestamps.csv, pmc_perf.csv) are read by dispatch.py.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis.formats._base import (
    Head,
    Parsed,
    complete_rows,
    number,
    unit_factor,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.analysis.kernel_table import build_table


def parse_top(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head)
    i_name = columns.find("Kernel_Name")
    i_count = columns.find("Count")
    i_sum, unit = columns.match(r"sum\((\w+)\)")
    factor = unit_factor(unit, "Sum(...)")
    rows, note = complete_rows(rows, 1 + max(i_name, i_count, i_sum))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [number(f[i_count], "Count", n) for n, f in rows],
        "total_ns": [number(f[i_sum], "Sum", n) * factor for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocprof-compute-top", note)


def find_workload(root: Path) -> Path | None:
    """The folder holding pmc_perf.csv/timestamps.csv: root itself or a <gpu_model> child."""
    markers = ("timestamps.csv", "pmc_perf.csv", "pmc_kernel_top.csv")
    if not root.is_dir():
        return None
    if any((root / m).is_file() for m in markers):
        return root
    for child in sorted(p for p in root.rglob("*") if p.is_dir()):
        if any((child / m).is_file() for m in markers):
            return child
    return None


def longest_dispatch(workload: Path) -> int | None:
    """Dispatch_ID of the longest dispatch, the one worth a detailed look: from timestamps.csv, or
    from pmc_perf.csv where there is no timestamps pass (7.0's rocprofv3 backend)."""
    path = next((p for p in (workload / "timestamps.csv", workload / "pmc_perf.csv") if p.is_file()), None)
    if path is None:
        return None
    best: tuple[float, int] | None = None
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        for row in csv.DictReader(fh):
            lowered = {(k or "").strip().lower(): v for k, v in row.items()}
            try:
                dispatch = int(float(lowered["dispatch_id"]))
                duration = float(lowered["end_timestamp"]) - float(lowered["start_timestamp"])
            except (KeyError, TypeError, ValueError):
                continue
            if math.isfinite(duration) and (best is None or duration > best[0]):
                best = (duration, dispatch)
    return best[1] if best else None


def read_roofline(workload: Path) -> dict[str, Any] | None:
    """Empirical ceilings from roofline.csv (mean over its device rows), or None.

    Bandwidths are GB/s and FLOP rates GFLOP/s, as rocprof-compute's microbenchmarks report them.
    """
    path = workload / "roofline.csv"
    if not path.is_file():
        return None
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        rows = list(csv.DictReader(fh))
    peaks: dict[str, float] = {}
    for column in rows[0].keys() if rows else ():
        if not column or column.lower() == "device" or column.lower().endswith(("low", "high")):
            continue
        values = []
        for row in rows:
            try:
                values.append(float(row[column]))
            except (TypeError, ValueError):
                pass
        if values:
            peaks[column] = sum(values) / len(values)
    return {"source": str(path), "devices": len(rows), "peaks": peaks} if peaks else None
