"""Between the kernels: launch-bound steps (on the real eager H100 trace; never on the graphed v4
one), host syncs and layout copies inside the phases (a hand-made trace with known answers), the
optimizer's share and chains of small elementwise kernels."""

from __future__ import annotations

import gzip
import json

import pytest

from tinylab.analysis.advice import advise
from tinylab.analysis.advice.model import Facts
from tinylab.analysis.advice.step import (
    elementwise_chains,
    host_sync,
    launch_bound,
    layout_copies,
    optimizer_share,
)
from tinylab.analysis.timeline import analyze

from support.advice import config, eager_facts, summary, v4_graph_facts


def test_an_idle_gpu_with_tiny_kernels_is_launch_bound_and_the_bound_is_the_gemms():
    f = eager_facts()
    item = launch_bound(f)
    shown = f.shown_step()
    gemm = shown["categories_ms"]["gemm"]
    assert item.measured.value == pytest.approx(1 - shown["busy_ms"] / shown["wall_ms"])
    assert "idle 95%" in item.measured.text and "median kernel 1.6 µs" in item.measured.text
    assert item.impact.bound == pytest.approx(shown["wall_ms"] / gemm) and item.impact.confidence == "high"
    assert item.action.changes == {"version": "v2", "qkv_fusion": True, "sdpa": True, "swiglu_fusion": True,
                                   "torch_compile": True, "cuda_graph": True}


def test_a_version_that_keeps_its_kernels_is_bounded_by_its_busy_time_under_a_graph():
    f = eager_facts(config=config(version="v3"))
    item = launch_bound(f)
    shown = f.shown_step()
    assert item.action.changes == {"cuda_graph": True}
    assert item.impact.bound == pytest.approx(shown["wall_ms"] / shown["busy_ms"])


def test_a_graph_replay_is_never_launch_bound():
    assert launch_bound(v4_graph_facts()) is None


def _event(name, ts, dur, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, corr):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": corr}}


@pytest.fixture
def synced_trace(tmp_path):
    """Step 3 [0, 1000) µs, forward [0, 600): a layout copy (aten::contiguous [100, 140) launching a
    copy kernel of 20 µs, then a norm kernel of 30 µs launched at 150 that reads it) and a 200 µs
    cudaStreamSynchronize at 300; the loop's own sync at 900, outside the phases, is not counted."""
    events = [
        _event("ProfilerStep#3", 0, 1000, cat="user_annotation"), _event("forward", 0, 600, cat="user_annotation"),
        _event("aten::contiguous", 100, 40), _event("cudaLaunchKernel", 110, 5, cat="cuda_runtime", correlation=1),
        _kernel("elementwise_copy", 120, 20, 1),
        _event("cudaLaunchKernel", 150, 5, cat="cuda_runtime", correlation=2), _kernel("_rmsnorm_fwd_kernel", 160, 30, 2),
        _event("cudaStreamSynchronize", 300, 200, cat="cuda_runtime", correlation=3),
        _event("cudaStreamSynchronize", 900, 50, cat="cuda_runtime", correlation=4),
    ]
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


def test_the_timeline_counts_host_calls_inside_the_phases_only(synced_trace):
    calls = analyze(synced_trace).to_json()["steps"][0]["host_calls"]
    assert calls["sync"] == {"count": 1, "ms": 0.2, "kernel_ms": 0.0}
    assert calls["layout_copy"] == {"count": 1, "ms": pytest.approx(0.04), "kernel_ms": pytest.approx(0.05)}


def test_syncs_and_layout_copies_in_the_phases_are_findings_sized_by_their_time(synced_trace):
    f = Facts("r", config=config(version="v3", fault="non-contiguous"), device="cuda:0", timeline=analyze(synced_trace).to_json(),
              trace="trace.json.gz", summary=summary(step_ms_median=1.0, step_ms_p10=0.99, step_ms_p90=1.01))
    sync = host_sync(f)
    assert "1 device syncs in the phases of step 3, 0.20 ms" in sync.measured.text
    assert sync.impact.bound == pytest.approx(1 / 0.8)  # the waits are 20% of the 1 ms step
    copies = layout_copies(f)
    assert "1 layout copies" in copies.measured.text and "0.050 ms with the copies and the kernels that read them" \
        in copies.measured.text
    assert copies.action.changes == {"fault": None}


def test_a_finding_inside_the_noise_says_so_instead_of_claiming_a_gain(synced_trace):
    f = Facts("r", config=config(version="v3"), device="cuda:0", timeline=analyze(synced_trace).to_json(), trace="t",
              summary=summary(step_ms_median=100.0, step_ms_p10=80.0, step_ms_p90=120.0))
    copies = layout_copies(f)
    assert copies.impact.bound is None and "inside this run's p10-p90 spread of 40%" in copies.impact.text


def test_the_optimizer_share_of_a_gpu_step_points_at_a_fused_adamw():
    heavy = summary(opt_ms_median=3.0)
    item = optimizer_share(Facts("r", config=config(), device="cuda:0", summary=heavy))
    assert item.action.changes == {"version": "v2", "qkv_fusion": False, "sdpa": False, "swiglu_fusion": False}
    assert optimizer_share(Facts("r", config=config(version="v4"), device="cuda:0", summary=heavy)) is None
    assert "optimizer-share" not in {i.rule for i in advise(Facts("r", config=config(), device="cpu", summary=heavy))}


def test_many_small_elementwise_launches_per_gemm_are_a_chain_to_fuse():
    kernels = {"total_ns": 30e6, "kernel_count": 2, "kernels": [],
               "categories": {"elementwise": {"calls": 900, "total_ns": 9e6}, "gemm": {"calls": 150, "total_ns": 21e6}}}
    f = Facts("r", config=config(), device="cuda:0", summary=summary(), kernels=kernels, kernel_source="kernels.csv",
              kernel_steps=3)
    item = elementwise_chains(f)
    assert "300 elementwise launches a step, 6.0 per GEMM launch; 3.00 ms a step" in item.measured.text
    assert item.impact.bound == pytest.approx(10 / 7) and item.action.changes["torch_compile"] is True
