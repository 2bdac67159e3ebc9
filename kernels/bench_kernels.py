"""GPU microbenchmarks: each Triton kernel against its PyTorch peer, forward and forward+backward.

``run_kernel_benchmarks`` returns one row per kernel with our times, the achieved bandwidth
(bytes each tensor must move at least once, over the measured time) or FLOP rate, the peer's
times in the same row, and the bandwidth as a share of a plain device-to-device copy measured
in the same run (the practical ceiling for memory-bound kernels). Peers: the eager PyTorch
formulas of ``kernels.reference`` (what the v1 model runs), ``F.cross_entropy``, and SDPA's
flash backend for attention. Where Liger-Kernel is installed beside ours, its RMSNorm, fused
add+RMSNorm, SwiGLU, RoPE and cross-entropy run on the same inputs as a second peer
(``liger_ms_fwd_bwd``; ``vs_liger`` > 1 means ours is faster). It is never a dependency.

Times are medians over CUDA-graph replays (``triton.testing.do_bench_cudagraph``), i.e. GPU
time: at these sizes a Python-launched forward+backward costs about 0.2-0.4 ms of CPU time
(autograd, Triton's launcher, allocations), which can exceed the GPU time of a memory-bound
kernel. ``ms_fwd_bwd_launched`` shows what an eager (ungraphed) loop sees, overhead included.

Run: ``python -m kernels.bench_kernels [--dtype bf16]``; used by ``tinylab bench``. Needs a GPU.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

import kernels
from kernels import reference


def median_ms(fn: Callable[[], object]) -> float:
    from triton.testing import do_bench_cudagraph

    return float(do_bench_cudagraph(fn, rep=100, return_mode="median"))


def _ms_launched(fn: Callable[[], object]) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def fwd_bwd_step(fn: Callable, inputs: Sequence[Tensor], grad_inputs: Sequence[Tensor]) -> Callable[[], object]:
    """A closure running forward then backward (to every floating input) with fixed upstream grads."""
    with torch.no_grad():
        outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    upstream = [torch.randn_like(o) for o in outs]

    def step():
        res = fn(*inputs)
        res = res if isinstance(res, tuple) else (res,)
        return torch.autograd.grad(res, grad_inputs, upstream)

    return step


def _measure(fn: Callable, inputs: Sequence[Tensor], grad_inputs: Sequence[Tensor]) -> tuple[float, float, float]:
    """(ms forward, ms forward+backward, ms forward+backward launched without a graph)."""
    step = fwd_bwd_step(fn, inputs, grad_inputs)
    return median_ms(lambda: fn(*inputs)), median_ms(step), _ms_launched(step)


def liger_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("liger-kernel")
    except PackageNotFoundError:
        return None


def _liger_peers() -> dict[str, Callable] | None:
    """Liger-Kernel's equivalents of our kernels, each taking the inputs ours takes; None when
    absent (or too old to have them all).

    RMSNorm runs in Liger's "llama" casting mode (as ours: fp32 statistics, output in the input
    dtype) and out of place, so the fixed upstream gradient is not overwritten between replays.
    """
    if liger_version() is None:
        return None
    try:
        from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        from liger_kernel.ops.rope import LigerRopeFunction
        from liger_kernel.ops.swiglu import LigerFusedGateUpSiLUMulFunction
    except ImportError as exc:
        print(f"liger-kernel {liger_version()} lacks {exc.name or exc}: no Liger peer", file=sys.stderr)
        return None
    return {
        "rmsnorm": lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False),
        "add_rmsnorm": lambda x, r, w: LigerFusedAddRMSNormFunction.apply(x, r, w, 1e-6, 0.0, "llama", False),
        "swiglu": lambda gu: LigerFusedGateUpSiLUMulFunction.apply(gu),
        "rope": lambda q, k, cos, sin: LigerRopeFunction.apply(q, k, cos, sin),
        "cross_entropy": lambda logits, targets: LigerCrossEntropyFunction.apply(logits, targets, None)[0],
    }


def _liger_columns(liger: tuple[float, bool] | None, ms_fwd_bwd: float, ms_launched: float) -> dict:
    """``liger`` is Liger's (ms forward+backward, graphed?); a pair that could not be graphed is
    compared with our launched time, CPU overhead on both sides."""
    if not liger:
        return {"liger_ms_fwd_bwd": None, "vs_liger": None, "liger_timing": None}
    theirs, graphed = liger
    ours = ms_fwd_bwd if graphed else ms_launched
    return {"liger_ms_fwd_bwd": round(theirs, 4), "vs_liger": round(theirs / ours, 2),
            "liger_timing": "graph" if graphed else "launched"}


def _row(kernel, shape, dtype, ours, peer_name, peer, bytes_fwd_bwd=None, flops_fwd_bwd=None, copy_gbs=None,
         liger=None):
    """One table row; ``liger`` as _liger_columns takes it, where Liger-Kernel ran."""
    ms_fwd, ms_fwd_bwd, ms_launched = ours
    gbs = bytes_fwd_bwd / ms_fwd_bwd / 1e6 if bytes_fwd_bwd else None
    return {
        "kernel": kernel,
        "shape": shape,
        "dtype": str(dtype).replace("torch.", ""),
        "ms_fwd": round(ms_fwd, 4),
        "ms_fwd_bwd": round(ms_fwd_bwd, 4),
        "ms_fwd_bwd_launched": round(ms_launched, 4),
        "gb_per_s": round(gbs, 1) if gbs else None,
        "pct_of_copy_bw": round(100 * gbs / copy_gbs, 1) if gbs and copy_gbs else None,
        "tflop_s": round(flops_fwd_bwd / ms_fwd_bwd / 1e9, 1) if flops_fwd_bwd else None,
        "peer": peer_name,
        "peer_ms_fwd": round(peer[0], 4),
        "peer_ms_fwd_bwd": round(peer[1], 4),
        "peer_ms_fwd_bwd_launched": round(peer[2], 4),
        "speedup_fwd_bwd": round(peer[1] / ms_fwd_bwd, 2),
        **_liger_columns(liger, ms_fwd_bwd, ms_launched),
    }


def _randn(*shape, dtype, device, grad=True, scale=1.0):
    return (scale * torch.randn(*shape, device=device)).to(dtype).requires_grad_(grad)


def run_kernel_benchmarks(device: str | torch.device = "cuda", dtype: torch.dtype = torch.bfloat16) -> list[dict]:
    """Benchmark every kernel at training-sized shapes; returns one dict per row (see module doc)."""
    device = torch.device(device)
    if device.type != "cuda":
        raise RuntimeError("kernel benchmarks need a CUDA/ROCm GPU")
    es = torch.empty((), dtype=dtype).element_size()
    rows: list[dict] = []

    # Ceiling: device-to-device copy of a 16384 x 4096 tensor, bytes read + written.
    M, N = 16384, 4096
    src = torch.randn(M, N, device=device).to(dtype)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src))
    copy_gbs = 2 * src.numel() * es / copy_ms / 1e6
    rows.append({"kernel": "copy (ceiling)", "shape": f"{M}x{N}", "dtype": str(dtype).replace("torch.", ""),
                 "ms_fwd": round(copy_ms, 4), "ms_fwd_bwd": None, "ms_fwd_bwd_launched": None,
                 "gb_per_s": round(copy_gbs, 1), "pct_of_copy_bw": 100.0, "tflop_s": None,
                 "peer": None, "peer_ms_fwd": None, "peer_ms_fwd_bwd": None,
                 "peer_ms_fwd_bwd_launched": None, "speedup_fwd_bwd": None})
    del src, dst

    liger = _liger_peers()

    def liger_peer(name, inputs, grad_inputs=None, graph=True):
        if not liger:
            return None
        step = fwd_bwd_step(liger[name], inputs, grad_inputs or inputs)
        return (median_ms(step) if graph else _ms_launched(step)), graph

    # The large shape the issue names, then the model's own (batch 8 x seq 1024, hidden 512),
    # where a kernel is a few microseconds and launch shape matters more than bandwidth.
    for M, N in [(16384, 4096), (8192, 512)]:
        x, w = _randn(M, N, dtype=dtype, device=device), _randn(N, dtype=dtype, device=device)
        rows.append(_row(
            "rmsnorm", f"{M}x{N}", dtype, _measure(kernels.rmsnorm, [x, w], [x, w]),
            "eager", _measure(reference.rmsnorm_reference, [x, w], [x, w]),
            bytes_fwd_bwd=5 * M * N * es, copy_gbs=copy_gbs, liger=liger_peer("rmsnorm", [x, w]),
        ))
        r = _randn(M, N, dtype=dtype, device=device)
        rows.append(_row(
            "add_rmsnorm", f"{M}x{N}", dtype, _measure(kernels.add_rmsnorm, [x, r, w], [x, r, w]),
            "eager", _measure(reference.add_rmsnorm_reference, [x, r, w], [x, r, w]),
            bytes_fwd_bwd=8 * M * N * es, copy_gbs=copy_gbs, liger=liger_peer("add_rmsnorm", [x, r, w]),
        ))
        del x, r, w

    M, N = 16384, 4096
    gu = _randn(M, 2 * N, dtype=dtype, device=device)
    rows.append(_row(
        "swiglu", f"{M}x2*{N}", dtype, _measure(kernels.swiglu, [gu], [gu]),
        "eager", _measure(reference.swiglu_reference, [gu], [gu]),
        bytes_fwd_bwd=8 * M * N * es, copy_gbs=copy_gbs, liger=liger_peer("swiglu", [gu]),
    ))
    del gu

    B, S, H, D = 8, 2048, 16, 64
    xr = _randn(B, S, H, D, dtype=dtype, device=device)
    cos, sin = kernels.rope_cos_sin(S, D, device=device)
    # Liger rotates q and k together ([B, heads, S, D] views of [B, S, heads, D] memory, as a
    # model passes them) with HF's duplicated [S, D] tables: half the heads each, same bytes.
    # Its backward breaks CUDA-graph capture (cudaErrorStreamCaptureImplicit on an H200, Liger
    # 0.8.5), so that pair is compared as launched, CPU overhead included on both sides (as for
    # cross-entropy, whose forward reads a count back to the host with .item()).
    lq = _randn(B, S, H // 2, D, dtype=dtype, device=device).transpose(1, 2)
    lk = _randn(B, S, H // 2, D, dtype=dtype, device=device).transpose(1, 2)
    lcos, lsin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    rows.append(_row(
        "rope", f"{B}x{S}x{H}x{D}", dtype, _measure(kernels.rope, [xr, cos, sin], [xr]),
        "eager", _measure(reference.rope_reference, [xr, cos, sin], [xr]),
        bytes_fwd_bwd=4 * xr.numel() * es, copy_gbs=copy_gbs,
        liger=liger_peer("rope", [lq, lk, lcos, lsin], [lq, lk], graph=False),
    ))
    del xr, lq, lk

    Nt, V = 8192, 32000
    logits = _randn(Nt, V, dtype=dtype, device=device, scale=2.0)
    targets = torch.randint(0, V, (Nt,), device=device)
    rows.append(_row(
        "cross_entropy", f"{Nt}x{V}", dtype, _measure(kernels.cross_entropy, [logits, targets], [logits]),
        "F.cross_entropy", _measure(F.cross_entropy, [logits, targets], [logits]),
        bytes_fwd_bwd=4 * Nt * V * es, copy_gbs=copy_gbs, liger=liger_peer("cross_entropy", [logits, targets], [logits], graph=False),
    ))
    del logits

    for (B, H, KVH, S, D) in [(4, 16, 16, 2048, 64), (4, 16, 4, 2048, 64), (2, 16, 16, 2048, 128)]:
        q = _randn(B, H, S, D, dtype=dtype, device=device)
        k, v = _randn(B, KVH, S, D, dtype=dtype, device=device), _randn(B, KVH, S, D, dtype=dtype, device=device)
        # Causal: half of the 2*S*S*D multiply-adds of QK^T and PV forward; backward is 2.5x forward.
        flops = 3.5 * 4 * B * H * S * S * D * 0.5

        def sdpa(q, k, v, gqa=H != KVH):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)

        rows.append(_row(
            "flash_attention", f"B{B} H{H} KVH{KVH} S{S} D{D} causal", dtype,
            _measure(kernels.flash_attention, [q, k, v], [q, k, v]),
            "sdpa-flash", _measure(sdpa, [q, k, v], [q, k, v]), flops_fwd_bwd=flops,
        ))
        del q, k, v

    Mn, Dn, Fn = 2048, 512, 1408
    xn = _randn(Mn, Dn, dtype=dtype, device=device)
    wg, wu = _randn(Fn, Dn, dtype=dtype, device=device, scale=0.05), _randn(Fn, Dn, dtype=dtype, device=device, scale=0.05)
    rows.append(_row(
        "naive_swiglu_ffn", f"{Mn}x{Dn} -> {Fn}", dtype, _measure(kernels.naive_swiglu_ffn, [xn, wg, wu], [xn, wg, wu]),
        "2 GEMMs + eager silu", _measure(reference.swiglu_ffn_reference, [xn, wg, wu], [xn, wg, wu]),
        flops_fwd_bwd=3 * 2 * 2 * Mn * Dn * Fn,
    ))
    return rows


def format_rows(rows: list[dict]) -> str:
    cols = ["kernel", "shape", "ms_fwd", "ms_fwd_bwd", "ms_fwd_bwd_launched", "gb_per_s",
            "pct_of_copy_bw", "tflop_s", "peer", "peer_ms_fwd", "peer_ms_fwd_bwd",
            "peer_ms_fwd_bwd_launched", "speedup_fwd_bwd", "liger_ms_fwd_bwd", "vs_liger", "liger_timing"]
    table = [cols] + [["" if row.get(c) is None else str(row[c]) for c in cols] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(cols))]
    return "\n".join("  ".join(v.ljust(wd) for v, wd in zip(r, widths)) for r in table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    args = parser.parse_args(argv)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    print(f"liger-kernel {liger_version() or 'not installed (no Liger peer)'}")
    print(format_rows(run_kernel_benchmarks("cuda", dtype)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
