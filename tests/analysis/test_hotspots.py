"""Hotspot summaries, kernel diffs, short names, a run's newest kernel table, and a table a rank for runs
of several ranks."""

from __future__ import annotations

import pandas as pd
import pytest
from support.tables import run_with_events, table_of

from tinylab.analysis.hotspots import (
    ALL_RANKS,
    KernelTables,
    format_ns,
    kernel_diff,
    load_kernel_tables,
    load_run_kernel_table,
    load_run_kernel_tables,
    render_text,
    summarize,
)
from tinylab.analysis.kernel_table import (
    counts_table,
)
from tinylab.errors import UserError
from tinylab.events import EventWriter
from tinylab.profilers.base import CollectResult, write_kernel_table


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


# ----------------------------------------------------------------------------- runs of several ranks
RANK0 = [("aten::mm", 10, 600.0), ("c10d::allreduce_", 2, 100.0), ("aten::add", 4, 300.0)]
RANK1 = [("aten::mm", 10, 900.0), ("c10d::allreduce_", 2, 50.0), ("aten::add", 4, 250.0)]


def ranked_run(tmp_path, tables=(RANK0, RANK1), tool="pytorch"):
    """A run of len(tables) ranks, each rank's table recorded by its own profile event."""
    run = run_with_events(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        for rank, rows in reversed(list(enumerate(tables))):  # ranks finish in any order
            ev.emit("profile", **write_kernel_table(run, tool, CollectResult({}, table_of(rows), None, "pytorch-operators"),
                                                    rank))
    return run


def test_a_run_of_two_ranks_gives_rank_0s_table_never_a_merged_one(tmp_path):
    run = ranked_run(tmp_path)
    tables = load_run_kernel_tables(run)
    assert tables.ranks == [0, 1] and tables.fmt == "pytorch-operators"
    table, rank = tables.select()
    assert rank == 0 and table["total_ns"].sum() == 1000  # rank 0's alone: merged would be 2200
    assert tables.select(1)[0]["total_ns"].sum() == 1200
    table, fmt = load_run_kernel_table(run)  # what compare, report, roofline and the exercises read
    assert table["total_ns"].sum() == 1000 and (table.attrs["rank"], table.attrs["ranks"]) == (0, [0, 1])
    with pytest.raises(UserError, match=r"^--rank 2: 20260101-000000-abcd has ranks 0, 1 \(or --rank all\)$"):
        tables.select(2)


def test_load_run_kernel_table_reads_only_rank_0s_table_and_takes_the_records_profiles(tmp_path):
    """What compare and report do: they hand in their RunRecord's profile events."""
    from tinylab.events import ProfileEvent, read_events

    run = ranked_run(tmp_path)
    profiles = [ProfileEvent.from_event(e) for e in read_events(run / "events.jsonl").of("profile")]
    (run / "profiles" / "pytorch" / "rank1" / "kernels.csv").write_text("not,a\nkernel table\n")  # never read
    (run / "events.jsonl").write_text("")  # the profiles given are used, not the run's events
    table, fmt = load_run_kernel_table(run, profiles)
    assert fmt == "pytorch-operators" and table["total_ns"].sum() == 1000
    assert (table.attrs["rank"], table.attrs["ranks"]) == (0, [0, 1])
    assert load_run_kernel_table(run, []) is None


def test_all_ranks_is_one_row_per_kernel_and_rank(tmp_path):
    table, rank = load_run_kernel_tables(ranked_run(tmp_path)).select(ALL_RANKS)
    assert rank == ALL_RANKS and list(table.columns[:2]) == ["rank", "name"]
    assert [(r.rank, r.name, r.total_ns) for r in table.head(3).itertuples()] == [
        (1, "aten::mm", 900.0), (0, "aten::mm", 600.0), (0, "aten::add", 300.0)]
    s = summarize(table, 2, None)
    assert s["total_ns"] == 2200 and [k["rank"] for k in s["kernels"]] == [1, 0]
    assert s["kernels"][0]["pct"] == 75.0  # of its own rank's kernel time (900 of 1200)
    assert s["categories"]["communication"] == {"total_ns": 150, "pct": 6.8182, "calls": 4, "kernels": 2}


def test_rank_info_compares_the_ranks(tmp_path):
    tables = load_run_kernel_tables(ranked_run(tmp_path))
    info = tables.rank_info(0)
    assert (info["rank"], info["ranks"]) == (0, [0, 1])
    assert info["per_rank"] == [
        {"rank": 0, "total_ns": 1000, "communication_ns": 100, "communication_pct": 10.0, "kernel_count": 3,
         "top_kernel": {"name": "aten::mm", "category": "gemm", "pct": 60.0}},
        {"rank": 1, "total_ns": 1200, "communication_ns": 50, "communication_pct": 4.1667, "kernel_count": 3,
         "top_kernel": {"name": "aten::mm", "category": "gemm", "pct": 75.0}}]
    assert info["spread"] == {"total_ns": {"most": 1, "least": 0, "pct": 20.0},
                              "communication_ns": {"most": 0, "least": 1, "pct": 100.0}}
    text = render_text({**summarize(tables.select(0)[0], None, None, fmt="x"), **info}, "RUN", width=80)
    assert "rank 0 of 2; --rank N for another, --rank all for one row per kernel and rank" in text
    assert "spread between ranks: kernel time +20.0% (rank 1 most, rank 0 least);\n  communication +100.0%" in text
    assert max(map(len, text.splitlines()[-6:])) <= 80


def test_ranks_come_from_the_newest_tool_and_a_one_process_source_has_none(tmp_path):
    run = ranked_run(tmp_path)
    with EventWriter(run / "events.jsonl") as ev:  # a later profiler of rank 0 only
        ev.emit("profile", **write_kernel_table(run, "rocprofv3", CollectResult({}, table_of([("Cijk_x", 2, 20.0)]), None,
                                                                                 "rocprofv3-kernel-stats"), 0))
    tables = load_run_kernel_tables(run)
    assert tables.ranks == [0] and tables.select()[0]["name"].tolist() == ["Cijk_x"]
    single = load_run_kernel_tables(run_with_events(tmp_path / "one", [
        {"event": "profile", "tool": "pytorch", "artifacts": {}, "kernel_table": None}]))
    assert single is None
    one = KernelTables({None: table_of(RANK0)}, "x", "kernels.csv")
    assert one.select()[1] is None and one.rank_info(None) == {"rank": None, "ranks": []}
    for bad in (0, ALL_RANKS):
        with pytest.raises(UserError, match=f"^--rank {bad}: kernels.csv has no ranks"):
            one.select(bad)


def test_a_folder_of_rank_folders_is_read_a_rank_at_a_time(tmp_path):
    run = ranked_run(tmp_path)
    for folder in (run / "profiles", run / "profiles" / "pytorch"):
        tables = load_kernel_tables(folder)
        assert tables.ranks == [0, 1] and tables.select(1)[0]["total_ns"].sum() == 1200
    ranked_run(tmp_path / "two", tool="rocprofv3")
    (run / "profiles" / "rocprofv3").mkdir()
    (run / "profiles" / "rocprofv3" / "rank0").mkdir()
    with pytest.raises(UserError, match="several ranks from several tools \\(pytorch, rocprofv3\\): name one"):
        load_kernel_tables(run / "profiles")


def test_a_cpu_runs_table_counts_operators_not_kernels():
    """"125 kernels" sat next to "no device kernels": a CPU run's table counts operators."""
    from support.paths import FIX

    for trace, rows in (("tinylab_cpu_v1_memory/trace.json.gz", "operators"),
                        ("cuda_h100/torchprof_trace.json.gz", "kernels")):
        tables = load_kernel_tables(FIX / "pytorch-profiler" / trace)
        table, _ = tables.select()
        summary = summarize(table, 5, None, fmt=tables.fmt)
        assert summary["rows"] == rows
        assert render_text(summary, "t").splitlines()[0].startswith(f"t  [{tables.fmt}]  {len(table)} {rows}, ")
