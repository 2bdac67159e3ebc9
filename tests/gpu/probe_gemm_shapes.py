"""Time every GEMM of the v4 step at the model's shapes (bf16, CUDA-graph replays), in the
layouts v4 uses and in alternatives, to see which GEMMs sit below the large-GEMM rate."""
import argparse

import torch

from kernels.bench_kernels import median_ms
from models.v4_ultra import mm_fp32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=8192)
    args = ap.parse_args()
    T, H, Q, KV, F, V = args.tokens, 512, 512, 256, 2048, 1000
    dt = torch.bfloat16
    big = torch.randn(8192, 8192, device="cuda", dtype=dt)
    ms = median_ms(lambda: big @ big)
    print(f"large 8192^3: {ms*1e3:.1f} us {2*8192**3/ms/1e9:.0f} TF/s")
    shapes = {"qkv": (H, Q + 2 * KV), "o": (Q, H), "gate_up": (H, 2 * F), "down": (F, H), "head": (H, V)}
    total = {}
    for name, (k, n) in shapes.items():
        x = torch.randn(T, k, device="cuda", dtype=dt)
        w = torch.randn(n, k, device="cuda", dtype=dt)
        dy = torch.randn(T, n, device="cuda", dtype=dt)
        wt = w.t().contiguous()
        flops = 2 * T * k * n
        variants = {
            "fwd x@w.T": lambda: torch.nn.functional.linear(x, w),
            "fwd x@wt": lambda: x @ wt,
            "dx dy@w": lambda: dy @ w,
            "dx dy@wt.T": lambda: dy @ wt.t(),
            "dw mm_fp32(dy.T,x)": lambda: mm_fp32(dy.t(), x),
            "dw mm_fp32(x.T,dy).T": lambda: mm_fp32(x.t(), dy).t(),
            "dw bf16 dy.T@x": lambda: dy.t() @ x,
            "dw bf16+cast": lambda: (dy.t() @ x).float(),
        }
        for vname, fn in variants.items():
            t = median_ms(fn) * 1e3
            print(f"{name:8s} T{T} K{k} N{n} {vname:22s} {t:7.1f} us {flops/t/1e6:6.0f} TF/s")
            total.setdefault(vname.split()[0], {})[name] = min(total.get(vname.split()[0], {}).get(name, 1e9), t)
    layers = 8
    for kind, per in total.items():
        s = sum(v * (1 if n == "head" else layers) for n, v in per.items())
        print(f"best {kind}: {s:.0f} us a step")


main()
