"""Lab: the door both faces use, over a store of hand-written runs."""

from __future__ import annotations

import pytest
from support.paths import FIX
from support.runs import make_run

from tinylab.errors import UserError
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
