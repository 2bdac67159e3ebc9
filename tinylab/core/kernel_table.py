"""The one normalized kernel table that every profiler output becomes (the floor of the analysis).

Columns (KERNEL_COLUMNS): name, calls, total_ns, avg_ns, min_ns, max_ns, pct, category.
Times are nanoseconds as floats; a time a tool does not report (legacy rocprof has no min/max,
rounded timestamps give no durations at all) is NaN, never a made-up number. `pct` is the share
of the table's total kernel time, recomputed here rather than copied from the tool, because
tools disagree on what their percentage covers (and a merged or filtered table changes it).

The table carries its provenance in `DataFrame.attrs`: "format" (detected native format) and
"note" (what the reader should know, e.g. "CPU run: no device kernels ...").

This module imports none of the readers (tinylab.analysis.formats builds on it, not the other way).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from tinylab.core.categories import categorize

KERNEL_COLUMNS = ["name", "calls", "total_ns", "avg_ns", "min_ns", "max_ns", "pct", "category"]
# ----------------------------------------------------------------------------- building tables
def build_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Normalize per-name rows (name, calls, total_ns [, min_ns, max_ns]) into the kernel table.

    Rows sharing a name are merged (several processes, several files, truncated names), then
    averages, shares and categories are derived, so every reader computes them the same way.
    """
    calls = pd.to_numeric(rows["calls"], errors="coerce").astype(float)
    keep = rows["name"].notna() & calls.map(math.isfinite) & (calls >= 0)
    rows = rows[keep]
    df = pd.DataFrame(
        {
            "name": rows["name"].astype(str).str.strip(),
            "calls": calls[keep].round(),
            "total_ns": _float_column(rows, "total_ns"),
            "min_ns": _float_column(rows, "min_ns"),
            "max_ns": _float_column(rows, "max_ns"),
        }
    )
    df = df[df["name"] != ""]
    grouped = df.groupby("name", sort=False)
    out = pd.DataFrame(
        {
            "calls": grouped["calls"].sum(),
            "total_ns": grouped["total_ns"].sum(min_count=1),
            "min_ns": grouped["min_ns"].min(),
            "max_ns": grouped["max_ns"].max(),
        }
    ).reset_index()
    return _finish(out)


def table_from_durations(names: pd.Series, durations_ns: pd.Series) -> pd.DataFrame:
    """Kernel table from one row per dispatch (trace formats); names may be a categorical."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        return table_from_codes(names.cat.codes.to_numpy(), list(names.cat.categories), durations_ns.to_numpy())
    df = pd.DataFrame({"name": names.astype(str).to_numpy(), "dur": durations_ns.astype(float).to_numpy()})
    stats = df.groupby("name", sort=False)["dur"].agg(["count", "sum", "min", "max"]).reset_index()
    stats.columns = ["name", "calls", "total_ns", "min_ns", "max_ns"]
    return _finish(stats)


def table_from_codes(codes: np.ndarray, names: Sequence[Any], durations_ns: np.ndarray) -> pd.DataFrame:
    """table_from_durations of names given as codes into `names` (distinct values): a million
    dispatches are grouped by integer, never by hashing a string each."""
    df = pd.DataFrame({"code": codes, "dur": np.asarray(durations_ns, dtype=float)})
    stats = df.groupby("code", sort=False)["dur"].agg(["count", "sum", "min", "max"]).reset_index()
    stats.columns = ["code", "calls", "total_ns", "min_ns", "max_ns"]
    stats.insert(0, "name", [str(names[c]) for c in stats.pop("code").tolist()])
    return _finish(stats)


def counts_table(names: pd.Series) -> pd.DataFrame:
    """Kernel table with call counts only, for outputs that carry no usable durations."""
    counts = names.astype(str).value_counts(sort=False)
    nan = float("nan")
    return _finish(
        pd.DataFrame(
            {"name": counts.index.to_numpy(), "calls": counts.to_numpy(), "total_ns": nan, "min_ns": nan, "max_ns": nan}
        )
    )


def _float_column(rows: pd.DataFrame, column: str) -> pd.Series:
    """Numeric column; missing, non-numeric and infinite values become NaN (unknown)."""
    if column not in rows:
        return pd.Series(float("nan"), index=rows.index, dtype=float)
    values = pd.to_numeric(rows[column], errors="coerce").astype(float)
    return values.where(values.abs() != float("inf"))


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["name"] = df["name"].astype(str)
    df["calls"] = df["calls"].astype("int64")
    for column in ("total_ns", "min_ns", "max_ns"):
        df[column] = df[column].astype(float)
    df["avg_ns"] = df["total_ns"] / df["calls"].where(df["calls"] > 0)
    total = df["total_ns"].sum(min_count=1)
    df["pct"] = 100.0 * df["total_ns"] / total if total and total > 0 else float("nan")
    df["category"] = df["name"].map(categorize).astype(str)
    df = df.sort_values(["total_ns", "calls", "name"], ascending=[False, False, True], na_position="last")
    return df[KERNEL_COLUMNS].reset_index(drop=True)


def has_durations(table: pd.DataFrame) -> bool:
    return bool(len(table)) and bool(table["total_ns"].notna().any())
