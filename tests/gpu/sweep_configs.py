"""Sweep launch configurations of the kernels at the model's own shapes (GPU only).

Prints, per shape, the median GPU time of forward+backward (CUDA-graph replays) for each
candidate config, fastest first, so the defaults in kernels/ can be checked on a new card:
    python3 tests/gpu/sweep_configs.py [--seq-lens 128,1024] [--what norm,attention] [--dtype fp32]
"""

import argparse
import importlib
import itertools
import sys

import torch
import triton

from kernels import (
    add_rmsnorm,
    flash_attention,
    flash_attention_qkv,
    rope,
    rope_cos_sin,
    rope_gqa_qkv,
)
from kernels.bench_kernels import fwd_bwd_step, median_ms

fa = importlib.import_module("kernels.flash_attention")
rms = importlib.import_module("kernels.rmsnorm")


def _fwd_bwd(fn, inputs):
    return fwd_bwd_step(fn, inputs, inputs)


def _us(step) -> float:
    return 1e3 * median_ms(step)


def sweep_attention(seq: int, dtype: torch.dtype, batch=8, heads=8, kv_heads=4, d=64):
    qkv = torch.randn(batch, seq, (heads + 2 * kv_heads) * d, device="cuda", dtype=dtype, requires_grad=True)
    cos, sin = rope_cos_sin(seq, d, device="cuda")
    step = _fwd_bwd(lambda t: flash_attention_qkv(t, cos, sin, heads, kv_heads), [qkv])
    default_bwd, default_fwd = fa._bwd_config, fa._fwd_config
    rows = []
    best = {}

    def timed(kind: str, cfg: dict):
        """Time the step with one kernel's config replaced; keep the fastest per kernel."""
        fa._fwd_config = (lambda D, S, exact_fp32, arch: cfg) if kind == "fwd" else default_fwd
        fa._bwd_config = default_bwd if kind == "fwd" else (
            lambda D, S, exact_fp32, arch: (cfg, default_bwd(D, S, exact_fp32, arch)[1]) if kind == "dkdv"
            else (default_bwd(D, S, exact_fp32, arch)[0], cfg))
        try:
            t = _us(step)
        except Exception as e:  # out of shared memory etc.
            t, cfg = float("inf"), f"{cfg}: {type(e).__name__}"
        rows.append((t, f"{kind} {cfg}"))
        if t < best.get(kind, (float("inf"),))[0]:
            best[kind] = (t, cfg)
        fa._fwd_config, fa._bwd_config = default_fwd, default_bwd

    # Exact-fp32 dots compile slowly and want small tiles: a short list (the full one ran past
    # 280 s at S=128 on an H200).
    exact = dtype == torch.float32
    blocks, bwd_blocks, warp_counts, stage_counts = (
        ([16, 32], [16, 32], [4], [2]) if exact else ([16, 32, 64], [16, 32, 64, 128], [4, 8], [2, 3, 4]))
    wide = [] if exact else [128]
    for bm, bn, warps, stages in itertools.product(blocks + wide, blocks, warp_counts, stage_counts):
        if bm % bn == 0 and bm <= seq:
            timed("fwd", dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages))
    for bm, bn, warps, stages in itertools.product(blocks, bwd_blocks, warp_counts, stage_counts):
        if bn % bm == 0 and bn <= seq:
            timed("dkdv", dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages))
    for bm, bn, warps, stages in itertools.product(blocks + wide, blocks, warp_counts, stage_counts[-1:]):
        if bm % bn == 0 and bm <= seq:
            timed("dq", dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages))
    rows.append((_us(step), "default"))
    if len(best) == 3:
        fwd, dkdv, dq = (best[kind][1] for kind in ("fwd", "dkdv", "dq"))
        fa._fwd_config, fa._bwd_config = (lambda D, S, exact_fp32, arch: fwd), (lambda D, S, exact_fp32, arch: (dkdv, dq))
        rows.append((_us(step), f"best of each combined: fwd {fwd}, dkdv {dkdv}, dq {dq}"))
        fa._fwd_config, fa._bwd_config = default_fwd, default_bwd

    def separate_rope(attend):
        """v3's path (RoPE kernel on a copy of q and k, then ``attend`` on [B, H, S, D] views)."""
        def run(t):
            qk, v = t.split([(heads + kv_heads) * d, kv_heads * d], dim=-1)
            q, k = rope(qk.view(batch, seq, heads + kv_heads, d), cos, sin).split([heads, kv_heads], dim=2)
            out = attend(q.transpose(1, 2), k.transpose(1, 2), v.view(batch, seq, kv_heads, d).transpose(1, 2))
            return out.transpose(1, 2).reshape(batch, seq, heads * d)
        return run

    def sdpa(t):  # v4's strict-fp32 attention: RoPE + GQA expansion kernel, then torch's SDPA
        q, k, v = rope_gqa_qkv(t, cos, sin, heads, kv_heads)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(batch, seq, heads * d)

    rows.append((_us(_fwd_bwd(separate_rope(flash_attention), [qkv])), "separate rope kernel + flash_attention"))
    rows.append((_us(_fwd_bwd(sdpa, [qkv])), "rope_gqa_qkv + torch SDPA (v4's strict-fp32 path)"))
    name = str(dtype).replace("torch.", "")
    print(f"\n== flash_attention_qkv fwd+bwd, B{batch} S{seq} H{heads}/{kv_heads} D{d} {name} (us)")
    for t, what in sorted(rows)[:8] + [r for r in rows if r[1] == "default" or "separate" in r[1] or "SDPA" in r[1] or "combined" in r[1]]:
        print(f"   {t:9.1f}  {what}")


