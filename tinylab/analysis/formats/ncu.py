"""Nsight Compute --csv: the details page (one row a launch and metric) or the raw page."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from tinylab.analysis.formats._base import (
    FormatError,
    Head,
    Parsed,
    complete_rows,
    join,
    number,
    unit_factor,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.core.kernel_table import counts_table, table_from_durations

_NCU_DURATION_METRICS = ("gpu__time_duration.sum", "gpu__time_duration.avg", "gpu__time_duration", "duration")


def parse(path: Path, head: Head) -> Parsed:
    """Nsight Compute --csv: details page (one row per launch x metric) or raw page (one per launch)."""
    columns, rows = csv_table(path, head, stop_at_blank=True)
    i_id = columns.find("ID")
    i_name = columns.find("Kernel Name")
    i_pid = columns.find("Process ID", required=False)
    i_metric = columns.find("Metric Name", required=False)
    i_value = columns.find("Metric Value", required=False)
    i_unit = columns.find("Metric Unit", required=False)
    names: dict[tuple[str, str], str] = {}
    durations: dict[tuple[str, str], float] = {}
    note = None
    if i_metric is not None and i_value is not None:
        rows, note = complete_rows(rows, 1 + max(i_id, i_name, i_metric, i_value))
        for line_no, f in rows:
            key = (f[i_pid] if i_pid is not None else "", f[i_id])
            names.setdefault(key, f[i_name])
            if f[i_metric].strip().lower() in _NCU_DURATION_METRICS and key not in durations:
                unit = f[i_unit] if i_unit is not None else "ns"
                durations[key] = number(f[i_value], "Metric Value", line_no) * unit_factor(unit or "ns", f"line {line_no}")
    else:
        i_dur = columns.find(*_NCU_DURATION_METRICS[:3], required=False)
        unit = "ns"
        if rows and (len(rows[0][1]) <= i_id or not rows[0][1][i_id].strip()):  # raw page: row 2 holds the units
            units_row = rows.pop(0)[1]
            if i_dur is not None and i_dur < len(units_row) and units_row[i_dur].strip():
                unit = units_row[i_dur]
        rows, note = complete_rows(rows, 1 + max(i for i in (i_id, i_name, i_dur) if i is not None))
        for line_no, f in rows:
            key = (f[i_pid] if i_pid is not None else "", f[i_id])
            names[key] = f[i_name]
            if i_dur is not None:
                durations[key] = number(f[i_dur], columns.names[i_dur], line_no) * unit_factor(unit, "the units row")
    if not names:
        raise FormatError("ncu header but no profiled kernels")
    keys = list(names)
    if not any(not math.isnan(durations.get(k, math.nan)) for k in keys):
        return Parsed(
            counts_table(pd.Series([names[k] for k in keys])),
            "ncu",
            join(note, "no gpu__time_duration metric in this ncu output: launch counts only "
                  "(profile with --metrics gpu__time_duration.sum)"),
        )
    timed = [k for k in keys if not math.isnan(durations.get(k, math.nan))]
    if len(timed) < len(keys):
        note = join(note, f"{len(keys) - len(timed)} launches without a duration were skipped")
    table = table_from_durations(pd.Series([names[k] for k in timed]), pd.Series([durations[k] for k in timed]))
    return Parsed(table, "ncu", join(note, "ncu serializes and replays kernels: times are per isolated launch"))
