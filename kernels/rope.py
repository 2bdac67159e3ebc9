"""Rotary position embedding (half-split / rotate_half convention, as HF LLaMA and Liger).

One program handles one (batch, position) pair (many in the interpreter) and a block of heads:
cos/sin for that position are loaded once and reused across the heads, and each of
x1 = x[..., :D/2], x2 = x[..., D/2:] is read once. The backward is the same kernel with sin
negated: a rotation's inverse is its transpose. x is addressed through its four strides, so
the [B, H, S, D] -> [B, S, H, D] transposed view that attention code produces runs without a
copy, and the output keeps x's memory layout when x is dense (so transposing it back is free).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import (check_tensors, enter_region, exit_region, interpreter_config, launch, program_rows, tile_rows,
                            work_metadata)
from kernels import work as kernel_work

# Elements of x1 (half of each head) per program on a GPU, so about 4K of x: enough bytes in
# flight per program while leaving many programs.
MAX_BLOCK_ELEMS = 2048


def _work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.rope(args["n_pos"], args["H"], args["ROTATED"], 2 * args["HALF"],
                                          args["X"].element_size()))


@triton.jit(launch_metadata=_work)
def _rope_kernel(
    X, sxb, sxs, sxh, sxd,
    Y, syb, sys_, syh, syd,
    COS, SIN, stride_cs, stride_cd,
    S, H, HALF, n_pos, ROTATED,
    INVERSE: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """Rotates ROWS (batch, position) pairs by a block of heads; tiles are [ROWS, BLOCK_H, BLOCK_D].
    Heads from ROTATED on are copied unrotated (v beside q and k in a fused projection)."""
    enter_region("body")
    pos, pos_ok = program_rows(n_pos, ROWS, RANK=3)
    b = (pos // S).to(tl.int64)
    s = pos % S  # in range even for out-of-bounds pos, so cos/sin loads need no row mask
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    d = tl.arange(0, BLOCK_D)
    d_mask = d < HALF
    cos = tl.load(COS + s * stride_cs + d * stride_cd, mask=d_mask, other=0.0).to(tl.float32)
    sin = tl.load(SIN + s * stride_cs + d * stride_cd, mask=d_mask, other=0.0).to(tl.float32)
    if INVERSE:
        sin = -sin
    rotate = (heads < ROTATED)[:, None]
    cos = tl.where(rotate, cos, 1.0)
    sin = tl.where(rotate, sin, 0.0)
    mask = pos_ok & (heads < H)[:, None] & d_mask[None, :]
    x_ptrs = X + b * sxb + s * sxs + heads[:, None] * sxh + d[None, :] * sxd
    y_ptrs = Y + b * syb + s * sys_ + heads[:, None] * syh + d[None, :] * syd
    x1 = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptrs + HALF * sxd, mask=mask, other=0.0).to(tl.float32)
    y1 = x1 * cos - x2 * sin
    y2 = x2 * cos + x1 * sin
    tl.store(y_ptrs, y1.to(Y.dtype.element_ty), mask=mask)
    tl.store(y_ptrs + HALF * syd, y2.to(Y.dtype.element_ty), mask=mask)
    exit_region("body")


def _config(n_pos: int, heads: int, half: int) -> tuple[int, int, int]:
    """(ROWS, BLOCK_H, BLOCK_D): one position per program on a GPU; every head and many
    positions per program in the interpreter."""
    block_d = triton.next_power_of_2(half)
    if interpreter_config():
        block_h = triton.next_power_of_2(heads)
        return tile_rows(n_pos, block_h * block_d), block_h, block_d
    return 1, min(triton.next_power_of_2(heads), max(1, MAX_BLOCK_ELEMS // block_d)), block_d


def apply_rope(
    x: Tensor, cos: Tensor, sin: Tensor, inverse: bool = False, out: Tensor | None = None, rotate_heads: int | None = None
) -> Tensor:
    """Launch on x [B, S, H, D] (any strides) into ``out`` (default: new, x's layout when x is
    dense; ``out`` may be x itself: each program reads a pair of elements before writing it).
    Only the first ``rotate_heads`` heads are rotated (default all); the rest are copied."""
    B, S, H, D = x.shape
    y = torch.empty_like(x) if out is None else out
    if x.numel() == 0:
        return y
    half = D // 2
    rows, block_h, block_d = _config(B * S, H, half)
    grid = (triton.cdiv(B * S, rows), triton.cdiv(H, block_h))
    launch(_rope_kernel, grid,
        x, *x.stride(),
        y, *y.stride(),
        cos, sin, cos.stride(0), cos.stride(1),
        S, H, half, B * S, H if rotate_heads is None else rotate_heads,
        INVERSE=inverse,
        ROWS=rows,
        BLOCK_H=block_h,
        BLOCK_D=block_d,
        num_warps=4,
    )
    return y


class _RoPE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        ctx.save_for_backward(cos, sin)
        return apply_rope(x, cos, sin)

    @staticmethod
    def backward(ctx, dy: Tensor):
        cos, sin = ctx.saved_tensors
        return apply_rope(dy, cos, sin, inverse=True), None, None


def rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate x [B, S, H, D] by cos/sin [S', D/2] (S' >= S, rows 0..S-1 are used); no grad to cos/sin."""
    if x.dim() != 4 or x.shape[-1] % 2:
        raise ValueError(f"x must be [B, S, H, D] with an even D, got {tuple(x.shape)}")
    seq, half = x.shape[1], x.shape[-1] // 2
    if cos.shape != sin.shape or cos.dim() != 2 or cos.shape[0] < seq or cos.shape[1] != half:
        raise ValueError(
            f"cos/sin must be [>= {seq}, {half}], got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    check_tensors(x, cos, sin)
    return _RoPE.apply(x, cos, sin)


def rope_cos_sin(
    seq_len: int, head_dim: int, theta: float = 10000.0, device=None
) -> tuple[Tensor, Tensor]:
    """cos/sin tables [seq_len, head_dim/2] in fp32 for inv_freq = theta ** (-2i / head_dim)."""
    inv_freq = theta ** (
        -torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim
    )
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=device), inv_freq)
    return angles.cos(), angles.sin()