def sweep_norm(tokens: int, n=512):
    x = torch.randn(tokens, n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    r = torch.randn(tokens, n, device="cuda", requires_grad=True)
    w = torch.randn(n, device="cuda", requires_grad=True)
    step = _fwd_bwd(lambda a, b, c: add_rmsnorm(a, b, c, out_dtype=torch.bfloat16), [x, r, w])
    default_launch, default_atomic = rms._bwd_launch, rms.ATOMIC_DW
    print(f"\n== add_rmsnorm fwd+bwd (bf16 branch, fp32 residual), {tokens} x {n} (us)")
    rows = []
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for tile, per_sm, atomic in itertools.product([512, 1024, 2048, 4096], [1, 2, 4], [True, False]):
        def launch(M, block_n, device, tile=tile, per_sm=per_sm):
            r = max(1, tile // block_n)
            return r, max(1, min(triton.cdiv(M, 2 * r), sms * per_sm))

        rms._bwd_launch, rms.ATOMIC_DW = launch, atomic
        dw = "atomic dweight" if atomic else "column-sum dweight"
        rows.append((_us(step), f"tiles of {tile // n} rows, {per_sm} programs/SM, {dw}"))
    rms._bwd_launch, rms.ATOMIC_DW = default_launch, default_atomic
    rows.append((_us(step), "default"))
    for t, what in sorted(rows)[:8] + [r for r in rows if r[1] == "default"]:
        print(f"   {t:9.1f}  {what}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq-lens", default="128,1024", help="comma-separated positive integers")
    ap.add_argument("--what", default="norm,attention", help="comma-separated: norm, attention")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"],
                    help="attention inputs (fp32: exact IEEE dots, TF32 off)")
    args = ap.parse_args()
    try:
        seq_lens = [int(s) for s in args.seq_lens.split(",")]
    except ValueError:
        seq_lens = []
    if not seq_lens or min(seq_lens) < 1:
        ap.error(f"--seq-lens {args.seq_lens!r}: comma-separated positive integers, e.g. 128,1024")
    what = set(args.what.split(","))
    if not what or what - {"norm", "attention"}:
        ap.error(f"--what {args.what!r}: choose from norm, attention (comma-separated)")
    if not torch.cuda.is_available():
        ap.error("no GPU visible: the sweep times kernels on a GPU")
    print(torch.cuda.get_device_name())
    for seq in seq_lens:
        if "norm" in what:
            sweep_norm(8 * seq)
        if "attention" in what:
            sweep_attention(seq, {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype])
    return 0


if __name__ == "__main__":
    sys.exit(main())
