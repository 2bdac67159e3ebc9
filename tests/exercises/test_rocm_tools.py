"""The rocm-tools scenario: it loads and validates; on a machine without the AMD tools its steps start
no run and teach from the real recorded outputs they ship; with the tools their run checks read the
run's real outputs (kernel table, counters, profile files)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from support.exercises import make_run
from support.paths import FIX

from tinylab import exercises as ex
from tinylab.profilers import base
from tinylab.service.lab import Lab
from tinylab.service.machine import Machine

SCENARIO = ex.find_scenario(ex.load_scenarios(), "rocm-tools")
TOOLS = ["rocprofv3", "rocprofv3", "rocprof-sys", "rocprof-compute", "rocprof-compute"]


def test_five_steps_one_tool_each_with_a_recorded_output_and_checks_for_both():
    assert [s.tool for s in SCENARIO.steps] == TOOLS
    for step in SCENARIO.steps:
        assert step.recorded is not None and step.recorded.path.exists() and step.recorded.about, step.number
        assert step.nvidia and step.tool in step.preset["profilers"]
        on = {c.on for c in step.checks}
        assert on == {"run", "recorded"}, step.number
        assert all(c.needs_gpu for c in step.checks if c.on == "run")  # they read GPU kernels


@pytest.mark.parametrize("number", range(1, 6))
def test_without_the_tool_a_step_teaches_from_its_recorded_output(number, monkeypatch, tmp_path, progress_file):
    """No AMD GPU here: no run starts, the run checks are skipped with the tool's reason, the recorded
    checks pass over the real shipped output, and the note points at it and at the NVIDIA command."""
    monkeypatch.setattr(base, "gpu_vendors", lambda: set())
    lab = Lab(tmp_path / "runs", machine=Machine)
    lab.launch = lambda cfg: pytest.fail("no run may start without the step's tool")
    plan = lab.plan_step("rocm-tools", number, "cpu")
    step = SCENARIO.steps[number - 1]
    assert plan.unavailable.startswith(f"{step.tool} is not available here")
    (done,) = list(lab.run_step(plan))
    by_on = {r.name: r for r in done.results}
    for check in step.checks:
        result = by_on[check.name]
        if check.on == "recorded":
            assert result.status == "pass", (check.name, result.detail)
        else:
            assert result.status == "skip" and result.detail == plan.unavailable
    assert done.passed and done.run_ids == []
    recorded = sum(c.on == "recorded" for c in step.checks)  # what ran, what was skipped and why: not "all passed"
    assert done.verdict == (f"{recorded} of {len(step.checks)} checks ran and passed (over the recorded output); "
                            f"{len(step.checks) - recorded} skipped ({plan.unavailable})")
    assert str(step.recorded.path) in done.note and step.nvidia in done.note
    assert json.loads(progress_file.read_text())["scenarios"]["rocm-tools"]["steps"][str(number)]["passed"]


def test_with_the_tools_a_step_runs_and_its_checks_read_the_run(monkeypatch, tmp_path):
    """With the stand-ins (tools found, an AMD GPU 'visible') the step plans its run; over a run that
    recorded rocprof-compute's real counters and passes, the GPU checks read them."""
    from support.paths import BIN

    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    plan = Lab(tmp_path / "runs", machine=Machine).plan_step("rocm-tools", 4, "cpu")
    assert plan.unavailable == "" and plan.config.profilers == ["rocprof-compute"]
    assert plan.config.profile_kernels == ["_rmsnorm_fwd", "_attn_fwd", "Cijk"]  # -k for every pass
    run = make_run(tmp_path, "amd", device="cuda:0")
    profile = run.dir / "profiles" / "rocprof-compute"
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200", profile / "workload")
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200_analyze", profile / "analyze")
    with open(run.dir / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"event": "profile", "time": 4.0, "tool": "rocprof-compute", "artifacts": {},
                             "kernel_table": None, "passes": 16}) + "\n")
    results = {r.name: r for r in ex.evaluate_checks(SCENARIO.steps[3], run.record(), None, on_gpu=True)}
    assert results["passes"].status == "pass" and results["passes"].value == 16
    assert "counter_passes=16" in results["passes"].detail
    norm = results["norm-no-matrix-cores"]  # the vecCopy workload's only speed-of-light table is the copy's
    assert norm.status == "fail" and "no analyzed kernel of the run matches '_rmsnorm' (analyzed: vecCopy(" in norm.detail
    assert results["attention-more-intense"].status == "fail"
    assert "no kernel of the run's counters matches '_attn_'" in results["attention-more-intense"].detail


