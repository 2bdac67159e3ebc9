"""An exercise step as one generator of progress events, for the CLI and the lab alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.exercises import make_run

from tinylab import exercises as ex
from tinylab.service import exercise
from tinylab.service.lab import Lab
from tinylab.service.machine import Machine

SCENARIOS = Path(__file__).resolve().parents[1] / "tui" / "scenarios"


def lab_starting(tmp_path: Path, runs: dict) -> tuple[Lab, list]:
    """A Lab whose launches return ready-made finished runs by version (the launcher is tested elsewhere)."""
    lab = Lab(tmp_path / "runs", exercises_root=SCENARIOS, machine=Machine)
    started = []

    def start(cfg):
        started.append(cfg)
        return runs[cfg.version]

    lab.launch = start
    return lab, started


def tiny(version: str) -> dict:
    return {"version": version, "hidden_dim": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
            "seq_len": 16, "batch_size": 2, "num_steps": 6, "warmup_steps": 1}


def test_a_step_with_a_baseline_runs_it_first_and_records_the_attempt(tmp_path, progress_file):
    runs = {v: make_run(tmp_path / "made", v, config=tiny(v), summary={"steps": 6}) for v in ("v1", "v2")}
    lab, started = lab_starting(tmp_path, runs)
    plan = lab.plan_step("fusion-basics", 2)
    assert plan.device == "cpu" and not plan.on_gpu and plan.baseline.version == "v1"
    events = list(lab.run_step(plan, poll_s=0.01))
    kinds = [(type(e).__name__, getattr(e, "role", None)) for e in events]
    assert kinds == [("RunStarted", "baseline"), ("RunEnded", "baseline"), ("RunStarted", "run"),
                     ("RunEnded", "run"), ("StepDone", None)]
    assert [c.version for c in started] == ["v1", "v2"] and started[1].hidden_dim == 64  # the CPU preset applied
    done = events[-1]
    assert [r.status for r in done.results] == ["pass", "skip"] and done.passed
    assert done.verdict == ("1 of 2 checks ran and passed (over the run); 1 skipped (GPU-only: tiny CPU shapes time "
                            "the Python overhead)")
    attempt = json.loads(progress_file.read_text())["scenarios"]["fusion-basics"]["steps"]["2"]
    assert attempt["run_ids"] == [runs["v1"].id, runs["v2"].id] and attempt["passed"]


def test_a_failed_baseline_stops_the_step_without_recording(tmp_path, progress_file):
    runs = {"v1": make_run(tmp_path / "made", "v1", config=tiny("v1"),
                           error={"type": "RuntimeError", "message": "boom", "traceback": ""})}
    lab, started = lab_starting(tmp_path, runs)
    events = list(lab.run_step(lab.plan_step("fusion-basics", 2), poll_s=0.01))
    assert isinstance(events[-1], exercise.StepDone) and "the baseline run failed" in events[-1].note
    assert events[1].error.message == "boom" and len(started) == 1 and not progress_file.exists()


def test_a_gpu_only_step_on_a_cpu_starts_nothing(tmp_path, progress_file):
    scenario = ex.load_scenarios(SCENARIOS)[0]
    step = ex.Step(9, "gpu", "text", {"version": "v2"}, {}, None,
                   [ex.CheckSpec("fast", "samples_per_s > 1", "fast", True, "GPU timing")], [], [])
    plan = exercise.plan_step(scenario, step, Machine())
    assert plan.gpu_only
    (done,) = exercise.run_step(plan, start=lambda cfg: pytest.fail("nothing may start"))
    assert [r.status for r in done.results] == ["skip"] and "no run was started" in done.note


def test_a_step_that_cannot_run_here_is_refused_before_anything_starts(tmp_path):
    lab = Lab(tmp_path / "runs", exercises_root=SCENARIOS, machine=Machine)
    with pytest.raises(Exception, match="no CUDA/ROCm GPU is visible"):
        lab.plan_step("fusion-basics", 1, device="cuda")
    assert lab.records() == []


def test_a_step_over_compiled_kernels_compiles_and_runs_nothing(tmp_path, progress_file, monkeypatch):
    from support.anatomy import fake_compiles

    calls = fake_compiles(monkeypatch)
    lab = Lab(tmp_path / "runs", machine=Machine)  # the shipped scenarios, a CPU machine

    def no_launch(cfg):
        raise AssertionError("a compile-only step launched a run")

    lab.launch = no_launch
    plan = lab.plan_step("v4-fusion", 6, overrides={"precision": "bf16"})
    assert plan.compile_only and plan.device == "cpu"
    assert plan.compiled["run"].hidden_dim == 512 and plan.compiled["run"].precision == "bf16"  # GPU sizes on a CPU
    assert plan.compiled["baseline"].version == "v3"
    (done,) = list(lab.run_step(plan))
    assert done.note == exercise.COMPILED_NOTE and done.run_ids == []
    assert calls[0][:3] == ("analyze", "bf16", ("sm_90", "gfx942"))  # one compile of every target the checks name
    attempt = json.loads(progress_file.read_text())["scenarios"]["v4-fusion"]["steps"]["6"]
    assert attempt["run_ids"] == [] and set(attempt["checks"]) == {c.name for c in plan.step.checks}
