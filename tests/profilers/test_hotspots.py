"""The normalized table's rules (categories, shares, diffs) and the `tinylab hotspots` command."""

from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd
import pytest

from tinylab.analysis.hotspots import (
    display_name,
    format_ns,
    kernel_diff,
    load_run_kernel_table,
    summarize,
)
from tinylab.analysis.kernel_table import CATEGORIES, KERNEL_COLUMNS, build_table, categorize, counts_table
from tinylab.cli import main
from tinylab.errors import UserError
from tinylab.events import EventWriter
from tinylab.runs.store import mark_run
from tinylab.profilers import CollectResult, write_kernel_table

from . import samples
from .conftest import FIX

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
    "rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)": "other",
    "__omp_offloading_30_57b9f__QMnorm_modPnorm_l23": "other",
}


@pytest.mark.parametrize("name,category", NAMES.items(), ids=[n[:40] for n in NAMES])
def test_categorize(name, category):
    assert categorize(name) == category


def test_every_category_is_reachable():
    assert set(NAMES.values()) == set(CATEGORIES)


def table_of(rows: list[tuple[str, int, float]]) -> pd.DataFrame:
    return build_table(pd.DataFrame(rows, columns=["name", "calls", "total_ns"]))


def test_build_table_merges_names_and_derives_shares():
    t = table_of([("aten::mm", 2, 600.0), ("aten::add", 4, 300.0), ("aten::mm", 1, 100.0)])
    assert list(t.columns) == KERNEL_COLUMNS
    assert t.to_dict("records")[0] == {"name": "aten::mm", "calls": 3, "total_ns": 700.0, "avg_ns": pytest.approx(700 / 3),
                                       "min_ns": pytest.approx(float("nan"), nan_ok=True),
                                       "max_ns": pytest.approx(float("nan"), nan_ok=True), "pct": 70.0, "category": "gemm"}
    assert t["pct"].tolist() == [70.0, 30.0]


def test_summarize_top_category_and_totals():
    t = table_of([("a_gemm", 1, 500.0), ("b_add", 10, 300.0), ("c_mul", 5, 150.0), ("d_sum", 1, 50.0)])
    s = summarize(t, 2, None, fmt="x", note="n")
    assert (s["format"], s["note"], s["total_ns"], s["kernel_count"]) == ("x", "n", 1000, 4)
    assert [k["name"] for k in s["kernels"]] == ["a_gemm", "b_add"]
    assert s["categories"]["elementwise"] == {"total_ns": 450, "pct": 45.0, "calls": 15, "kernels": 2}
    assert list(s["categories"]) == ["gemm", "elementwise", "reduction"]
    only = summarize(t, None, "elementwise")
    assert [k["name"] for k in only["kernels"]] == ["b_add", "c_mul"]
    assert only["total_ns"] == 1000 and only["kernels"][1]["pct"] == 15.0  # share of ALL kernel time
    with pytest.raises(UserError, match="unknown category 'conv': choose one of gemm, attention"):
        summarize(t, None, "conv")


def test_summarize_counts_only_table_sorts_by_calls():
    s = summarize(counts_table(pd.Series(["a_add", "b_mul", "b_mul", "c_gemm", "c_gemm", "c_gemm"])), None, None)
    assert s["total_ns"] is None
    assert [(k["name"], k["calls"], k["total_ns"], k["pct"]) for k in s["kernels"]] == [
        ("c_gemm", 3, None, None), ("b_mul", 2, None, None), ("a_add", 1, None, None)]
    assert s["categories"]["elementwise"] == {"total_ns": None, "pct": None, "calls": 3, "kernels": 2}


def test_kernel_diff():
    a = table_of([("gemm_a", 10, 1000.0), ("softmax_k", 10, 500.0), ("gone", 1, 50.0)])
    b = table_of([("gemm_a", 10, 900.0), ("softmax_k", 10, 100.0), ("flash_fwd", 10, 200.0)])
    d = kernel_diff(a, b, top=10)
    assert d["appeared"] == [{"name": "flash_fwd", "total_ns": 200, "calls": 10, "category": "attention"}]
    assert d["disappeared"] == [{"name": "gone", "total_ns": 50, "calls": 1, "category": "other"}]
    assert [c["name"] for c in d["changed"]] == ["softmax_k", "gemm_a"]  # by |delta|: 400 before 100
    assert d["changed"][0] == {"name": "softmax_k", "a_total_ns": 500, "b_total_ns": 100, "ratio": 0.2, "a_calls": 10, "b_calls": 10}
    assert kernel_diff(a, b, top=1)["changed"] == d["changed"][:1]