def test_speed_of_light_reads_the_real_analyzer_table(tmp_path):
    """sol_pct/sol_value read the table rocprof-compute analyze --save-dfs wrote for the analyzed
    dispatch (real: the vcopy workload's dispatch 0), by metric name; what is not there says why."""
    profile = tmp_path / "profile"
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200", profile / "workload")
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200_analyze", profile / "analyze")
    recorded = ex.RecordedOutput(ex.Recorded(profile, "test"))
    assert recorded.kernel_function("sol_pct", "vecCopy", "L2 Cache BW") == 36.62
    assert recorded.kernel_function("sol_value", "elementwise", "active cus") == 62.0  # by category; any case
    with pytest.raises(ex.checks.Missing, match="its speed-of-light table has no metric 'L3 Cache BW'"):
        recorded.kernel_function("sol_pct", "vecCopy", "L3 Cache BW")
    with pytest.raises(ex.checks.Missing, match="left 'L1I Fetch Latency' empty"):
        recorded.kernel_function("sol_value", "vecCopy", "L1I Fetch Latency")
    (profile / "analyze" / "dispatch_0" / "2.1_Speed-of-Light.csv").unlink()
    with pytest.raises(ex.checks.Missing, match="no rocprof-compute speed-of-light tables"):
        ex.RecordedOutput(ex.Recorded(profile, "test")).kernel_function("sol_pct", "vecCopy", "IPC")


def test_counter_functions_refuse_what_was_not_measured(tmp_path):
    """No roofline benchmark: bound and shares are not measured (intensity still is); a share above
    the peak is past a physical limit and refused."""
    workload = tmp_path / "w"
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200", workload)
    recorded = ex.RecordedOutput(ex.Recorded(workload, "test"))  # a bare workload folder reads too
    assert recorded.kernel_function("top_intensity", "vecCopy") == 0.0
    (workload / "roofline.csv").unlink()
    fresh = ex.RecordedOutput(ex.Recorded(workload, "test"))
    with pytest.raises(ex.checks.Missing, match="no measured ceilings"):
        fresh.kernel_function("top_bound", "vecCopy")
    (workload / "roofline.csv").write_text("device,HBMBw,FP32Flops\n0,100.0,1000.0\n")  # a tenth of the real peak
    slow = ex.RecordedOutput(ex.Recorded(workload, "test"))
    with pytest.raises(ex.checks.Missing, match="above its peak"):
        slow.kernel_function("top_bw_pct", "vecCopy")
    assert slow.kernel_function("top_bound", "elementwise") == "memory"  # selected by its category


@pytest.mark.parametrize("rocm_version, skipped", [("6.3.1", True), ("6.4.0", False)])
def test_step_5_on_mi300_with_a_release_that_runs_no_roofline(rocm_version, skipped, tmp_path):
    """rocprof-compute of ROCm 6.2/6.3 runs no roofline on MI300: its roofline checks are skipped with the
    reason and where to read one instead (the recorded output), the recorded checks still run. On 6.4 a
    missing roofline.csv is the profile's own fault (--no-roof): the checks fail."""
    import csv

    run = make_run(tmp_path, "amd", device="cuda:0")
    workload = run.dir / "profiles" / "rocprof-compute" / "workload"
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200", workload)
    (workload / "roofline.csv").unlink()
    with open(workload / "sysinfo.csv", newline="") as fh:
        (info,) = list(csv.DictReader(fh))
    info.update(rocm_version=rocm_version, gpu_arch="gfx942", gpu_model="MI300X")
    with open(workload / "sysinfo.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(info))
        writer.writeheader()
        writer.writerow(info)
    step = SCENARIO.steps[4]
    with open(workload / "pmc_perf.csv") as fh:  # the vector copy stands in for the GEMM and the elementwise kernel
        text = fh.read().replace("vecCopy(", "Cijk_Ailk_Bljk_gemm(", 1)
    (workload / "pmc_perf.csv").write_text(text)
    results = {r.name: r for r in ex.evaluate_checks(step, run.record(), None, on_gpu=True)}
    roofline = [c.name for c in step.checks if c.on == "run" and ("top_bound" in c.expr or "flops_pct" in c.expr)]
    assert roofline
    for name in roofline:
        if skipped:
            assert results[name].status == "skip", results[name].detail
            assert results[name].detail.startswith(
                f"not available here: rocprof-compute of ROCm {rocm_version} runs no roofline on MI300 (gfx942)")
            assert f"tinylab hotspots {step.recorded.path}" in results[name].detail
        else:
            assert results[name].status == "fail" and "--no-roof" in results[name].detail
    assert all(results[c.name].status == "pass" for c in step.checks if c.on == "recorded")


def test_gpu_idle_share_of_a_recorded_trace():
    """The H100 step: 0.84 ms of kernels in a 17.2 ms step (timeline.analyze, HTA's definitions);
    a CPU trace has no GPU to be idle, and says so instead of a number."""
    gpu = ex.RecordedOutput(ex.Recorded(FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz", "test"))
    assert gpu.value("gpu_idle_pct") == pytest.approx(95.05, abs=0.01)
    cpu = ex.RecordedOutput(ex.Recorded(FIX / "pytorch-profiler/tinylab_cpu_v1_memory/trace.json.gz", "test"))
    with pytest.raises(ex.checks.Missing, match="no GPU events"):
        cpu.value("gpu_idle_pct")
