"""RoPE and GQA head expansion of a fused QKV projection, for torch's SDPA (v4 in strict fp32).

SDPA's memory-efficient kernel takes as many k/v heads as query heads (with enable_gqa it falls
back to the math backend in fp32), so feeding it from a fused [q | k | v] projection takes a
RoPE launch, two repeat_interleave copies and, in the backward, two group sums, RoPE's inverse
and a concatenation: 8 launches a layer, 35 us of a layer's 61 us of attention at seq 128
(H200, fp32, measured). Here the forward is one launch writing rotated q, rotated and repeated
k, and repeated v; the backward is one launch that sums each group's dk/dv, undoes RoPE on dq
and dk and writes d(qkv) in the projection's layout.

One program handles one (batch, position) (many in the interpreter) and every head; cos/sin
are loaded once per position. RoPE is the half-split convention of kernels.rope.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import (check_tensors, enter_region, exit_region, interpreter_config, launch, program_rows, tile_rows,
                            work_metadata)
from kernels import work as kernel_work


@triton.jit
def _position(n_pos, S, ROWS: tl.constexpr):
    """(batch, position, in_bounds) of this program's rows, shaped [ROWS, 1, 1]."""
    pos, pos_ok = program_rows(n_pos, ROWS, RANK=3)
    return (pos // S).to(tl.int64), pos % S, pos_ok


@triton.jit
def _cos_sin(COS, SIN, s, d, HALF):
    ok = d < HALF
    return tl.load(COS + s * HALF + d, mask=ok, other=0.0), tl.load(SIN + s * HALF + d, mask=ok, other=0.0)


def _fwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.rope_gqa(args["n_pos"], args["H"], args["KVH"], 2 * args["HALF"],
                                              args["QKV"].element_size()))


def _bwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.rope_gqa(args["n_pos"], args["H"], args["KVH"], 2 * args["HALF"],
                                              args["DQ"].element_size()))


