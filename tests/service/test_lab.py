"""Lab: the door both faces use, over a store of hand-written runs."""

from __future__ import annotations

import pytest
from support.paths import FIX
from support.runs import make_run

from tinylab.analysis.timeline import render
from tinylab.errors import UserError
from tinylab.profilers.pytorch import MEMORY_HINT
from tinylab.service.lab import Lab

START = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64", "config": {}}


@pytest.fixture
def lab(tmp_path) -> Lab:
    for run_id in ("20260101-000000-aaaa", "20260101-000000-bbbb"):
        make_run(tmp_path / "runs", run_id, [START])
    return Lab(tmp_path / "runs")


def test_records_are_typed_and_oldest_first(lab):
    records = lab.records()
    assert [r.id for r in records] == ["20260101-000000-aaaa", "20260101-000000-bbbb"]
    assert records[0].device_name == "x86_64" and records[0].status == "lost"


def test_remove_resolves_every_reference_before_deleting_any(lab):
    with pytest.raises(UserError, match="no run matches 'nope'"):
        lab.remove(["20260101-000000-aaaa", "nope"])
    assert len(lab.records()) == 2
    assert lab.remove(["20260101-000000-aaaa"]) == ["20260101-000000-aaaa"]
    assert [r.id for r in lab.records()] == ["20260101-000000-bbbb"]


def test_hotspots_table_of_a_profiler_output_a_run_and_a_bad_reference(lab, tmp_path):
    table, fmt = lab.hotspots_table(str(FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv"))
    assert fmt == "rocprofv3-kernel-trace" and len(table)
    with pytest.raises(UserError, match="this run has no kernel table"):
        lab.hotspots_table("20260101-000000-bbbb")
    with pytest.raises(UserError, match="no such file or folder"):
        lab.hotspots_table(str(tmp_path / "missing.csv"))


def test_unknown_scenario_names_the_choices(tmp_path):
    with pytest.raises(UserError, match="unknown exercise 'nope': choose one of"):
        Lab(tmp_path).scenario("nope")


def test_timeline_of_a_profiled_run_with_its_memory_and_of_a_run_without_a_trace(lab, tmp_path):
    import shutil

    run_id = "20260101-000000-cccc"
    profile = {"event": "profile", "time": 2.0, "tool": "pytorch", "kernel_table": None,
               "artifacts": {"trace.json.gz": "profiles/pytorch/trace.json.gz",
                             "memory_timeline.json.gz": "profiles/pytorch/memory_timeline.json.gz"}}
    run_dir = make_run(tmp_path / "runs", run_id, [{**START, "config": {"version": "v1", "precision": "fp32"}}, profile]).dir
    (run_dir / "profiles" / "pytorch").mkdir(parents=True)
    for name in ("trace.json.gz", "memory_timeline.json.gz"):
        shutil.copy(FIX / "pytorch-profiler" / "tinylab_cpu_v1_memory" / name, run_dir / "profiles" / "pytorch" / name)
    result = lab.timeline(run_id, step=2)
    assert result["title"] == f"timeline of {run_id} v1 fp32 on x86_64"
    assert result["shown_step"] == 2 and result["memory"]["peak_mb"] > 0
    assert MEMORY_HINT not in result["notes"]
    (run_dir / "profiles" / "pytorch" / "memory_timeline.json.gz").unlink()
    without = lab.timeline(run_id, step=2)
    assert without["memory"] is None and MEMORY_HINT in without["notes"]  # says how to get it
    assert "TINYLAB_PROFILE_MEMORY=1 tinylab" in render(without, "t")
    with pytest.raises(UserError, match="has no PyTorch profiler trace: launch it with --profile pytorch"):
        lab.timeline("20260101-000000-aaaa")
    trace_only = lab.timeline(str(FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"))
    assert trace_only["has_gpu_events"] and trace_only["memory"] is None
