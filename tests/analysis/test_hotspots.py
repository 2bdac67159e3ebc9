"""Hotspot summaries, kernel diffs, short names, a run's newest kernel table, and a table a rank for runs
of several ranks."""

from __future__ import annotations

import pandas as pd
import pytest
from support.tables import RANK0, ranked_run, run_with_events, table_of

from tinylab.analysis.hotspots import (
    ALL_RANKS,
    KernelTables,
    kernel_diff,
    load_kernel_tables,
    load_run_kernel_table,
    load_run_kernel_tables,
    summarize,
)
from tinylab.analysis.hotspots_result import CategoryTime, RankInfo
from tinylab.core.kernel_table import (
    counts_table,
)
from tinylab.core.errors import UserError
from tinylab.core.eventlog import EventWriter
from tinylab.core.events import ProfileEvent
from tinylab.profilers.base import CollectResult, write_kernel_table


def test_summarize_top_category_and_totals():
    t = table_of([("a_gemm", 1, 500.0), ("b_add", 10, 300.0), ("c_mul", 5, 150.0), ("d_sum", 1, 50.0)])
    s = summarize(t, 2, None, fmt="x", note="n")
    assert (s.format, s.note, s.total_ns, s.kernel_count) == ("x", "n", 1000, 4)
    assert [k.name for k in s.kernels] == ["a_gemm", "b_add"]
    assert s.categories["elementwise"] == CategoryTime(total_ns=450, pct=45.0, calls=15, kernels=2)
    assert list(s.categories) == ["gemm", "elementwise", "reduction"]
    assert s.to_json() == {  # the `hotspots --json` object, less its source
        "format": "x", "total_ns": 1000, "kernel_count": 4, "rows": "kernels", "note": "n",
        "categories": {"gemm": {"total_ns": 500, "pct": 50.0, "calls": 1, "kernels": 1},
                       "elementwise": {"total_ns": 450, "pct": 45.0, "calls": 15, "kernels": 2},
                       "reduction": {"total_ns": 50, "pct": 5.0, "calls": 1, "kernels": 1}},
        "kernels": [{"name": "a_gemm", "calls": 1, "total_ns": 500, "avg_ns": 500, "min_ns": None, "max_ns": None,
                     "pct": 50.0, "category": "gemm"},
                    {"name": "b_add", "calls": 10, "total_ns": 300, "avg_ns": 30, "min_ns": None, "max_ns": None,
                     "pct": 30.0, "category": "elementwise"}]}
    only = summarize(t, None, "elementwise")
    assert [k.name for k in only.kernels] == ["b_add", "c_mul"]
    assert only.total_ns == 1000 and only.kernels[1].pct == 15.0  # share of ALL kernel time
    with pytest.raises(UserError, match="unknown category 'conv': choose one of gemm, attention"):
        summarize(t, None, "conv")


def test_summarize_counts_only_table_sorts_by_calls():
    s = summarize(counts_table(pd.Series(["a_add", "b_mul", "b_mul", "c_gemm", "c_gemm", "c_gemm"])), None, None)
    assert s.total_ns is None
    assert [(k.name, k.calls, k.total_ns, k.pct) for k in s.kernels] == [
        ("c_gemm", 3, None, None), ("b_mul", 2, None, None), ("a_add", 1, None, None)]
    assert s.categories["elementwise"] == CategoryTime(total_ns=None, pct=None, calls=3, kernels=2)


def test_kernel_diff():
    a = table_of([("gemm_a", 10, 1000.0), ("softmax_k", 10, 500.0), ("gone", 1, 50.0)])
    b = table_of([("gemm_a", 10, 900.0), ("softmax_k", 10, 100.0), ("flash_fwd", 10, 200.0)])
    d = kernel_diff(a, b, top=10)
    data = d.to_json()  # what `compare --json` carries
    assert data["appeared"] == [{"name": "flash_fwd", "total_ns": 200, "calls": 10, "category": "attention"}]
    assert data["disappeared"] == [{"name": "gone", "total_ns": 50, "calls": 1, "category": "other"}]
    assert [c.name for c in d.changed] == ["softmax_k", "gemm_a"]  # by |delta|: 400 before 100
    assert data["changed"][0] == {"name": "softmax_k", "a_total_ns": 500, "b_total_ns": 100, "ratio": 0.2, "a_calls": 10, "b_calls": 10}
    assert kernel_diff(a, b, top=1).changed == d.changed[:1]


