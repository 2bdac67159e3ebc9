"""Nsight Compute --csv pages.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest
from support import samples
from support.formats import (
    DISPATCHES,
    EXPECTED,
    assert_matches,
    rows,
    write,
)
from support.paths import FIX

from tinylab.analysis.hotspots import load_kernel_table


def _ncu_expected(path: Path, raw: bool) -> dict[str, tuple[int, float]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    out: dict[str, list] = defaultdict(lambda: [0, 0.0])
    reader = csv.DictReader(lines[start:])
    for r in reader:
        if raw and r["ID"] == "":
            continue  # the units row
        if not raw and r["Metric Name"] != "gpu__time_duration.sum":
            continue
        value = r["gpu__time_duration.sum"] if raw else r["Metric Value"]
        out[r["Kernel Name"]][0] += 1
        out[r["Kernel Name"]][1] += float(value.replace(",", ""))
    return {k: tuple(v) for k, v in out.items()}


@pytest.mark.parametrize("name,raw", [("ncu_details_metrics.csv", False), ("ncu_raw.csv", True)])
def test_ncu_csv_pages(name, raw):
    path = FIX / "ncu/h100_ncu2025.3" / name
    table, fmt = load_kernel_table(path)
    assert fmt == "ncu"
    expected = _ncu_expected(path, raw)
    got = rows(table)
    assert {k: (v["calls"], v["total_ns"]) for k, v in got.items()} == expected
    assert any(v > 1000 for _, v in expected.values())  # thousands separators were parsed, not dropped


def test_ncu_sections_duration_in_microseconds(tmp_path):
    table, fmt = load_kernel_table(write(tmp_path, "ncu.log", samples.ncu_details_sections(DISPATCHES)))
    assert fmt == "ncu"
    assert_matches(table, EXPECTED, rel=1e-6)