@triton.jit(launch_metadata=_fwd_work)
def _rope_gqa_fwd_kernel(
    QKV, sqb, sqs, Q, K, V, COS, SIN,
    S, H, KVH, HALF, n_pos,
    GROUP: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """q, k, v: [B, S, H, D] contiguous; query head h reads kv head h // GROUP."""
    enter_region("body")
    b, s, pos_ok = _position(n_pos, S, ROWS)
    h = tl.arange(0, BLOCK_H)[None, :, None]
    d = tl.arange(0, BLOCK_D)[None, None, :]
    cos, sin = _cos_sin(COS, SIN, s, d, HALF)
    mask = pos_ok & (h < H) & (d < HALF)
    D = 2 * HALF
    row = QKV + b * sqb + s * sqs
    out = ((b * S + s) * H + h) * D + d
    for part in tl.static_range(3):
        if part == 0:
            src, dst = row + h * D + d, Q + out
        elif part == 1:
            src, dst = row + (H + h // GROUP) * D + d, K + out
        else:
            src, dst = row + (H + KVH + h // GROUP) * D + d, V + out
        x1 = tl.load(src, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)
        if part < 2:
            x1, x2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        tl.store(dst, x1.to(dst.dtype.element_ty), mask=mask)
        tl.store(dst + HALF, x2.to(dst.dtype.element_ty), mask=mask)
    exit_region("body")


@triton.jit(launch_metadata=_bwd_work)
def _rope_gqa_bwd_kernel(
    DQ, sqb, sqh, sqs, sqd,
    DK, skb, skh, sks, skd,
    DV, svb, svh, svs, svd,
    DQKV, COS, SIN,
    S, H, KVH, HALF, n_pos,
    GROUP: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """dq, dk, dv: [B, H, S, D] views (any strides) -> d(qkv) [B, S, (H + 2 * KVH) * D]
    contiguous: dk and dv summed over each kv head's GROUP query heads, RoPE undone on q and k."""
    enter_region("body")
    b, s, pos_ok = _position(n_pos, S, ROWS)
    h = tl.arange(0, BLOCK_H)[None, :, None]
    d = tl.arange(0, BLOCK_D)[None, None, :]
    cos, sin = _cos_sin(COS, SIN, s, d, HALF)
    D = 2 * HALF
    row = DQKV + (b * S + s) * (H + 2 * KVH) * D
    for part in tl.static_range(3):
        if part == 0:
            n_heads = H
            first = 0
        else:
            n_heads = KVH
            first = H + (part - 1) * KVH
        mask = pos_ok & (h < n_heads) & (d < HALF)
        g1 = tl.zeros([ROWS, BLOCK_H, BLOCK_D], dtype=tl.float32)
        g2 = tl.zeros([ROWS, BLOCK_H, BLOCK_D], dtype=tl.float32)
        for g in tl.static_range(GROUP if part > 0 else 1):
            if part == 0:
                src = DQ + b * sqb + h * sqh + s * sqs + d * sqd
                half = HALF * sqd
            elif part == 1:
                src = DK + b * skb + (h * GROUP + g) * skh + s * sks + d * skd
                half = HALF * skd
            else:
                src = DV + b * svb + (h * GROUP + g) * svh + s * svs + d * svd
                half = HALF * svd
            g1 += tl.load(src, mask=mask, other=0.0).to(tl.float32)
            g2 += tl.load(src + half, mask=mask, other=0.0).to(tl.float32)
        if part < 2:
            g1, g2 = g1 * cos + g2 * sin, g2 * cos - g1 * sin
        dst = row + (first + h) * D + d
        tl.store(dst, g1.to(DQKV.dtype.element_ty), mask=mask)
        tl.store(dst + HALF, g2.to(DQKV.dtype.element_ty), mask=mask)
    exit_region("body")


def _launch(n_pos: int, heads: int, half: int) -> tuple[tuple[int], int, int, int]:
    """(grid, ROWS, BLOCK_H, BLOCK_D): one position per program on a GPU, many in the interpreter."""
    block_h, block_d = triton.next_power_of_2(heads), triton.next_power_of_2(half)
    rows = tile_rows(n_pos, block_h * block_d) if interpreter_config() else 1
    return (triton.cdiv(n_pos, rows),), rows, block_h, block_d


class _RopeGQA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, qkv: Tensor, cos: Tensor, sin: Tensor, num_heads: int, num_kv_heads: int):
        B, S, _ = qkv.shape
        D = qkv.shape[-1] // (num_heads + 2 * num_kv_heads)
        q, k, v = (torch.empty((B, S, num_heads, D), dtype=qkv.dtype, device=qkv.device) for _ in range(3))
        grid, rows, block_h, block_d = _launch(B * S, num_heads, D // 2)
        if q.numel():
            launch(_rope_gqa_fwd_kernel, grid,
                qkv, qkv.stride(0), qkv.stride(1), q, k, v, cos, sin,
                S, num_heads, num_kv_heads, D // 2, B * S,
                GROUP=num_heads // num_kv_heads, ROWS=rows, BLOCK_H=block_h, BLOCK_D=block_d, num_warps=4,
            )
        ctx.save_for_backward(cos, sin)
        ctx.heads = (num_heads, num_kv_heads)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    @staticmethod
    def backward(ctx, dq: Tensor, dk: Tensor, dv: Tensor):
        cos, sin = ctx.saved_tensors
        num_heads, num_kv_heads = ctx.heads
        B, H, S, D = dq.shape
        dqkv = torch.empty((B, S, (num_heads + 2 * num_kv_heads) * D), dtype=dq.dtype, device=dq.device)
        grid, rows, block_h, block_d = _launch(B * S, num_heads, D // 2)
        if dqkv.numel():
            launch(_rope_gqa_bwd_kernel, grid,
                dq, *dq.stride(), dk, *dk.stride(), dv, *dv.stride(), dqkv, cos, sin,
                S, num_heads, num_kv_heads, D // 2, B * S,
                GROUP=num_heads // num_kv_heads, ROWS=rows, BLOCK_H=block_h, BLOCK_D=block_d, num_warps=4,
            )
        return dqkv, None, None, None, None


def rope_gqa_qkv(qkv: Tensor, cos: Tensor, sin: Tensor, num_heads: int, num_kv_heads: int) -> tuple[Tensor, Tensor, Tensor]:
    """(q, k, v), each [B, H, S, D], from a fused projection qkv [B, S, (H + 2*KVH) * D] (q
    heads, then k, then v): q and k rotated by RoPE (cos/sin [>= S, D/2]), k and v heads
    repeated to the H query heads (query head h uses kv head h // (H / KVH)), ready for
    torch's SDPA. Equals rope on q and k, then repeat_interleave of k and v along heads."""
    if qkv.dim() != 3 or num_heads % num_kv_heads or qkv.shape[-1] % (num_heads + 2 * num_kv_heads):
        raise ValueError(
            f"qkv {tuple(qkv.shape)} is not [B, S, (H + 2*KVH) * D] for H={num_heads}, KVH={num_kv_heads}"
        )
    S, D = qkv.shape[1], qkv.shape[-1] // (num_heads + 2 * num_kv_heads)
    if D % 2:
        raise ValueError(f"head dim {D} must be even for RoPE")
    if cos.shape != sin.shape or cos.dim() != 2 or cos.shape[0] < S or cos.shape[1] != D // 2:
        raise ValueError(f"cos/sin {tuple(cos.shape)} must be [>= {S}, {D // 2}]")
    if qkv.stride(-1) != 1:
        qkv = qkv.contiguous()  # heads are addressed as unit-stride columns
    check_tensors(qkv, cos, sin)
    cos, sin = cos.float().contiguous(), sin.float().contiguous()
    return _RopeGQA.apply(qkv, cos, sin, num_heads, num_kv_heads)
