"""Measured ceilings of this device: copy bandwidth and GEMM rates, for rooflines and floors.

Datasheet numbers are leads, not ceilings: what a kernel can reach is what the device does on a
large copy and a large matrix product, measured here, in the same process as the bench.
"""

from __future__ import annotations

from typing import Any


def _median_ms(fn, torch, iters: int = 20, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def measure_copy_gbps(torch, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy, counting bytes read plus bytes written."""
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src), torch)
    return 2 * nbytes / (ms / 1e3) / 1e9


def measure_gemm_tflops(torch, m: int, n: int, k: int, dtype, tf32: bool = False) -> float:
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        ms = _median_ms(lambda: a @ b, torch)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return 2 * m * n * k / (ms / 1e3) / 1e12


def measure_ceilings(model_shapes: list[tuple[int, int, int]] | None = None) -> dict[str, Any]:
    """Copy GB/s and GEMM TFLOP/s (large square and the model's own shapes) per precision."""
    import torch

    if not torch.cuda.is_available():
        return {"device": None, "note": "no GPU: ceilings are measured on GPUs only"}
    shapes = model_shapes or [(1024, 2048, 512), (1024, 512, 2048), (1024, 4096, 512)]
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "copy_gbps": measure_copy_gbps(torch), "gemm_tflops": {},
                           # a kernel whose data fits here can beat the DRAM roof (analysis/roofline.py)
                           "l2_bytes": getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None)}
    for label, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)):
        big = measure_gemm_tflops(torch, 8192, 8192, 8192, dtype, tf32)
        model = [measure_gemm_tflops(torch, m, n, k, dtype, tf32) for m, n, k in shapes]
        out["gemm_tflops"][label] = {"large": big, "model_shapes": max(model), "model_shapes_min": min(model)}
    return out
