"""Step anatomy: GPU busy/idle from merged kernel intervals per ProfilerStep window, gaps, launches
per step and phase, the lanes, the diagnosis, and the memory timeline, on hand-made traces with
known answers and on real traces (H100 kernels; a tinylab CPU run with its memory timeline)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import statistics
import subprocess
import sys

import pytest
from support.traces import CPU_RUN, DDP2, H100, V4_GRAPH, gpu_copy, host, kernel, launch, two_step_trace, write

from tinylab.analysis import timeline
from tinylab.analysis.timeline_result import Gaps, GraphReplay, StepAnatomy
from tinylab.core.errors import UserError

def test_busy_idle_gaps_and_launches_per_step(tmp_path):
    result = timeline.analyze(write(tmp_path, two_step_trace()))
    s5, s6 = result.steps
    assert (s5.step, s6.step) == (5, 6)
    # union of [10,30), [50,55), [90,100) within [0,100)
    assert s5.wall_ms == pytest.approx(0.1)
    assert s5.busy_ms == pytest.approx(0.035)
    assert s5.idle_ms == pytest.approx(0.065) and s5.idle_pct == pytest.approx(65.0)
    assert s5.compute_ms == pytest.approx(0.030) and s5.non_compute_ms == pytest.approx(0.005)  # the copy
    assert s5.gaps == Gaps(count=3, total_ms=pytest.approx(0.065), largest_ms=pytest.approx(0.035),
                           largest_at_ms=pytest.approx(0.055), largest_phase="backward")
    assert (s5.kernels, s5.copies) == (3, 1)  # k1, k2, k3 launched in the window; the copy
    assert s5.kernel_median_us == pytest.approx(15.0)
    assert [(p.name, p.kernels, p.kernel_ms) for p in s5.phases] == [
        ("forward", 2, pytest.approx(0.025)), ("backward", 0, pytest.approx(0.005)), ("optimizer", 1, pytest.approx(0.02))]
    assert s5.categories_ms == {"gemm": pytest.approx(0.01), "attention": pytest.approx(0.015),
                                "memcpy": pytest.approx(0.005), "elementwise": pytest.approx(0.02)}
    # step 6: k3's tail [100,110) and k4 [150,160); one kernel launched (k4)
    assert s6.busy_ms == pytest.approx(0.020) and s6.kernels == 1
    assert s6.gaps.count == 2 and s6.gaps.largest_ms == pytest.approx(0.040)
    # the steps' busy and idle add up to the profiled time
    assert sum(s.busy_ms + s.idle_ms for s in (s5, s6)) == pytest.approx(0.2)


def test_gpu_copies_of_step_ranges_are_not_steps(tmp_path):
    """A GPU trace holds each ProfilerStep#N twice, the host range and Kineto's gpu_user_annotation
    copy (shifted and shorter), and a graphed step may add a 0.02 ms copy (an H100 v4 trace showed
    step 3 three times): one row a step, from the host ranges, the same numbers as without the copies."""
    plain = timeline.analyze(write(tmp_path, two_step_trace(), "plain.json.gz"))
    doc = two_step_trace()
    doc["traceEvents"] += [gpu_copy("ProfilerStep#6", 101, 95), gpu_copy("ProfilerStep#5", 9, 89),
                           gpu_copy("ProfilerStep#6", 150, 0.02, stream=17), gpu_copy("forward", 10, 25)]
    path = write(tmp_path, doc)
    result = timeline.analyze(path)
    assert [s.step for s in result.steps] == [5, 6]
    assert result.steps == plain.steps
    res = subprocess.run([sys.executable, "-m", "tinylab", "timeline", str(path), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and json.loads(res.stdout)["shown_step"] == result.shown_step


def test_lanes_mark_busy_cells_and_host_phases(tmp_path):
    result = timeline.analyze(write(tmp_path, two_step_trace()), step=5)
    s5 = result.steps[0]
    assert result.shown_step == 5
    assert len(s5.lane) == timeline.LANE_WIDTH == len(s5.host_lane)
    # 60 cells of 1.667 µs: [10, 30) covers cells 6 .. 17, [50, 55) cells 30 .. 32
    assert s5.lane[:6] == "." * 6 and s5.lane[6:18] == "#" * 12 and s5.lane[18:30] == "." * 12
    assert s5.host_lane[:24] == "F" * 24 and s5.host_lane[24:48] == "B" * 24 and s5.host_lane[-3:] == "..."
    assert timeline.lane([(0.0, 1.0)], 0.0, 4.0, width=4) == "#..."
    assert timeline.lane([(0.0, 0.5), (2.0, 2.2)], 0.0, 4.0, width=4) == "+.-."


@pytest.mark.parametrize(("anatomy", "start"), [
    ({"idle_pct": 85.0, "kernel_median_us": 6.0, "kernels": 640}, "launch-bound: the GPU is idle 85% of the step; 640 kernels of 6 µs median"),
    ({"idle_pct": 70.0, "kernel_median_us": 40.0, "kernels": 30}, "host-bound: the GPU is idle 70% of the step in 4 gaps, the largest 2.00 ms in backward"),
    ({"idle_pct": 5.0, "kernel_median_us": 40.0, "kernels": 30}, "GPU-bound: the GPU is busy 95% of the step; gemm takes 75% of kernel time"),
    ({"idle_pct": 30.0, "kernel_median_us": 40.0, "kernels": 30}, "partly idle: the GPU is busy 70% of the step, idle in 4 gaps; gemm takes 75%"),
])
def test_diagnosis(anatomy, start):
    base = StepAnatomy(step=1, start_us=0.0, wall_ms=10.0, busy_ms=None, compute_ms=None, non_compute_ms=None,
                       idle_ms=None, idle_pct=None, gaps=Gaps(4, 0.0, 2.0, None, "backward"), kernels=0, copies=0,
                       kernel_median_us=None, phases=(), categories_ms={"gemm": 3.0, "norm": 1.0}, lane=None,
                       host_lane="", graph=None)
    assert timeline.diagnose(dataclasses.replace(base, **anatomy), has_gpu=True).startswith(start)


def hta_busy_us(events: list[dict]) -> float:
    """HTA's merge_kernel_intervals (hta/utils/utils.py), verbatim in pandas, as the reference; on
    times relative to the first event, because its sum(end) - sum(ts) over 4.8e12 µs timestamps
    loses half a microsecond to cancellation."""
    import pandas as pd

    t0 = min(e["ts"] for e in events)
    df = pd.DataFrame([{"ts": e["ts"] - t0, "dur": e["dur"]} for e in events])
    df = df.sort_values(by="ts")
    df["end"] = df["ts"] + df["dur"]
    df["group"] = (df["ts"] > df["end"].shift().cummax()).cumsum()
    merged = df.groupby("group", as_index=False).agg({"ts": "min", "end": "max"})
    return float(merged.end.sum() - merged.ts.sum())


def test_real_h100_trace_matches_hta_merging():
    with gzip.open(H100) as fh:
        events = json.load(fh)["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    result = timeline.analyze(H100)
    (whole,) = result.steps
    assert whole.step is None and "no ProfilerStep#" in result.notes[0]
    # within 0.1 µs: Kineto's timestamps carry nanoseconds, and 370 rounded ends add up
    assert whole.busy_ms == pytest.approx(hta_busy_us(gpu) / 1e3, abs=1e-4)
    assert whole.compute_ms + whole.non_compute_ms == pytest.approx(whole.busy_ms)
    assert whole.gaps.total_ms == pytest.approx(whole.idle_ms)
    assert whole.kernels == sum(e["cat"] == "kernel" for e in gpu) and whole.copies == 9
    assert whole.busy_ms < 0.1 * whole.wall_ms  # an eager step of a tiny model: mostly idle
    assert whole.diagnosis.startswith("launch-bound")


def test_a_graph_replay_is_not_called_launch_bound(tmp_path):
    """Kernels launched by one cudaGraphLaunch are a replay: the span from its first kernel to its
    last, how busy the GPU is in it, and the host time outside it; never 'launch-bound', however
    short the kernels are."""
    doc = {"traceEvents": [
        host("ProfilerStep#3", 0, 100),
        host("cudaGraphLaunch", 30, 5, cat="cuda_runtime", correlation=9),
        kernel("_rmsnorm_fwd_kernel", 40, 4, 9), kernel("_swiglu_fwd_kernel", 46, 4, 9),
        kernel("_adamw_kernel", 60, 4, 9),  # span [40, 64): 12 of 24 µs busy
    ]}
    (s3,) = timeline.analyze(write(tmp_path, doc)).steps
    assert s3.graph == GraphReplay(launches=1, kernels=3, span_ms=pytest.approx(0.024), busy_pct=pytest.approx(50.0),
                                   outside_ms=pytest.approx(0.076))
    assert s3.diagnosis == ("graph replay: 1 graph launch ran 3 kernels, the GPU busy 50% of the replay's 0.02 ms; "
                               "the step's other 0.08 ms is host time outside it (GPU idle 88% of the step)")
    # the same kernels launched one by one are launch-bound
    eager = {"traceEvents": [e if e["name"] != "cudaGraphLaunch" else launch(30, 9) for e in doc["traceEvents"]]}
    (s3,) = timeline.analyze(write(tmp_path, eager, "eager.json.gz")).steps
    assert s3.graph is None and s3.diagnosis.startswith("launch-bound")


def test_real_h100_v4_graph_replay_and_the_trainers_clock():
    """v4 on an H100 (fp32, workshop size): one replay a step keeps the GPU busy, and the window holds
    host time around it (the loop between steps, with the memory profile's Python stacks)."""
    result = timeline.analyze(V4_GRAPH / "trace.json.gz")
    assert [s.step for s in result.steps] == [5, 6, 7]
    for s in result.steps:
        assert s.graph.launches == 1 and s.graph.kernels >= 300
        assert s.graph.busy_pct > 90 and s.graph.span_ms < s.wall_ms
        assert s.diagnosis.startswith("graph replay: 1 graph launch ran")
    steps = [json.loads(line) for line in (V4_GRAPH / "steps.jsonl").read_text().splitlines()]
    timed = timeline.trainer_timing(steps, result)
    by_step = {e["step"]: e["step_ms"] for e in steps}
    assert timed.step_ms == by_step[result.shown_step]
    # steps 0..4 warm up and 5..7 were profiled: the median of 8..19
    assert timed.unprofiled_steps == 12
    assert timed.unprofiled_ms == pytest.approx(statistics.median(by_step[s] for s in range(8, 20)))
    assert timeline.trainer_timing([e for e in steps if e["step"] <= 7], result) is None  # nothing unprofiled
    # its memory timeline holds 1 MB a step: the graph's memory came from its pool at capture, and it says so
    with_memory = timeline.analyze(V4_GRAPH / "trace.json.gz", V4_GRAPH / "memory_timeline.json.gz")
    assert with_memory.memory.peak_mb < 2 and timeline.GRAPH_MEMORY in with_memory.notes
    assert timeline.GRAPH_MEMORY not in timeline.analyze(CPU_RUN / "trace.json.gz", CPU_RUN / "memory_timeline.json.gz").notes


def test_cpu_run_phases_and_memory_peak():
    result = timeline.analyze(CPU_RUN / "trace.json.gz", CPU_RUN / "memory_timeline.json.gz", step=3)
    assert [s.step for s in result.steps] == [2, 3] and not result.has_gpu_events
    s3 = result.steps[1]
    assert s3.idle_pct is None and s3.lane is None
    assert [p.name for p in s3.phases] == ["forward", "backward", "optimizer"]
    assert 0.9 * s3.wall_ms < sum(p.host_ms for p in s3.phases) <= s3.wall_ms
    assert s3.diagnosis.startswith("no GPU events in this trace (a CPU run)")
    # the peak, found independently: the largest total of the points inside the step's window
    with gzip.open(CPU_RUN / "memory_timeline.json.gz") as fh:
        times, sizes = json.load(fh)
    with gzip.open(CPU_RUN / "trace.json.gz") as fh:
        doc = json.load(fh)
    step = next(e for e in doc["traceEvents"] if e.get("name") == "ProfilerStep#3")
    lo = step["ts"] + doc["baseTimeNanoseconds"] / 1e3
    inside = [sum(row) for t, row in zip(times, sizes) if lo <= t <= lo + step["dur"]]
    assert len(inside) > 100
    memory = result.memory
    assert memory.peak_mb == pytest.approx(max(inside) / 2**20)
    assert memory.peak_phase in ("forward", "backward", "optimizer")
    assert 0 <= memory.peak_at_ms <= s3.wall_ms
    assert sum(memory.peak_by_category_mb.values()) == pytest.approx(memory.peak_mb)
    series = memory.series
    assert len(series["ms"]) <= 201 and all(len(v) == len(series["ms"]) for v in series.values())
    assert series["parameter"][0] > 0 and series["ms"] == sorted(series["ms"])


def test_communication_on_a_gpu_is_the_nccl_kernels_and_their_overlap_with_compute(tmp_path):
    """Step [0, 100): an NCCL all-reduce [20, 60) on its own stream beside GEMMs [10, 40) and [50, 70):
    40 µs of collectives, 30 of them under compute; the collective is no compute in the anatomy."""
    doc = {"traceEvents": [
        host("ProfilerStep#3", 0, 100), launch(5, 1), launch(15, 2), launch(45, 3),
        kernel("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32_kernel", 10, 30, 1),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 20, 40, 2, stream=9),
        kernel("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32_kernel", 50, 20, 3),
    ]}
    path = write(tmp_path, doc)
    comm_ms, hidden = timeline.communication(path)
    assert comm_ms == pytest.approx(0.040) and hidden == pytest.approx(0.75)
    (step,) = timeline.analyze(path).steps
    # busy [10, 70); compute the GEMMs' 50 µs; [40, 50), where only the all-reduce runs, is non-compute
    assert step.busy_ms == pytest.approx(0.060) and step.compute_ms == pytest.approx(0.050)
    assert step.non_compute_ms == pytest.approx(0.010)
    assert step.categories_ms["communication"] == pytest.approx(0.040)


