"""SwiGLU activation on the output of one fused gate/up GEMM: silu(gate) * up.

Purely elementwise and memory bound, so the kernel is about bytes: the forward reads gate_up
once and writes y once; the backward recomputes silu from gate_up instead of saving it, and
writes d(gate_up) directly in the [gate | up] layout, so the fused GEMM's backward consumes it
with no torch.cat. A 2-D grid (row, column block) avoids per-element division and keeps each
program on one contiguous stretch of a row.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import as_rows, check_tensors


@triton.jit
def _swiglu_fwd_kernel(GU, stride_gu, Y, F, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < F
    gu_row = GU + row * stride_gu
    gate = tl.load(gu_row + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gu_row + F + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate * tl.sigmoid(gate) * up
    tl.store(Y + row * F + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _swiglu_bwd_kernel(GU, stride_gu, DY, stride_dy, DGU, F, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < F
    gu_row = GU + row * stride_gu
    gate = tl.load(gu_row + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gu_row + F + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(gate)
    silu = gate * sig
    # d silu(g) / dg = sig * (1 + g * (1 - sig))
    dgate = dy * up * sig * (1.0 + gate * (1.0 - sig))
    dgu_row = DGU + row * (2 * F)
    tl.store(dgu_row + cols, dgate.to(DGU.dtype.element_ty), mask=mask)
    tl.store(dgu_row + F + cols, (dy * silu).to(DGU.dtype.element_ty), mask=mask)


def _config(f: int) -> tuple[int, int]:
    # Up to 2048 elements per program: 8 bf16 (16 bytes) per thread per tensor at 8 warps.
    block = min(triton.next_power_of_2(f), 2048)
    return block, 8 if block >= 2048 else 4


def _unit_col_stride(t2d: Tensor) -> Tensor:
    # The kernels assume unit column stride for vectorized loads; only exotic views pay a copy.
    return t2d if t2d.stride(1) == 1 else t2d.contiguous()


class _SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate_up: Tensor) -> Tensor:
        check_tensors(gate_up)
        gu = _unit_col_stride(as_rows(gate_up))
        rows, f = gu.shape[0], gu.shape[1] // 2
        y = torch.empty((rows, f), dtype=gu.dtype, device=gu.device)
        block, warps = _config(f)
        if y.numel():
            _swiglu_fwd_kernel[(rows, triton.cdiv(f, block))](
                gu, gu.stride(0), y, f, BLOCK=block, num_warps=warps
            )
        ctx.save_for_backward(gu)
        ctx.shape = gate_up.shape
        return y.view(*gate_up.shape[:-1], f)

    @staticmethod
    def backward(ctx, dy: Tensor):
        (gu,) = ctx.saved_tensors
        dy2d = _unit_col_stride(as_rows(dy))
        rows, f = gu.shape[0], gu.shape[1] // 2
        dgu = torch.empty((rows, 2 * f), dtype=gu.dtype, device=gu.device)
        block, warps = _config(f)
        if dgu.numel():
            _swiglu_bwd_kernel[(rows, triton.cdiv(f, block))](
                gu, gu.stride(0), dy2d, dy2d.stride(0), dgu, f, BLOCK=block, num_warps=warps
            )
        return dgu.view(ctx.shape)


def swiglu(gate_up: Tensor) -> Tensor:
    """gate_up [..., 2F] = cat([gate, up], -1) -> silu(gate) * up [..., F], in the input dtype."""
    if gate_up.shape[-1] % 2:
        raise ValueError(f"last dim must be even (gate and up halves), got {gate_up.shape[-1]}")
    return _SwiGLU.apply(gate_up)
