"""The numbers behind the v3-flash-attention exercise's notes (GPU only, about 2 minutes):

1. memory and time of one attention layer's forward+backward, eager (scores stored) against our
   Triton flash kernel, at seq 128 .. 4096 (batch 1, 8 heads, 4 kv heads, head dim 64, fp32);
2. the forward block size (BLOCK_M x BLOCK_N) of our kernel swept at seq 1024 and 4096 (bf16):
   time and peak memory;
3. accuracy: bf16 and fp32 outputs against a float64 reference, and the online softmax's
   stability as the scores grow (inputs x 0.1 .. 100) next to a softmax without its running max.

    python3 tests/gpu/flash_attention_lesson.py            (repo root, a CUDA GPU)
Prints a short table per part; copy it into exercises/v3-flash-attention/notes.md.
"""

from __future__ import annotations

import importlib
import math
import sys

import torch

from kernels import flash_attention
from kernels.bench_kernels import fwd_bwd_step, median_ms

fa = importlib.import_module("kernels.flash_attention")
B, H, KVH, D = 1, 8, 4, 64


def eager(q, k, v):
    """What v1 does: the [S, S] scores and probabilities are stored for the backward."""
    k, v = k.repeat_interleave(H // KVH, 1), v.repeat_interleave(H // KVH, 1)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    mask = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v


def inputs(S, dtype, scale=1.0):
    g = torch.Generator(device="cuda").manual_seed(S)
    q = (torch.randn(B, H, S, D, device="cuda", generator=g) * scale).to(dtype).requires_grad_()
    k = (torch.randn(B, KVH, S, D, device="cuda", generator=g) * scale).to(dtype).requires_grad_()
    v = torch.randn(B, KVH, S, D, device="cuda", generator=g).to(dtype).requires_grad_()
    return q, k, v


def measure(fn, q, k, v) -> tuple[float, float]:
    """(ms of forward+backward, MB allocated at the peak above the inputs)."""
    step = fwd_bwd_step(fn, [q, k, v], [q, k, v])
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    return median_ms(step), peak


def part1() -> None:
    print("\n1. one attention layer, fwd+bwd, fp32 (TF32 off): eager vs flash")
    print(f"{'seq':>6} {'eager ms':>9} {'eager MB':>9} {'flash ms':>9} {'flash MB':>9} {'scores MB':>10}")
    for S in (128, 512, 1024, 2048, 4096):
        q, k, v = inputs(S, torch.float32)
        e_ms, e_mb = measure(eager, q, k, v)
        f_ms, f_mb = measure(flash_attention, q, k, v)
        print(f"{S:>6} {e_ms:>9.3f} {e_mb:>9.1f} {f_ms:>9.3f} {f_mb:>9.1f} {B * H * S * S * 4 / 2**20:>10.1f}")


def part2() -> None:
    print("\n2. forward block size of our kernel, bf16, fwd+bwd (backward at its defaults)")
    print(f"{'seq':>6} {'BLOCK_MxN':>10} {'ms':>8} {'MB':>7}")
    default = fa._fwd_config
    try:
        for S in (1024, 4096):
            q, k, v = inputs(S, torch.bfloat16)
            for bm, bn in ((16, 16), (32, 32), (64, 32), (64, 64), (128, 64), (128, 128)):
                fa._fwd_config = lambda D_, S_, exact=False, arch=None, bm=bm, bn=bn: dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=4 if bm < 128 else 8,
                                                                          num_stages=3)
                try:
                    ms, mb = measure(flash_attention, q, k, v)
                    print(f"{S:>6} {f'{bm}x{bn}':>10} {ms:>8.3f} {mb:>7.1f}")
                except Exception as exc:  # a block too large for shared memory
                    print(f"{S:>6} {f'{bm}x{bn}':>10} {'-':>8} {'-':>7}  {type(exc).__name__}")
    finally:
        fa._fwd_config = default


def part3() -> None:
    print("\n3. accuracy against float64, seq 1024 (max |error| of the output)")
    q, k, v = inputs(1024, torch.float32)
    ref = eager(q.double(), k.double(), v.double())
    for dtype in (torch.float32, torch.bfloat16):
        out = flash_attention(q.detach().to(dtype), k.detach().to(dtype), v.detach().to(dtype)).double()
        print(f"   {str(dtype).replace('torch.', ''):<9} {(out - ref).abs().max().item():.2e}")
    print(f"\n{'scale':>6} {'flash fp32 err':>15} {'no running max':>15}")
    for scale in (0.1, 1.0, 10.0, 100.0):
        q, k, v = inputs(1024, torch.float32, scale)
        ref = eager(q.double(), k.double(), v.double())
        out = flash_attention(q.detach(), k.detach(), v.detach()).double()
        kk, vv = k.detach().repeat_interleave(H // KVH, 1), v.detach().repeat_interleave(H // KVH, 1)
        s = (q.detach() @ kk.transpose(-1, -2)) / math.sqrt(D)
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device="cuda").triu(1), float("-inf"))
        naive = (torch.exp(s) / torch.exp(s).sum(-1, keepdim=True)) @ vv  # no max subtracted
        bad = (naive.double() - ref).abs().max().item()
        print(f"{scale:>6} {(out - ref).abs().max().item():>15.2e} {bad:>15.2e}")


def main() -> int:
    if not torch.cuda.is_available():
        print("no GPU visible: this script measures a GPU", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    part1()
    part2()
    part3()
    return 0


if __name__ == "__main__":
    sys.exit(main())
