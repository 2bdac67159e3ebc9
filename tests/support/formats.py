"""Helpers of the format-reader tests: the expected table from a list of dispatches, comparisons."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import samples
from support.paths import FIX
from tinylab.core.kernel_table import KERNEL_COLUMNS

ROCM7 = FIX / "rocprofv3/rocm7-docs-data"
DISPATCHES = samples.rocm7_dispatches()
EXPECTED = samples.expected_from_dispatches(DISPATCHES)
ADDITION = "void addition_kernel<float>(float*, float const*, float const*, int, int)"


def rows(table) -> dict[str, dict]:
    return {r["name"]: r for r in table.to_dict("records")}


def assert_matches(table, expected: dict, min_max: bool = True, rel: float = 0.0) -> None:
    got = rows(table)
    assert set(got) == set(expected)
    for name, (calls, total, lo, hi) in expected.items():
        r = got[name]
        assert r["calls"] == calls, name
        assert r["total_ns"] == pytest.approx(total, rel=rel), name
        assert r["avg_ns"] == pytest.approx(total / calls, rel=max(rel, 1e-9)), name
        if min_max:
            assert r["min_ns"] == pytest.approx(lo, rel=rel) and r["max_ns"] == pytest.approx(hi, rel=rel), name
    assert list(table.columns) == KERNEL_COLUMNS
    assert list(table["total_ns"]) == sorted(table["total_ns"], reverse=True)
    assert table["pct"].sum() == pytest.approx(100.0)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
