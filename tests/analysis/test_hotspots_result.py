"""The hotspot results' JSON (`tinylab hotspots --json`, `compare --json`): the keys and their order,
a rank column only on a table of every rank, the rank fields only beside a summary that has them."""

from __future__ import annotations

from tinylab.analysis.hotspots_result import (CategoryTime, HotspotSummary, KernelRow, RankComparison, RankInfo,
                                              RankTotals, Spread, TopKernel)

ROW = KernelRow("aten::mm", 10, 600, 60, 50, 70, 60.0, "gemm")


def test_a_kernel_row_says_its_rank_first_only_in_a_table_of_every_rank():
    assert list(ROW.to_json()) == ["name", "calls", "total_ns", "avg_ns", "min_ns", "max_ns", "pct", "category"]
    assert list(KernelRow(**{**vars(ROW), "rank": 0}).to_json())[:2] == ["rank", "name"]


def test_a_summary_adds_the_rank_fields_it_was_given():
    summary = HotspotSummary("pytorch-operators", 1000, 3, None, {"gemm": CategoryTime(600, 60.0, 10, 1)}, (ROW,))
    assert list(summary.to_json()) == ["format", "total_ns", "kernel_count", "rows", "note", "categories", "kernels"]
    one = summary.with_ranks(RankInfo(None)).to_json()
    assert list(one)[-2:] == ["rank", "ranks"] and (one["rank"], one["ranks"]) == (None, [])
    compared = RankComparison((RankTotals(0, 1000, 100, 10.0, 3, TopKernel("aten::mm", "gemm", 60.0)),
                               RankTotals(1, 1200, None, None, 3, None)),
                              {"total_ns": Spread(1, 0, 20.0), "communication_ns": None})
    several = summary.with_ranks(RankInfo(0, (0, 1), compared)).to_json()
    assert list(several)[-4:] == ["rank", "ranks", "per_rank", "spread"] and several["ranks"] == [0, 1]
    assert several["per_rank"][0]["top_kernel"] == {"name": "aten::mm", "category": "gemm", "pct": 60.0}
    assert several["per_rank"][1]["top_kernel"] is None
    assert several["spread"] == {"total_ns": {"most": 1, "least": 0, "pct": 20.0}, "communication_ns": None}
