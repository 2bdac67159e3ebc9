"""A Timeline's JSON (`tinylab timeline --json`) says what the Lab added to the analysis: a trace
file named by path has its title only; a run's trace its rank, its ranks and, for rank 0, whose
steps the trainer timed, the trainer's clock."""

from __future__ import annotations

from tinylab.analysis.timeline_result import Communication, Gaps, PhaseTime, StepAnatomy, Timeline, TrainerTiming

STEP = StepAnatomy(step=3, start_us=10.0, wall_ms=2.0, busy_ms=1.5, compute_ms=1.0, non_compute_ms=0.5, idle_ms=0.5,
                   idle_pct=25.0, gaps=Gaps(2, 0.5, 0.4, 0.1, "backward"), kernels=4, copies=1, kernel_median_us=300.0,
                   phases=(PhaseTime("forward", 0.8, 2, 0.6),), categories_ms={"gemm": 1.0}, lane="#.", host_lane="F.",
                   graph=None, diagnosis="partly idle")
ANALYSIS_KEYS = ["source", "memory_source", "communication", "device", "has_gpu_events", "steps", "shown_step",
                 "diagnosis", "memory", "notes"]


def timeline(**added) -> Timeline:
    return Timeline(source="trace.json.gz", memory_source=None, communication=Communication(1.5, 0.25, 2), device=0,
                    has_gpu_events=True, steps=(STEP,), shown_step=3, diagnosis="partly idle", memory=None,
                    notes=("a note",), **added)


def test_a_step_keeps_the_names_and_order_of_the_json():
    data = STEP.to_json()
    assert list(data)[:3] == ["step", "start_us", "wall_ms"] and list(data)[-5:] == ["lane", "host_lane", "graph",
                                                                                     "host_calls", "diagnosis"]
    assert data["gaps"] == {"count": 2, "total_ms": 0.5, "largest_ms": 0.4, "largest_at_ms": 0.1,
                            "largest_phase": "backward"}
    assert data["phases"] == [{"name": "forward", "host_ms": 0.8, "kernels": 2, "kernel_ms": 0.6}]
    assert timeline().shown is STEP


def test_a_trace_file_has_a_title_and_no_ranks():
    data = timeline(title="timeline of trace.json.gz").to_json()
    assert list(data) == [*ANALYSIS_KEYS, "title"]
    assert data["communication"] == {"ms": 1.5, "hidden": 0.25, "steps": 2} and data["notes"] == ["a note"]
    assert list(timeline().to_json()) == ANALYSIS_KEYS  # analyze() alone


def test_a_runs_trace_has_its_ranks_and_rank_0_the_trainers_clock():
    one = timeline(title="t", ranks=(), timed=TrainerTiming(2.1, 1.9, 12)).to_json()
    assert list(one) == [*ANALYSIS_KEYS, "timed", "rank", "ranks", "title"]
    assert one["timed"] == {"step_ms": 2.1, "unprofiled_ms": 1.9, "unprofiled_steps": 12}
    assert (one["rank"], one["ranks"]) == (None, [])
    assert timeline(title="t", ranks=(0, 1), rank=0).to_json()["timed"] is None  # known to be missing
    other = timeline(title="t", ranks=(0, 1), rank=1).to_json()
    assert "timed" not in other and (other["rank"], other["ranks"]) == (1, [0, 1])
