"""tinylab's own normalized kernels.csv (what a run stores under profiles/<tool>/)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis.formats._base import Head, Parsed, complete_rows, number
from tinylab.analysis.formats.detect import csv_table
from tinylab.core.kernel_table import build_table
from tinylab.core.text import csv_text


def parse(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head)
    idx = {c: columns.find(c, required=c in ("name", "calls", "total_ns")) for c in ("name", "calls", "total_ns", "min_ns", "max_ns")}
    rows, note = complete_rows(rows, 1 + max(i for i in idx.values() if i is not None))
    records: dict[str, list[Any]] = {"name": [csv_text(f[idx["name"]]) for _, f in rows]}  # as base wrote it
    for column in ("calls", "total_ns", "min_ns", "max_ns"):
        i = idx[column]
        records[column] = [number(f[i], column, n) if i is not None else math.nan for n, f in rows]
    return Parsed(build_table(pd.DataFrame(records)), "tinylab", note)
