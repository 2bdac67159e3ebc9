"""SwiGLU activation on the output of one fused gate/up GEMM: silu(gate) * up.

Purely elementwise and memory bound, so the kernel is about bytes: the forward reads gate_up
once and writes y once; the backward recomputes silu from gate_up instead of saving it, and
writes d(gate_up) directly in the [gate | up] layout, so the fused GEMM's backward consumes it
with no torch.cat. A 2-D grid (row block, column block) avoids per-element division and keeps
each program on contiguous stretches of rows: one row per program on a GPU, many in the
interpreter (see kernels._utils.interpreter_config).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import (as_rows, check_tensors, enter_region, exit_region, interpreter_config, launch, program_rows,
                            tile_rows, work_metadata)
from kernels import work as kernel_work


@triton.jit
def _load_gate_up(GU, stride_gu, F, M, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """This program's tile: (rows, cols, mask, gate, up), gate and up in fp32."""
    rows, row_ok = program_rows(M, ROWS)
    rows = rows.to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)[None, :]
    mask = row_ok & (cols < F)
    gu = GU + rows * stride_gu + cols
    gate = tl.load(gu, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gu + F, mask=mask, other=0.0).to(tl.float32)
    return rows, cols, mask, gate, up


def _fwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.swiglu_fwd(args["M"], args["F"], args["GU"].element_size()))


def _bwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.swiglu_bwd(args["M"], args["F"], args["GU"].element_size()))


@triton.jit(launch_metadata=_fwd_work)
def _swiglu_fwd_kernel(GU, stride_gu, Y, F, M, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    enter_region("body")
    rows, cols, mask, gate, up = _load_gate_up(GU, stride_gu, F, M, ROWS, BLOCK)
    y = gate * tl.sigmoid(gate) * up
    tl.store(Y + rows * F + cols, y.to(Y.dtype.element_ty), mask=mask)
    exit_region("body")


@triton.jit(launch_metadata=_bwd_work)
def _swiglu_bwd_kernel(
    GU, stride_gu, DY, stride_dy, DGU, Y, F, M, STORE_Y: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr
):
    """d(gate_up) from gate_up and dy; with STORE_Y, also the forward's y, recomputed (for a
    caller that did not keep it, see models/v4_ultra.py)."""
    enter_region("body")
    rows, cols, mask, gate, up = _load_gate_up(GU, stride_gu, F, M, ROWS, BLOCK)
    dy = tl.load(DY + rows * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(gate)
    silu = gate * sig
    # d silu(g) / dg = sig * (1 + g * (1 - sig))
    dgate = dy * up * sig * (1.0 + gate * (1.0 - sig))
    dgu = DGU + rows * (2 * F) + cols
    tl.store(dgu, dgate.to(DGU.dtype.element_ty), mask=mask)
    tl.store(dgu + F, (dy * silu).to(DGU.dtype.element_ty), mask=mask)
    if STORE_Y:
        tl.store(Y + rows * F + cols, (silu * up).to(Y.dtype.element_ty), mask=mask)
    exit_region("body")


def _config(rows: int, f: int) -> tuple[int, int, int]:
    """(ROWS, BLOCK, num_warps). GPU: one row per program and up to 2048 elements, 8 bf16
    (16 bytes) per thread per tensor at 8 warps. Interpreter: whole rows, many per program."""
    if interpreter_config():
        block = triton.next_power_of_2(f)
        return tile_rows(rows, block), block, 4
    block = min(triton.next_power_of_2(f), 2048)
    return 1, block, 8 if block >= 2048 else 4


def _unit_col_stride(t2d: Tensor) -> Tensor:
    # The kernels assume unit column stride for vectorized loads; only exotic views pay a copy.
    return t2d if t2d.stride(1) == 1 else t2d.contiguous()


def swiglu_forward(gate_up2d: Tensor) -> Tensor:
    """Launch the forward on a [M, 2F] view; returns y [M, F], contiguous."""
    gu = _unit_col_stride(gate_up2d)
    rows, f = gu.shape[0], gu.shape[1] // 2
    y = torch.empty((rows, f), dtype=gu.dtype, device=gu.device)
    rows_pp, block, warps = _config(rows, f)
    if y.numel():
        launch(_swiglu_fwd_kernel, (triton.cdiv(rows, rows_pp), triton.cdiv(f, block)),
            gu, gu.stride(0), y, f, rows, ROWS=rows_pp, BLOCK=block, num_warps=warps
        )
    return y


def swiglu_backward(
    gate_up2d: Tensor, dy2d: Tensor, recompute_y: bool = False, in_place: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Launch the backward on [M, 2F] and [M, F] views; returns (d gate_up [M, 2F], and with
    ``recompute_y`` the forward's y [M, F], else None), contiguous. With ``in_place``,
    d(gate_up) overwrites gate_up (each program reads its tile before writing it): no new
    [M, 2F] buffer, for a caller that no longer needs gate_up."""
    gu = _unit_col_stride(gate_up2d)
    dy2d = _unit_col_stride(dy2d)
    rows, f = gu.shape[0], gu.shape[1] // 2
    in_place = in_place and gu.is_contiguous()
    dgu = gu if in_place else torch.empty((rows, 2 * f), dtype=gu.dtype, device=gu.device)
    y = torch.empty((rows, f), dtype=gu.dtype, device=gu.device) if recompute_y else None
    rows_pp, block, warps = _config(rows, f)
    if dgu.numel():
        launch(_swiglu_bwd_kernel, (triton.cdiv(rows, rows_pp), triton.cdiv(f, block)),
            gu, gu.stride(0), dy2d, dy2d.stride(0), dgu, y if recompute_y else dgu, f, rows,
            STORE_Y=recompute_y, ROWS=rows_pp, BLOCK=block, num_warps=warps,
        )
    return dgu, y


class _SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate_up: Tensor) -> Tensor:
        check_tensors(gate_up)
        gu = as_rows(gate_up)
        y = swiglu_forward(gu)
        ctx.save_for_backward(gu)
        ctx.shape = gate_up.shape
        return y.view(*gate_up.shape[:-1], y.shape[1])

    @staticmethod
    def backward(ctx, dy: Tensor):
        (gu,) = ctx.saved_tensors
        dgu, _ = swiglu_backward(gu, as_rows(dy))
        return dgu.view(ctx.shape)


def swiglu(gate_up: Tensor) -> Tensor:
    """gate_up [..., 2F] = cat([gate, up], -1) -> silu(gate) * up [..., F], in the input dtype."""
    if gate_up.shape[-1] % 2:
        raise ValueError(f"last dim must be even (gate and up halves), got {gate_up.shape[-1]}")
    return _SwiGLU.apply(gate_up)