def test_load_run_kernel_table_takes_the_newest_profile_with_a_table(tmp_path):
    run = run_with_events(tmp_path, [])
    older = write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 1, 10.0)]), "cpu", "pytorch-operators"))
    newer = write_kernel_table(run, "rocprofv3", CollectResult({}, table_of([("Cijk_x", 2, 20.0)]), None, "rocprofv3-kernel-stats"))
    none = write_kernel_table(run, "deepspeed", CollectResult({}, None, "flops", "deepspeed-flops"))
    with EventWriter(run / "events.jsonl") as ev:
        for fields in (older, newer, none):
            ev.emit(ProfileEvent(**fields))
    table, fmt = load_run_kernel_table(run)
    assert fmt == "rocprofv3-kernel-stats" and table["name"].tolist() == ["Cijk_x"]
    assert load_run_kernel_table(run_with_events(tmp_path / "other", [{"event": "start"}])) is None


# ----------------------------------------------------------------------------- runs of several ranks
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
    from tinylab.core.eventlog import read_events
    from tinylab.core.events import ProfileEvent

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
    assert s.total_ns == 2200 and [k.rank for k in s.kernels] == [1, 0]
    assert s.kernels[0].pct == 75.0  # of its own rank's kernel time (900 of 1200)
    assert s.to_json()["kernels"][0]["rank"] == 1  # whose row it is, first
    assert s.categories["communication"] == CategoryTime(total_ns=150, pct=6.8182, calls=4, kernels=2)


def test_rank_info_compares_the_ranks(tmp_path):
    tables = load_run_kernel_tables(ranked_run(tmp_path))
    info = tables.rank_info(0)
    assert (info.rank, info.ranks) == (0, (0, 1))
    data = info.to_json()  # what `hotspots --json` carries beside the table
    assert (data["rank"], data["ranks"]) == (0, [0, 1])
    assert data["per_rank"] == [
        {"rank": 0, "total_ns": 1000, "communication_ns": 100, "communication_pct": 10.0, "kernel_count": 3,
         "top_kernel": {"name": "aten::mm", "category": "gemm", "pct": 60.0}},
        {"rank": 1, "total_ns": 1200, "communication_ns": 50, "communication_pct": 4.1667, "kernel_count": 3,
         "top_kernel": {"name": "aten::mm", "category": "gemm", "pct": 75.0}}]
    assert data["spread"] == {"total_ns": {"most": 1, "least": 0, "pct": 20.0},
                              "communication_ns": {"most": 0, "least": 1, "pct": 100.0}}
    assert tables.summarize(0) == summarize(tables.select(0)[0], None, None, fmt=tables.fmt).with_ranks(info)


def test_ranks_come_from_the_newest_tool_and_a_one_process_source_has_none(tmp_path):
    run = ranked_run(tmp_path)
    with EventWriter(run / "events.jsonl") as ev:  # a later profiler of rank 0 only
        ev.emit(ProfileEvent(**write_kernel_table(run, "rocprofv3", CollectResult({}, table_of([("Cijk_x", 2, 20.0)]),
                                                                                  None, "rocprofv3-kernel-stats"), 0)))
    tables = load_run_kernel_tables(run)
    assert tables.ranks == [0] and tables.select()[0]["name"].tolist() == ["Cijk_x"]
    single = load_run_kernel_tables(run_with_events(tmp_path / "one", [
        {"event": "profile", "tool": "pytorch", "artifacts": {}, "kernel_table": None}]))
    assert single is None
    one = KernelTables({None: table_of(RANK0)}, "x", "kernels.csv")
    assert one.select()[1] is None and one.rank_info(None) == RankInfo(None)
    assert one.rank_info(None).to_json() == {"rank": None, "ranks": []}
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
        assert summary.rows == rows and summary.to_json()["rows"] == rows
