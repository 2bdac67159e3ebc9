"""Measured ceilings of this device: copy bandwidth and GEMM rates for rooflines, and the
GEMM floor of a training step for the bench.

Datasheet numbers are leads, not ceilings: what a kernel can reach is what the device does on a
large copy and a large matrix product, measured here, in the same process as the bench.

The GEMM floor is the time of the step's own matrix products alone: every linear layer's
forward, input-gradient and weight-gradient GEMM at the model's shapes, captured in a CUDA graph
and replayed back to back, as the step runs them but with no launch gaps and no other kernel in
between. A step also runs attention, norms and the optimizer, so it cannot beat that floor. An
earlier floor (all the step's FLOPs at the rate of a few shapes timed one launch at a time)
counted each small GEMM's launch latency as GEMM time and came out above real steps (floor% 134).
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


def measure_ceilings() -> dict[str, Any]:
    """Copy GB/s, GEMM TFLOP/s of a large square product per precision, and the L2 size."""
    import torch

    if not torch.cuda.is_available():
        return {"device": None, "note": "no GPU: ceilings are measured on GPUs only"}
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "copy_gbps": measure_copy_gbps(torch), "gemm_tflops": {},
                           # a kernel whose data fits here can beat the DRAM roof (analysis/roofline.py)
                           "l2_bytes": getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None)}
    for label, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)):
        out["gemm_tflops"][label] = {"large": measure_gemm_tflops(torch, 8192, 8192, 8192, dtype, tf32)}
    return out


FLOOR_METHOD = "cuda-graph replay of the step's GEMMs"


def step_gemms(cfg) -> list[tuple[str, int, int, int]]:
    """The step's matrix products outside attention as (what, m, n, k): per layer the fused QKV
    projection, the output projection, the fused gate/up projection and the down projection, and
    the tied output projection; each forward (y = x W^T), then input gradient (dx = dy W) and
    weight gradient (dW = dy^T x). Fused projections are the arrangement the fastest versions
    run (larger GEMMs are more efficient), so the floor is a floor for every version."""
    t, d, f, hd = cfg.batch_size * cfg.seq_len, cfg.hidden_dim, cfg.ffn_dim, cfg.head_dim
    qkv = (cfg.num_heads + 2 * cfg.num_kv_heads) * hd
    linears = [("qkv", d, qkv), ("out", cfg.num_heads * hd, d), ("gate_up", d, 2 * f), ("down", f, d)]
    out = []
    for layer in range(cfg.num_layers):
        for name, n_in, n_out in linears:
            out += [(f"L{layer}.{name} fwd", t, n_out, n_in), (f"L{layer}.{name} dx", t, n_in, n_out),
                    (f"L{layer}.{name} dW", n_out, n_in, t)]
    v = cfg.vocab_size
    return out + [("lm_head fwd", t, v, d), ("lm_head dx", t, d, v), ("lm_head dW", v, d, t)]


def measure_gemm_floor(cfg, replays: int = 20) -> dict[str, Any]:
    """The step's GEMMs (step_gemms) replayed in one CUDA graph: median ms of a replay, and the
    rate it implies. Each layer has its own tensors, as in the model, so no GEMM finds another
    layer's operands in cache; layouts follow autograd's (x @ W.T, dy @ W, dy.T @ x)."""
    import torch

    if not torch.cuda.is_available():
        return {"floor_ms": None, "note": "no GPU: the GEMM floor is measured on GPUs only"}
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision, torch.float32)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = bool(cfg.tf32) and dtype == torch.float32
    try:
        t = cfg.batch_size * cfg.seq_len
        ops = []
        for what, _, n_out, n_in in (g for g in step_gemms(cfg) if g[0].endswith(" fwd")):
            w = torch.randn(n_out, n_in, device="cuda", dtype=dtype)
            x = torch.randn(t, n_in, device="cuda", dtype=dtype)
            dy = torch.randn(t, n_out, device="cuda", dtype=dtype)
            y, dx, dw = torch.empty_like(dy), torch.empty_like(x), torch.empty_like(w)
            ops += [lambda x=x, w=w, y=y: torch.mm(x, w.t(), out=y), lambda dy=dy, w=w, dx=dx: torch.mm(dy, w, out=dx),
                    lambda dy=dy, x=x, dw=dw: torch.mm(dy.t(), x, out=dw)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # cuBLAS picks its kernels and workspace before capture
            for op in ops:
                op()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for op in ops:
                op()
        ms = _median_ms(graph.replay, torch, iters=replays)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    flops = sum(2 * m * n * k for _, m, n, k in step_gemms(cfg))
    return {"floor_ms": ms, "gemm_tflops": flops / (ms / 1e3) / 1e12, "gemms": len(ops),
            "method": FLOOR_METHOD}
