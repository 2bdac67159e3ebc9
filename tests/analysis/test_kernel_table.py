"""The normalized kernel table's rules: categories, merged names, derived shares."""

from __future__ import annotations

import pytest
from support.tables import table_of

from tinylab.core.categories import CATEGORIES, categorize
from tinylab.core.kernel_table import KERNEL_COLUMNS

# Real names from the fixtures (and our kernels/ Triton functions), with the category a learner expects.
NAMES = {
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel_trt": "gemm",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>(cutlass_80_simt_sgemm_64x64_8x5_nt_align1::Params)": "gemm",
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)": "gemm",
    "Cijk_Ailk_Bljk_SB_MT64x64x16_MI16x16x4x1_SN_1LDSB0_AMAS3": "gemm",
    "nvjet_tst_128x64_64x6_1x1_v_bz_coopA_NT": "gemm",
    "igemm_fwd_gtcx3_nhwc_fp16_bx0_ex0_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64_gkgs": "gemm",
    "batched_matrix_multiplication(unsigned int, unsigned int, unsigned int)": "gemm",
    "aten::mm": "gemm",
    "aten::addmm": "gemm",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t> >(Flash_fwd_params)": "attention",
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80": "attention",
    "_attn_fwd_kernel": "attention",
    "_attn_bwd_dkdv_kernel": "attention",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 7, false, false>(float*, float const*, int, int, int, bool const*, int, bool)": "attention",
    "aten::_softmax": "attention",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)": "reduction",
    "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)": "reduction",
    "_cross_entropy_kernel": "reduction",
    "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)": "reduction",
    "aten::sum": "reduction",
    "aten::mean": "reduction",
    "_rmsnorm_fwd_kernel": "norm",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)": "norm",
    "MIOpenBatchNormBwdSpatial": "norm",
    "aten::rms_norm": "norm",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)": "elementwise",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, bool, float, float, float, float, float, float*, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, bool, float, float, float, float, float, float*, float*, float*)": "elementwise",
    "_swiglu_fwd_kernel": "elementwise",
    "_adamw_kernel": "elementwise",  # v4's optimizer (kernels.adamw)
    "_embedding_backward_kernel": "elementwise",
    "_rope_kernel": "elementwise",
    "SubTensorOpWithScalar1d": "elementwise",
    "aten::mul": "elementwise",
    "void at::native::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<long, unsigned int>, int, int, unsigned int, unsigned int, long)": "elementwise",
    "__amd_rocclr_copyBuffer": "memcpy",
    "__amd_rocclr_fillBufferAligned": "memcpy",
    "Memcpy DtoD (Device -> Device)": "memcpy",
    "[CUDA memcpy HtoD]": "memcpy",
    "MEMORY_COPY_HOST_TO_DEVICE": "memcpy",
    "triton_poi_fused_add_mul_0": "triton",
    "triton_red_fused__to_copy_mean_pow_1": "triton",
    "triton_tem_fused_mm_2": "triton",
    # NCCL 2.x and RCCL kernels, named after the reduction or copy they do: communication wins
    "rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)": "communication",  # the MI300A fixture's
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)": "communication",
    "ncclKernel_AllReduce_RING_LL_Sum_float": "communication",
    "void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)": "communication",
    "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL": "communication",
    "ncclDevKernel_SendRecv": "communication",
    "ncclDevKernel_Broadcast_RING_LL": "communication",
    # the host's collectives: gloo's ranges, NCCL's, and PyTorch's c10d ops
    "gloo:all_reduce": "communication",
    "nccl:all_reduce": "communication",
    "c10d::allreduce_": "communication",
    "c10d::_reduce_scatter_base_": "communication",
    "_c10d_functional::all_gather_into_tensor": "communication",
    "record_param_comms": "communication",
    # DDP's bucket bookkeeping copies and scales: a "reducer" is no reduction, nor a collective
    "torch.distributed.ddp.reducer::copy_bucket_to_grad": "elementwise",
    "torch::distributed::reducer::mul_out": "elementwise",
    "__omp_offloading_30_57b9f__QMnorm_modPnorm_l23": "other",
}


@pytest.mark.parametrize("name,category", NAMES.items(), ids=[n[:40] for n in NAMES])
def test_categorize(name, category):
    assert categorize(name) == category


def test_every_category_is_reachable():
    assert set(NAMES.values()) == set(CATEGORIES)


def test_build_table_merges_names_and_derives_shares():
    t = table_of([("aten::mm", 2, 600.0), ("aten::add", 4, 300.0), ("aten::mm", 1, 100.0)])
    assert list(t.columns) == KERNEL_COLUMNS
    assert t.to_dict("records")[0] == {"name": "aten::mm", "calls": 3, "total_ns": 700.0, "avg_ns": pytest.approx(700 / 3),
                                       "min_ns": pytest.approx(float("nan"), nan_ok=True),
                                       "max_ns": pytest.approx(float("nan"), nan_ok=True), "pct": 70.0, "category": "gemm"}
    assert t["pct"].tolist() == [70.0, 30.0]


def test_a_table_from_name_codes_is_the_table_from_the_names():
    """Dispatches grouped by integer code (a categorical's, the trace reader's) give exactly the
    table the names themselves give."""
    import numpy as np
    import pandas as pd

    from tinylab.core.kernel_table import table_from_codes, table_from_durations

    rng = np.random.default_rng(0)
    names = ("aten::mm", "_attn_fwd_kernel", "Memcpy DtoD (Device -> Device)", "ncclDevKernel_AllReduce")
    codes = rng.integers(0, len(names), 5000)
    durations = rng.uniform(0.5, 900.0, 5000) * 1e3
    by_name = table_from_durations(pd.Series([names[c] for c in codes]), pd.Series(durations))
    pd.testing.assert_frame_equal(table_from_codes(codes, names, durations), by_name, check_exact=True)
    categorical = pd.Series(pd.Categorical.from_codes(codes, categories=list(names)))
    pd.testing.assert_frame_equal(table_from_durations(categorical, pd.Series(durations)), by_name, check_exact=True)
