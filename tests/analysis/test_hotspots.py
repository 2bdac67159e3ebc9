"""Hotspot summaries, kernel diffs, short names, and a run's newest kernel table."""

from __future__ import annotations

import pandas as pd
import pytest
from support.tables import run_with_events, table_of

from tinylab.analysis.hotspots import (
    format_ns,
    kernel_diff,
    load_run_kernel_table,
    render_text,
    summarize,
)
from tinylab.analysis.kernel_table import (
    counts_table,
)
from tinylab.errors import UserError
from tinylab.events import EventWriter
from tinylab.profilers import CollectResult, write_kernel_table


def test_summarize_top_category_and_totals():
    t = table_of([("a_gemm", 1, 500.0), ("b_add", 10, 300.0), ("c_mul", 5, 150.0), ("d_sum", 1, 50.0)])
    s = summarize(t, 2, None, fmt="x", note="n")
    assert (s["format"], s["note"], s["total_ns"], s["kernel_count"]) == ("x", "n", 1000, 4)
    assert [k["name"] for k in s["kernels"]] == ["a_gemm", "b_add"]
    assert s["categories"]["elementwise"] == {"total_ns": 450, "pct": 45.0, "calls": 15, "kernels": 2}
    assert list(s["categories"]) == ["gemm", "elementwise", "reduction"]
    only = summarize(t, None, "elementwise")
    assert [k["name"] for k in only["kernels"]] == ["b_add", "c_mul"]
    assert only["total_ns"] == 1000 and only["kernels"][1]["pct"] == 15.0  # share of ALL kernel time
    with pytest.raises(UserError, match="unknown category 'conv': choose one of gemm, attention"):
        summarize(t, None, "conv")


def test_summarize_counts_only_table_sorts_by_calls():
    s = summarize(counts_table(pd.Series(["a_add", "b_mul", "b_mul", "c_gemm", "c_gemm", "c_gemm"])), None, None)
    assert s["total_ns"] is None
    assert [(k["name"], k["calls"], k["total_ns"], k["pct"]) for k in s["kernels"]] == [
        ("c_gemm", 3, None, None), ("b_mul", 2, None, None), ("a_add", 1, None, None)]
    assert s["categories"]["elementwise"] == {"total_ns": None, "pct": None, "calls": 3, "kernels": 2}


def test_kernel_diff():
    a = table_of([("gemm_a", 10, 1000.0), ("softmax_k", 10, 500.0), ("gone", 1, 50.0)])
    b = table_of([("gemm_a", 10, 900.0), ("softmax_k", 10, 100.0), ("flash_fwd", 10, 200.0)])
    d = kernel_diff(a, b, top=10)
    assert d["appeared"] == [{"name": "flash_fwd", "total_ns": 200, "calls": 10, "category": "attention"}]
    assert d["disappeared"] == [{"name": "gone", "total_ns": 50, "calls": 1, "category": "other"}]
    assert [c["name"] for c in d["changed"]] == ["softmax_k", "gemm_a"]  # by |delta|: 400 before 100
    assert d["changed"][0] == {"name": "softmax_k", "a_total_ns": 500, "b_total_ns": 100, "ratio": 0.2, "a_calls": 10, "b_calls": 10}
    assert kernel_diff(a, b, top=1)["changed"] == d["changed"][:1]


def test_format_ns():
    assert [format_ns(v) for v in (None, float("nan"), 950, 12_345, 4_560_000, 2.5e9)] == ["-", "-", "950 ns", "12.3 us", "4.56 ms", "2.5 s"]


def test_load_run_kernel_table_takes_the_newest_profile_with_a_table(tmp_path):
    run = run_with_events(tmp_path, [])
    older = write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 1, 10.0)]), "cpu", "pytorch-operators"))
    newer = write_kernel_table(run, "rocprofv3", CollectResult({}, table_of([("Cijk_x", 2, 20.0)]), None, "rocprofv3-kernel-stats"))
    none = write_kernel_table(run, "deepspeed", CollectResult({}, None, "flops", "deepspeed-flops"))
    with EventWriter(run / "events.jsonl") as ev:
        for fields in (older, newer, none):
            ev.emit("profile", **fields)
    table, fmt = load_run_kernel_table(run)
    assert fmt == "rocprofv3-kernel-stats" and table["name"].tolist() == ["Cijk_x"]
    assert load_run_kernel_table(run_with_events(tmp_path / "other", [{"event": "start"}])) is None




def test_render_text_keeps_the_names_aligned_with_a_communication_kernel():
    t = table_of([("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 4, 800.0), ("ampere_sgemm_128x64_tn", 2, 200.0)])
    lines = render_text(summarize(t, None, None, fmt="x"), "src").splitlines()
    starts = {line.index(name) for line, name in zip(lines[1:3], ("name", "ncclDevKernel"))}
    starts.add(lines[3].index("ampere sgemm"))  # short names (analysis.names)
    assert len(starts) == 1, lines
    assert "communication" in lines[2] and lines[-1].startswith("by category: communication 80.0%")