def test_communication_on_a_cpu_is_gloo_and_a_waiting_step_thread_hides_nothing(tmp_path):
    """Step [0, 100) on thread 1: gloo's all-reduce [10, 30) on its thread 2 runs under aten::mm
    [0, 30) (hidden); the second [45, 85) runs while thread 1 waits in c10d::allreduce_ [40, 90):
    not hidden. 60 µs of collectives, a third hidden."""
    def op(name, ts, dur, tid=1, cat="cpu_op"):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}

    doc = {"traceEvents": [
        op("ProfilerStep#2", 0, 100, cat="user_annotation"), op("backward", 0, 95, cat="user_annotation"),
        op("aten::mm", 0, 30), op("c10d::allreduce_", 40, 50), op("record_param_comms", 41, 48),
        op("gloo:all_reduce", 10, 20, tid=2, cat="user_annotation"),
        op("gloo:all_reduce", 45, 40, tid=2, cat="user_annotation"),
    ]}
    comm_ms, hidden = timeline.communication(write(tmp_path, doc))
    assert comm_ms == pytest.approx(0.060) and hidden == pytest.approx(1 / 3)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not e["name"].startswith("gloo:")]
    assert timeline.communication(write(tmp_path, doc)) is None  # no collective recorded


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="missing.json: cannot read"):
        timeline.analyze(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{\"traceEvents\": [", encoding="utf-8")
    with pytest.raises(UserError, match="bad.json: not a readable JSON trace"):
        timeline.analyze(tmp_path / "bad.json")
    with pytest.raises(UserError, match="no ProfilerStep#9; its steps: 5, 6"):
        timeline.analyze(write(tmp_path, two_step_trace()), step=9)
    (tmp_path / "mem.json").write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(UserError, match="not a PyTorch memory timeline"):
        timeline.analyze(write(tmp_path, two_step_trace()), tmp_path / "mem.json")


def test_timeline_command(tmp_path):
    path = write(tmp_path, two_step_trace())
    res = subprocess.run([sys.executable, "-m", "tinylab", "timeline", str(path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "step 6: host-bound" in res.stdout or "step 5:" in res.stdout
    res = subprocess.run([sys.executable, "-m", "tinylab", "timeline", str(path), "--step", "6", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and json.loads(res.stdout)["shown_step"] == 6
    res = subprocess.run([sys.executable, "-m", "tinylab", "timeline", str(path), "--step", "2"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def gloo_ms_a_step(path) -> float:
    """Independently of the module: the union of gloo's all-reduce ranges inside each ProfilerStep
    window, averaged over the windows."""
    with gzip.open(path) as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    windows = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#")]
    per_step = []
    for lo, hi in windows:
        ranges = sorted((max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in events
                        if e["name"].startswith("gloo:") and e["ts"] < hi and e["ts"] + e["dur"] > lo)
        total, end = 0.0, float("-inf")
        for a, b in ranges:
            total += max(0.0, b - max(a, end))
            end = max(end, b)
        per_step.append(total / 1e3)
    return sum(per_step) / len(per_step)


@pytest.mark.parametrize("rank", [0, 1])
def test_collectives_of_a_real_two_rank_cpu_run(rank):
    """Each rank's gloo all-reduces a step, as the trainer recorded them in its rank event, and as
    the gloo ranges of the trace add up; the shown text says them."""
    recorded = [json.loads(line) for line in (DDP2 / "rank_events.jsonl").read_text().splitlines()][rank]
    result = timeline.analyze(DDP2 / f"rank{rank}" / "trace.json.gz")
    comm = result.communication
    assert comm.steps == 2 and comm.ms == pytest.approx(gloo_ms_a_step(DDP2 / f"rank{rank}" / "trace.json.gz"))
    assert comm.ms == pytest.approx(recorded["comm_ms"]) and comm.hidden == pytest.approx(recorded["comm_hidden"])
    assert 0.0 <= comm.hidden < 0.5  # the step thread mostly waits for gloo on a CPU
    assert timeline.analyze(CPU_RUN / "trace.json.gz").communication is None  # one process: no collectives


def test_timeline_command_takes_a_rank_of_a_run_of_several(tmp_path):
    from support.runs import ddp2_run

    run = ddp2_run(tmp_path / "runs")
    recorded = [json.loads(line) for line in (DDP2 / "rank_events.jsonl").read_text().splitlines()]

    def timeline_cli(*args):
        return subprocess.run([sys.executable, "-m", "tinylab", "timeline", run.id, "--runs-dir", str(tmp_path / "runs"),
                               *args], capture_output=True, text=True, timeout=60)

    res = timeline_cli()
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"timeline of {run.id} rank 0 of 2 v1 fp32 on x86_64")
    assert f"collectives: {recorded[0]['comm_ms']:.2f} ms a step" in res.stdout
    res = timeline_cli("--rank", "1", "--json")
    data = json.loads(res.stdout)
    assert (data["rank"], data["ranks"]) == (1, [0, 1]) and data["source"].endswith("rank1/trace.json.gz")
    assert data["communication"]["ms"] == pytest.approx(recorded[1]["comm_ms"])
    res = timeline_cli("--rank", "2")
    assert res.returncode == 2 and res.stderr == f"tinylab: error: --rank 2: run {run.id} has traces of ranks 0, 1\n"


def test_merge_is_the_union_of_the_intervals():
    """merge() against the loop it replaced (sort, then extend the last interval or start one)."""
    import random

    def reference(intervals):
        merged = []
        for start, end in sorted(intervals):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return [(a, b) for a, b in merged]

    rng = random.Random(0)
    for _ in range(200):
        intervals = [(a, a + rng.choice([0.0, rng.uniform(0, 30)])) for a in
                     (round(rng.uniform(0, 100), rng.choice([0, 3])) for _ in range(rng.randrange(0, 40)))]
        assert timeline.merge(intervals) == reference(intervals)


def test_what_a_window_launched_is_found_by_launch_time_in_the_events_order():
    """Launched in [lo, hi): by the launch where one was recorded, else by the GPU start; events
    launched out of their GPU order come back in the trace's order (sums then add up the same)."""
    g = timeline.GpuEvent
    events = [g(10.0, 11.0, "a", 9.0, True, True), g(12.0, 13.0, "b", 2.0, True, True),
              g(14.0, 15.0, "c", None, True, True), g(16.0, 17.0, "d", 5.0, True, True),
              g(18.0, 19.0, "e", float("nan"), True, True)]
    trace = timeline.Trace("t", [], [], events, 0, 1, None)
    assert [e.name for e in trace.launched_in(0.0, 100.0)] == ["a", "b", "c", "d"]  # a NaN launch: in none
    assert [e.name for e in trace.launched_in(2.0, 9.0)] == ["b", "d"]  # lo inside, hi outside
    assert [e.name for e in trace.launched_in(9.0, 14.5)] == ["a", "c"]
    assert trace.launched_in(20.0, 30.0) == []


def _lane_one_interval_at_a_time(busy, lo, hi, width=timeline.LANE_WIDTH):
    cell = (hi - lo) / width
    filled = [0.0] * width
    for a, b in busy:
        first, last = int((a - lo) / cell), min(width - 1, int((b - lo) / cell))
        for i in range(max(0, first), last + 1):
            filled[i] += max(0.0, min(b, lo + (i + 1) * cell) - max(a, lo + i * cell))
    return "".join(next((ch for limit, ch in timeline.LANE_CHARS if f / cell > limit), ".") for f in filled)


@pytest.mark.parametrize("seed", range(20))
def test_the_lane_is_the_one_a_loop_over_the_intervals_draws(seed):
    """Cells summed in numpy, in the order a loop adds them: the same characters, to the last bit
    (intervals past both ends, spanning many cells, a few µs, touching cell edges)."""
    import random

    rng = random.Random(seed)
    lo = rng.uniform(0, 1e6)
    hi = lo + rng.choice([7.0, 1e3, 3.3e4])
    points = sorted(rng.uniform(lo - 50, hi + 50) for _ in range(rng.randrange(0, 400)))
    points += [lo + (hi - lo) * k / timeline.LANE_WIDTH for k in range(0, timeline.LANE_WIDTH, 7)]
    busy = timeline.merge([(a, a + rng.expovariate(1 / ((hi - lo) / 50))) for a in sorted(points)])
    assert timeline.lane(busy, lo, hi) == _lane_one_interval_at_a_time(busy, lo, hi)
    assert timeline.lane([], lo, hi) == "." * timeline.LANE_WIDTH