def test_display_name_and_format_ns():
    long = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
    assert display_name(long) == "vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1ul> >"
    assert display_name("aten::mm") == "aten::mm" and display_name("divide_kernel(float*, int)") == "divide_kernel"
    assert [format_ns(v) for v in (None, float("nan"), 950, 12_345, 4_560_000, 2.5e9)] == ["-", "-", "950 ns", "12.3 us", "4.56 ms", "2.5 s"]


# ----------------------------------------------------------------------------- run folders
def make_run(tmp_path, events: list[dict]):
    run = tmp_path / "runs" / "20260101-000000-abcd"
    run.mkdir(parents=True)
    mark_run(run)
    (run / "config.json").write_text("{}")
    with EventWriter(run / "events.jsonl") as ev:
        for e in events:
            ev.emit(e.pop("event"), **e)
    return run


def test_load_run_kernel_table_takes_the_newest_profile_with_a_table(tmp_path):
    run = make_run(tmp_path, [])
    older = write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 1, 10.0)]), "cpu", "pytorch-operators"))
    newer = write_kernel_table(run, "rocprofv3", CollectResult({}, table_of([("Cijk_x", 2, 20.0)]), None, "rocprofv3-kernel-stats"))
    none = write_kernel_table(run, "deepspeed", CollectResult({}, None, "flops", "deepspeed-flops"))
    with EventWriter(run / "events.jsonl") as ev:
        for fields in (older, newer, none):
            ev.emit("profile", **fields)
    table, fmt = load_run_kernel_table(run)
    assert fmt == "rocprofv3-kernel-stats" and table["name"].tolist() == ["Cijk_x"]
    assert load_run_kernel_table(make_run(tmp_path / "other", [{"event": "start"}])) is None


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["hotspots", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_on_a_native_file(capsys):
    path = FIX / "rocprofv3/hpctraining-pytorch-resnet/pid_kernels_kernel_stats.mpi_rank.csv"
    code, out, _ = run_cli(capsys, str(path), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["source"] == str(path) and data["format"] == "rocprofv3-kernel-stats"
    assert set(data) >= {"source", "format", "total_ns", "kernels"}
    kernels = data["kernels"]
    assert len(kernels) == 9 and all(set(k) == set(KERNEL_COLUMNS) for k in kernels)
    assert [k["total_ns"] for k in kernels] == sorted((k["total_ns"] for k in kernels), reverse=True)
    assert data["total_ns"] == sum(k["total_ns"] for k in kernels) == 997540814
    assert any(k["name"].endswith("at::detail::Array<char*, 2>)") for k in kernels)  # full, untruncated
    assert math.isclose(sum(k["pct"] for k in kernels), 100, abs_tol=1e-3)


def test_cli_csv_top_and_text(capsys):
    path = str(FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz")
    code, out, _ = run_cli(capsys, path, "--csv", "--top", "3")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and rows[0] == KERNEL_COLUMNS and len(rows) == 4
    code, out, _ = run_cli(capsys, path, "--category", "gemm")
    assert code == 0
    lines = out.splitlines()
    assert "[pytorch-trace]" in lines[0] and "52 kernels" in lines[0]
    assert all("gemm" in line for line in lines[2:-1]) and lines[-1].startswith("by category: elementwise 54.8%")


def test_cli_counts_only_says_so(capsys, tmp_path):
    path = tmp_path / "timestamps.csv"
    path.write_text(samples.rounded_compute_timestamps())
    code, out, _ = run_cli(capsys, str(path), "--json")
    data = json.loads(out)
    assert data["total_ns"] is None and data["kernels"][0]["calls"] == 3 and "rounded" in data["note"]
    code, out, _ = run_cli(capsys, str(path))
    assert "no durations" in out.splitlines()[0] and "note: timestamps are rounded" in out


def test_cli_run_folder_and_run_id(capsys, tmp_path):
    run = make_run(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        ev.emit("profile", **write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]), None, "pytorch-operators")))
    for ref in (str(run), "20260101", "last"):
        code, out, err = run_cli(capsys, ref, "--json", "--runs-dir", str(tmp_path / "runs"))
        assert code == 0, err
        assert json.loads(out)["kernels"][0]["name"] == "aten::mm" and json.loads(out)["format"] == "pytorch-operators"


def test_cli_errors(capsys, tmp_path):
    empty_run = make_run(tmp_path, [{"event": "start"}])
    code, _, err = run_cli(capsys, str(empty_run))
    assert code == 2 and "this run has no kernel table" in err
    code, _, err = run_cli(capsys, "nope", "--runs-dir", str(tmp_path / "runs"))
    assert code == 2 and "no run matches 'nope'" in err
    code, _, err = run_cli(capsys, str(tmp_path / "missing.csv"))
    assert code == 2 and err == f"tinylab: error: {tmp_path / 'missing.csv'}: no such file or folder\n"
    with pytest.raises(SystemExit):
        main(["hotspots", "x", "--top", "0"])
