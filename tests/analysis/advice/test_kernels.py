"""The kernels' own rules: fp32 GEMMs and GEMM-bound steps on the graphed H100 v4 run's real trace,
eager attention's S x S scores, a custom kernel slower than the GEMMs, and compiled kernels that
spill or hold few warps (KernelReports as the anatomy makes them, without compiling)."""

from __future__ import annotations

import dataclasses

import pytest

from tinylab.anatomy import KernelReport, Occupancy
from tinylab.analysis.advice.kernels import (
    attention_scores,
    fp32_gemms,
    gemm_bound,
    kernel_occupancy,
    kernel_spills,
    slow_custom_kernel,
)
from tinylab.analysis.advice.model import Facts

from support.advice import config, eager_facts, summary, v4_graph_facts


def test_fp32_gemms_on_tensor_cores_are_bounded_by_the_datasheet_ratio_and_half_the_bytes():
    f = v4_graph_facts()
    item = fp32_gemms(f)
    shown, (step, _) = f.shown_step(), f.step_ms()
    cats, busy = shown["categories_ms"], shown["busy_ms"]
    matrix = cats["gemm"] + cats["attention"]
    floor = (step - busy) + matrix / (989.4 / 66.9) + (busy - matrix) / 2
    assert item.impact.bound == pytest.approx(step / floor)
    # measured on an H100 (docs/performance.md): v4 bf16 ran 1.62 ms against fp32's 6.37, 3.9x: inside the bound
    assert 6.37 / 1.62 < item.impact.bound
    assert item.action.changes == {"precision": "bf16"}
    assert fp32_gemms(dataclasses.replace(f, config=config(version="v4", precision="bf16"))) is None
    assert fp32_gemms(dataclasses.replace(f, device_name="a card without a datasheet")) is None


def test_a_busy_gpu_spent_in_gemms_is_a_positive_finding():
    item = gemm_bound(v4_graph_facts())
    assert item.severity == "good" and "GEMMs 79% of it" in item.measured.text
    assert gemm_bound(eager_facts()) is None
    roof = {"points": [{"name": "all GEMMs (vendor BLAS)", "pct_of_roof": 81.0, "achieved_tflops": 40.0,
                        "roof_tflops": 49.4}]}
    assert "81% of their roof" in gemm_bound(Facts("r", roofline=roof)).measured.text


def test_eager_attention_at_long_sequences_keeps_s_by_s_tensors_for_the_backward():
    cfg = config(seq_len=1024)
    item = attention_scores(Facts("r", config=cfg, device="cuda:0", summary=summary(peak_mem_mb=8000.0)))
    removable = 8 * 8 * 1024**2 * ((4 + 4) * 8 + 12) / 2**20
    assert item.impact.bound == pytest.approx(8000 / (8000 - removable)) and item.impact.metric == "peak_mem_mb"
    assert item.action.changes == {"version": "v2", "sdpa": True, "qkv_fusion": False, "swiglu_fusion": False}
    flash = Facts("r", config=config(version="v2", sdpa=True, seq_len=1024), summary=summary(peak_mem_mb=8000.0))
    assert attention_scores(flash) is None
    short = Facts("r", config=config(), summary=summary(peak_mem_mb=8000.0))  # seq 128: 1% of the peak
    assert attention_scores(short) is None


def _table(top: str, top_ns: float, gemm_ns: float) -> dict:
    return {"total_ns": top_ns + gemm_ns, "kernel_count": 2,
            "kernels": [{"name": top, "total_ns": top_ns, "calls": 48}, {"name": "sm90_xmma_gemm", "total_ns": gemm_ns}],
            "categories": {"gemm": {"total_ns": gemm_ns, "calls": 200}}}


def test_a_custom_kernel_slower_than_every_gemm_should_have_been_one():
    f = Facts("r", config=config(version="v3", fault="naive-triton-swiglu"), device="cuda:0", kernel_source="k.csv",
              kernel_steps=3, summary=summary(step_ms_median=40.0, step_ms_p10=39.0, step_ms_p90=41.0),
              kernels=_table("_naive_swiglu_ffn_kernel", 60e6, 20e6))
    item = slow_custom_kernel(f)
    assert "_naive_swiglu_ffn_kernel: 75% of the kernel time, 20.00 ms a step" in item.measured.text
    assert item.impact.bound == pytest.approx(2.0) and item.action.changes == {"fault": None}
    vendor = dataclasses.replace(f, kernels=_table("ampere_sgemm_128x64", 60e6, 20e6))
    assert slow_custom_kernel(vendor) is None


def _report(regs: int, warps: int, spilled: int = 0) -> KernelReport:
    occupancy = Occupancy(warps, "warps/SM", "registers" if warps < 64 else "none", {"registers": warps})
    return KernelReport("sm_90", 4, {"regs": regs}, 0, spilled, {"stores": spilled, "loads": spilled}, occupancy)


def test_compiled_kernels_that_spill_or_hold_few_warps_are_named():
    anatomy = (("rmsnorm_fwd", _report(32, 64)), ("attn_bwd_dkdv", _report(255, 8, spilled=96)))
    f = Facts("r", config=config(version="v4"), anatomy=anatomy, anatomy_target="sm_90")
    assert "attn_bwd_dkdv (stores 96 loads 96)" in kernel_spills(f).measured.text
    assert "attn_bwd_dkdv 8/64" in kernel_occupancy(f).measured.text
    clean = Facts("r", anatomy=(("rmsnorm_fwd", _report(32, 64)),), anatomy_target="sm_90")
    assert kernel_spills(clean) is None and kernel_occupancy(clean) is None
