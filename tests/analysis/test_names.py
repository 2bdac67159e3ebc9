"""Short kernel names: vendor GEMMs in words, PyTorch templates by their operation, SDPA aliases,
checked on the kernel names of real traces (H100 PyTorch profiler, ncu)."""

from __future__ import annotations

import gzip
import json

import pytest
from support.paths import FIX

from tinylab.analysis.hotspots import summarize
from tinylab.core.kernel_table import table_from_durations
from tinylab.core.names import short_name, short_names
from tinylab.render.hotspots import render_text

H100_TRACE = FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"


@pytest.mark.parametrize(("name", "short"), [
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)",
     "cutlass simt sgemm 256x128 (nn)"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
     "xmma gemm f32 tn 64x256"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_split_k_kernel__5x_cublas",
     "xmma gemm f32 nn 32x32 split-k"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "xmma gemm bf16 tn 128x128"),
    ("aten::_scaled_dot_product_flash_attention", "aten::sdpa_flash"),
    ("aten::_scaled_dot_product_efficient_attention_backward", "aten::sdpa_efficient_backward"),
    ("aten::scaled_dot_product_attention", "aten::sdpa"),
    ("ampere_sgemm_128x64_tn", "ampere sgemm 128x64 (tn)"),
    ("nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NNT", "nvjet tst 128x64 (NNT)"),
    ("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB1", "tensile BBS 128x128x64 (Alik_Bljk)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
     "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", "vectorized_elementwise<CUDAFunctor_add>"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)",
     "reduce<MeanOps>"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, true, false, false, false>"
     "(cublasLt::cublasSplitKParams<float>, float const*)", "cublasLt::splitKreduce<…>"),
    # ncu's demangling drops "at::" and writes lambdas as [lambda() (instance 1)]
    ("void unnamed>::distribution_elementwise_grid_stride_kernel<unsigned int, 4, void templates::random_from_to_kernel"
     "<CUDAGeneratorImpl *>(TensorIteratorBase &, unsigned long, long, T1)::[lambda() (instance 1)]::operator ()() const>"
     "(long, PhiloxCudaState, T3, T4)", "distribution_elementwise_grid_stride<random_from_to>"),
    ("_attn_fwd_kernel", "_attn_fwd_kernel"),
    ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0"),
    ("divide_kernel(float*, int)", "divide_kernel"),
    ("aten::mm", "aten::mm"),
])
def test_short_name(name, short):
    assert short_name(name) == short


def kernel_names() -> list[str]:
    with gzip.open(H100_TRACE) as fh:
        events = json.load(fh)["traceEvents"]
    return sorted({e["name"] for e in events if e.get("cat") == "kernel"})


def test_every_kernel_of_a_real_trace_gets_a_short_readable_name():
    names = kernel_names()
    shorts = [short_name(n) for n in names]
    assert len(names) > 40
    for name, short in zip(names, shorts):
        assert 0 < len(short) <= 55, (short, name)
        assert "(anonymous namespace)" not in short and "at::native" not in short and not short.startswith("void ")
    # the operation survives: the elementwise kernels are told apart by it
    assert {"vectorized_elementwise<silu>", "vectorized_elementwise<silu_backward>", "elementwise<direct_copy>",
            "multi_tensor_apply<LerpFunctor>", "cutlass simt sgemm 64x64 (nt)"} <= set(shorts)


def test_repeated_short_names_are_numbered():
    names = ["void (anonymous namespace)::softmax_warp_forward<float, float, float, 6, false, false>(float*)",
             "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, true, false>(float*)", "aten::mm"]
    assert short_names(names) == ["softmax_warp_forward<…>", "softmax_warp_forward<…> #2", "aten::mm"]
    # one kernel listed on two ranks (hotspots --rank all) is one name, not two
    assert short_names([names[1], names[0], names[1]]) == ["softmax_warp_forward<…>", "softmax_warp_forward<…> #2",
                                                           "softmax_warp_forward<…>"]


def test_hotspots_text_shows_short_names_and_json_keeps_full_ones():
    import pandas as pd

    names = kernel_names()[:5]
    table = table_from_durations(pd.Series(names), pd.Series([1000.0] * len(names)))
    summary = summarize(table, None, None, fmt="pytorch-trace")
    text = render_text(summary, "trace", width=140)
    assert all(short_name(n) in text for n in names)
    assert {k.name for k in summary.kernels} == set(names)
