"""The per-rank table of a run of several ranks (show, report, the lab's Run screen): every column
from the `rank` events, the slowest rank and weights out of sync said in words."""

from __future__ import annotations

from support.runs import make_run, rank_events

from tinylab.render.ranks import COLUMNS, FULL, rank_table, sync_line

START = {"event": "start", "time": 1.0, "device": "cuda:0", "device_name": "NVIDIA H100", "config": {}}


def two_ranks(tmp_path, weights=()):
    summary = {"event": "summary", "time": 3.0, "samples_per_s": 90.0, "step_ms_median": 40.0, "world_size": 2,
               "slowest_rank": 1, "comm_ms": 8.4, "comm_hidden": 0.64}
    return make_run(tmp_path, "20260101-000000-0002", [START, *rank_events(2, 2.0, 40.0, True, weights), summary],
                    parallel="ddp", nproc_per_node=2).record()


def test_every_column_of_every_rank(tmp_path):
    header, rows = rank_table(two_ranks(tmp_path))
    assert header == ["rank", "host", "device", "step ms", "p90 ms", "fwd/bwd/opt ms", "peak MB", "collectives ms",
                      "weights"]
    assert rows == [
        ["0", "gpu-node-07", "cuda:0", "40.00", "43.20", "12.00/22.00/6.00", "1,550.0", "9.60 (64% hidden)", "✓ in sync"],
        ["1 slowest", "gpu-node-07", "cuda:1", "40.80", "44.00", "15.60/22.00/6.00", "1,551.0", "7.20 (64% hidden)",
         "✓ in sync"],
    ]
    assert rank_table(two_ranks(tmp_path / "b"), ("rank", "fwd", "bwd"))[1] == [["0", "12.00", "22.00"],
                                                                                ["1 slowest", "15.60", "22.00"]]
    assert set(FULL) < set(COLUMNS)


def test_weights_out_of_sync_are_marked_and_named(tmp_path):
    record = two_ranks(tmp_path, weights=("9f2c41d07ab3", "00aa11bb22cc"))
    assert [row[-1] for row in rank_table(record)[1]] == ["✓ in sync", "✗ differs"]
    assert sync_line(record) == ("✗ weights out of sync: rank 1 ended apart from rank 0 "
                                 "(the gradients did not sync)")
    assert sync_line(two_ranks(tmp_path / "b")) == "✓ weights in sync on all 2 ranks"


def test_a_run_of_one_process_has_no_rank_rows(tmp_path):
    record = make_run(tmp_path, "20260101-000000-0001", [START]).record()
    assert rank_table(record)[1] == [] and sync_line(record) is None
