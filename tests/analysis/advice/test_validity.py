"""Validity: when a profile or a timer cannot be trusted, on the graphed H100 v4 run's real trace
and step events, with one fact at a time changed to what the rule looks for."""

from __future__ import annotations

import copy
import dataclasses

from tinylab.analysis.advice.model import Facts
from tinylab.analysis.advice.validity import (
    empty_capture,
    graph_hides_kernels,
    profiler_overhead,
    unsynced_timers,
    warmup_in_window,
)

from support.advice import config, summary, v4_graph_facts


def test_the_real_graphed_run_is_a_valid_profile():
    f = v4_graph_facts()
    assert [rule(f) for rule in (warmup_in_window, graph_hides_kernels, profiler_overhead, empty_capture,
                                 unsynced_timers)] == [None] * 5


def test_profiled_steps_before_the_first_clean_step_are_warm_up_in_the_window():
    f = v4_graph_facts(config=config(version="v4", cuda_graph=True, warmup_steps=6, num_steps=7, profile_steps=3))
    item = warmup_in_window(f)
    assert item.severity == "warning" and "profiled step 5 of 3" in item.measured.text
    assert item.action.changes == {"num_steps": 9}  # first clean step 6, then 3 profiled steps


def test_a_trace_alone_whose_first_window_is_slow_holds_warm_up():
    timeline = {"steps": [{"step": s, "wall_ms": w} for s, w in ((1, 50.0), (2, 10.0), (3, 10.5), (4, 9.9))],
                "shown_step": 2, "has_gpu_events": True}
    item = warmup_in_window(Facts("t.json", timeline=timeline, trace="t.json"))
    assert "5.0x the others' median 10.00 ms" in item.measured.text
    timeline["steps"][0]["wall_ms"] = 15.0
    assert warmup_in_window(Facts("t.json", timeline=timeline, trace="t.json")) is None


def test_a_graphed_step_without_kernels_hides_them():
    f = v4_graph_facts()
    timeline = copy.deepcopy(f.timeline)
    for step in timeline["steps"]:
        step.update(graph=None, kernels=0)
    item = graph_hides_kernels(dataclasses.replace(f, timeline=timeline))
    assert item.action.changes == {"cuda_graph": False}


def test_a_profiled_window_much_slower_than_the_unprofiled_steps_is_distorted():
    f = v4_graph_facts()
    assert f.timeline["timed"]["unprofiled_ms"] > 6  # 8.34 ms window: 1.3x, under the threshold
    timeline = copy.deepcopy(f.timeline)
    timeline["timed"]["unprofiled_ms"] = 4.0
    item = profiler_overhead(dataclasses.replace(f, timeline=timeline))
    assert "2.08x the unprofiled median 4.00 ms" in item.measured.text


def test_a_gpu_run_whose_trace_has_no_gpu_event_is_an_empty_capture():
    f = v4_graph_facts()
    timeline = {**f.timeline, "has_gpu_events": False}
    assert "holds no GPU kernel" in empty_capture(dataclasses.replace(f, timeline=timeline)).measured.text
    problem = dataclasses.replace(f, capture_problem="kernel table: no rows")
    assert empty_capture(problem).measured.text == "kernel table: no rows"


def test_phases_far_below_the_step_are_unsynced_timers():
    synced = summary(fwd_ms_median=4.0, bwd_ms_median=5.0, opt_ms_median=0.9)
    assert unsynced_timers(Facts("r", config=config(), summary=synced)) is None
    host = summary(fwd_ms_median=0.9, bwd_ms_median=1.0, opt_ms_median=0.3)
    item = unsynced_timers(Facts("r", config=config(fault="unsynced-timing"), summary=host))
    assert "22% of the 10.00 ms step" in item.measured.text and item.action.changes == {"fault": None}
