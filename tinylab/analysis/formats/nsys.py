"""Nsight Systems `nsys stats` CSV reports: cuda_gpu_kern_sum and cuda_gpu_trace."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from tinylab.analysis.formats._base import (
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
