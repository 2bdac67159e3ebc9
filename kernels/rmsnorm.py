"""RMSNorm with a Triton forward and backward (and the shared kernels of add_rmsnorm).

RMSNorm is memory bound: the fast version reads x once and writes y once. One program owns a
row (a tile of many rows in the interpreter, see kernels._utils.interpreter_config) and keeps
it in registers while N <= MAX_FUSED_N, so the sum of squares and the scaling need no second
read; rstd (fp32, one per row) is saved so the backward need not recompute it.
The weight gradient is a reduction over rows: as in the Triton layer-norm tutorial, a grid of
about k * #SMs programs each walks a contiguous chunk of rows, keeps its partial dweight in
registers, then adds it into the fp32 dweight with atomics (ATOMIC_DW) or, when deterministic
algorithms are on, writes one row of a small [programs, N] buffer that a column-sum kernel
adds up in a fixed order. On an H200 at a training step's 1,024 x 512, torch's sum over dim 0
took about 7 us a norm, the column-sum kernel about 2; letting the last program to finish do
the sum inside the backward kernel (an atomic counter) measured slower still.

Under autocast the output y can be asked for in the compute dtype (`out_dtype`): it feeds a
bf16 GEMM, so writing it in bf16 here saves a cast kernel in the forward and another on its
gradient in the backward.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import (
    as_rows,
    check_tensors,
    enter_region,
    exit_region,
    interpreter_config,
    launch,
    program_rows,
    row_num_warps,
    row_sum,
    sm_count,
    tile_rows,
    work_metadata,
)
from kernels import work as kernel_work

# Widest row kept whole in registers; wider rows loop over column blocks (two reads of x).
MAX_FUSED_N = 8192
# Backward launch for wide rows (> NARROW_N). Programs per SM, measured on an H200 at
# 16384 x 4096 bf16 (8 warps, with the prefetch in the kernel): 2 per SM ran the backward at
# 83% of copy bandwidth (97% at 65536 rows), against 68-80% for 1, 4 or 8.
BWD_PROGRAMS_PER_SM = 2
# Elements of one backward tile of wide rows (one row of 2048 or more).
BWD_TILE = 2048
# Tiles each wide-row backward program walks at least: short inputs get fewer programs, so
# fewer partial rows for the dweight sum.
MIN_BWD_TILES = 2
# Narrow rows (the model's 512): one program per SM, each walking about NARROW_TILES_PER_PROGRAM
# tiles of up to NARROW_TILE elements (several rows), so loads of the next tile stay in flight.
# Swept on an H200 (tests/gpu/sweep_configs.py, add_rmsnorm forward+backward, bf16 branch and
# fp32 residual): 1024 x 512 took 8.2 us with 2-row tiles at 1 program per SM against 9.7 with
# 4-row tiles at 2 per SM; 8192 x 512 took 35.7 us with 8-row tiles at 1 per SM against 37.5.
NARROW_N = 1024
NARROW_TILE = 4096
NARROW_TILES_PER_PROGRAM = 4
# Rows that fit one block (SINGLE_BLOCK) add their partial dweight straight into a zeroed
# output with fp32 atomics, removing the column-sum launch, unless deterministic algorithms
# are on (atomics add in a run-dependent order).
ATOMIC_DW = True


@triton.jit
def _load_input(x_rows, stride_xn, r_rows, stride_rn, H, out_off, cols, mask, HAS_RESIDUAL: tl.constexpr):
    """The norm's input for these columns in fp32. With a residual: x + r, stored to H in H's
    dtype, and returned as stored (rounded), so the norm sees exactly the residual stream."""
    x = tl.load(x_rows + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(r_rows + cols * stride_rn, mask=mask, other=0.0).to(tl.float32)
        h = x.to(H.dtype.element_ty)
        tl.store(H + out_off + cols, h, mask=mask)
        x = h.to(tl.float32)
    return x


def _fwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.rmsnorm_fwd(args["M"], args["N"], args["X"].element_size(), args["HAS_RESIDUAL"]))


@triton.jit(launch_metadata=_fwd_work)
def _rmsnorm_fwd_kernel(
    X, stride_xm, stride_xn,
    R, stride_rm, stride_rn,
    Y, H, W, RSTD,
    N, eps, M,
    HAS_RESIDUAL: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_BLOCK: tl.constexpr,
):
    """Y = norm(X [+ R]) * W for ROWS rows; with a residual, also writes H = X + R (input dtype).

    H is rounded to the input dtype before the norm, exactly like the unfused eager code
    ``h = x + r; y = norm(h)``, so the backward (which reads the stored H) sees the same input.
    """
    enter_region("body")
    rows, row_ok = program_rows(M, ROWS)
    rows = rows.to(tl.int64)
    x_rows = X + rows * stride_xm
    r_rows = R + rows * stride_rm
    out_off = rows * N
    if SINGLE_BLOCK:
        cols = tl.arange(0, BLOCK_N)[None, :]
        mask = row_ok & (cols < N)
        x = _load_input(x_rows, stride_xn, r_rows, stride_rn, H, out_off, cols, mask, HAS_RESIDUAL)
        rstd = 1.0 / tl.sqrt(row_sum(x * x, ROWS) / N + eps)
        w = tl.load(W + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(Y + out_off + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)
    else:
        sum_sq = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        for start in range(0, N, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)[None, :]
            mask = row_ok & (cols < N)
            x = _load_input(x_rows, stride_xn, r_rows, stride_rn, H, out_off, cols, mask, HAS_RESIDUAL)
            sum_sq += x * x
        rstd = 1.0 / tl.sqrt(row_sum(sum_sq, ROWS) / N + eps)
        for start in range(0, N, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)[None, :]
            mask = row_ok & (cols < N)
            # Reading back H is safe without a barrier: the same thread stored these elements
            # (same shape, same layout) in the first loop.
            if HAS_RESIDUAL:
                x = tl.load(H + out_off + cols, mask=mask, other=0.0).to(tl.float32)
            else:
                x = tl.load(x_rows + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(W + cols, mask=cols < N, other=0.0).to(tl.float32)
            tl.store(Y + out_off + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)
    tl.store(RSTD + rows, rstd, mask=row_ok)
    exit_region("body")


@triton.jit
def _load_bwd_tile(x_ptrs, dy_ptrs, rstd_ptrs, dh_ptrs, row_ok, col_ok, HAS_DRESIDUAL: tl.constexpr):
    """One tile's (x, dy, rstd, dh) as stored; dh is dy again (unused) without a residual."""
    mask = row_ok & col_ok
    x = tl.load(x_ptrs, mask=mask, other=0.0)
    dy = tl.load(dy_ptrs, mask=mask, other=0.0)
    rstd = tl.load(rstd_ptrs, mask=row_ok, other=0.0)
    if HAS_DRESIDUAL:
        dh = tl.load(dh_ptrs, mask=mask, other=0.0)
    else:
        dh = dy
    return x, dy, rstd, dh


@triton.jit
def _load_columns(col_start, x_rows, stride_xn, dy_rows, stride_dyn, W, row_ok, N, BLOCK_N: tl.constexpr):
    """Wide rows, one column block: (cols, mask, x, dy, w), values in fp32."""
    cols = col_start + tl.arange(0, BLOCK_N)[None, :]
    mask = row_ok & (cols < N)
    x = tl.load(x_rows + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_rows + cols * stride_dyn, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=cols < N, other=0.0).to(tl.float32)
    return cols, mask, x, dy, w


@triton.jit
def _advance_rows(n, DY, stride_dym, X, stride_xm, DH, stride_dhm, DX, DX2, RSTD, N):
    """The backward's row pointers moved n rows on (dx, dx2 and rstd are contiguous)."""
    return DY + n * stride_dym, X + n * stride_xm, DH + n * stride_dhm, DX + n * N, DX2 + n * N, RSTD + n


def _bwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.rmsnorm_bwd(args["M"], args["N"], args["X"].element_size(),
                                                 args["HAS_DRESIDUAL"]))


@triton.jit(launch_metadata=_bwd_work)
def _rmsnorm_bwd_kernel(
    DY, stride_dym, stride_dyn,
    X, stride_xm, stride_xn,
    DH, stride_dhm, stride_dhn,
    W, RSTD, DX, DX2, DW_PARTIAL,
    M, N, rows_per_program,
    HAS_DRESIDUAL: tl.constexpr,
    HAS_DX2: tl.constexpr,
    ATOMIC_DW: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_BLOCK: tl.constexpr,
):
    """dx = rstd * (w*dy - xhat * mean(w*dy*xhat)) [+ dh]; partial dw = sum_rows dy*xhat.

    Each program walks its chunk of rows ROWS at a time. With DH (add_rmsnorm), the gradient
    reaching h directly is added to dx, since h feeds both the norm and the residual stream.
    With DX2, dx is stored a second time in DX2's dtype (add_rmsnorm's bf16 branch input beside
    its fp32 residual).
    """
    enter_region("body")
    pid = tl.program_id(0)
    row_start = pid * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    # Walk the rows by advancing 64-bit pointers: row * stride can overflow int32.
    DY, X, DH, DX, DX2, RSTD = _advance_rows(
        row_start.to(tl.int64), DY, stride_dym, X, stride_xm, DH, stride_dhm, DX, DX2, RSTD, N)
    dw_row = DW_PARTIAL + pid.to(tl.int64) * N
    # Offsets of a tile's rows from the pointers above.
    tile = tl.arange(0, ROWS)[:, None]
    x_tile = tile * stride_xm
    dy_tile = tile * stride_dym
    dh_tile = tile * stride_dhm
    dx_tile = tile * N
    if SINGLE_BLOCK:
        # Software pipelining by hand: the next tile's loads (x, dy, rstd and dh) are issued
        # before this tile's reduction and stores, so every program keeps two tiles of loads in
        # flight and no load waits on the arithmetic before it.
        cols = tl.arange(0, BLOCK_N)[None, :]
        col_ok = cols < N
        w = tl.load(W + cols, mask=col_ok, other=0.0).to(tl.float32)
        dw = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        x, dy, rstd, dh = _load_bwd_tile(
            X + x_tile + cols * stride_xn, DY + dy_tile + cols * stride_dyn, RSTD + tile,
            DH + dh_tile + cols * stride_dhn, row_start + tile < row_end, col_ok, HAS_DRESIDUAL)
        for start in range(row_start, row_end, ROWS):
            X += ROWS * stride_xm
            DY += ROWS * stride_dym
            DH += ROWS * stride_dhm
            RSTD += ROWS
            x_next, dy_next, rstd_next, dh_next = _load_bwd_tile(
                X + x_tile + cols * stride_xn, DY + dy_tile + cols * stride_dyn, RSTD + tile,
                DH + dh_tile + cols * stride_dhn, start + ROWS + tile < row_end, col_ok, HAS_DRESIDUAL)
            mask = (start + tile < row_end) & col_ok
            xhat = x.to(tl.float32) * rstd
            wdy = w * dy.to(tl.float32)
            c = row_sum(xhat * wdy, ROWS) / N
            dx = (wdy - xhat * c) * rstd
            if HAS_DRESIDUAL:
                dx += dh.to(tl.float32)
            tl.store(DX + dx_tile + cols, dx.to(DX.dtype.element_ty), mask=mask)
            if HAS_DX2:
                tl.store(DX2 + dx_tile + cols, dx.to(DX2.dtype.element_ty), mask=mask)
                DX2 += ROWS * N
            dw += dy.to(tl.float32) * xhat
            DX += ROWS * N
            x, dy, rstd, dh = x_next, dy_next, rstd_next, dh_next
        if ATOMIC_DW:  # DW_PARTIAL is the zeroed [N] dweight itself
            tl.atomic_add(DW_PARTIAL + cols, tl.sum(dw, axis=0)[None, :], mask=col_ok, sem="relaxed")
        else:
            tl.store(dw_row + cols, tl.sum(dw, axis=0)[None, :], mask=col_ok)
    else:
        # DW_PARTIAL starts zeroed; each element is read and written only by the thread that
        # owns it (same shape, same layout as every other access), so it needs no barrier.
        for start in range(row_start, row_end, ROWS):
            row_ok = start + tile < row_end
            rstd = tl.load(RSTD + tile, mask=row_ok, other=0.0)
            dot = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
            for col_start in range(0, N, BLOCK_N):
                cols, mask, x, dy, w = _load_columns(
                    col_start, X + x_tile, stride_xn, DY + dy_tile, stride_dyn, W, row_ok, N, BLOCK_N)
                dot += x * w * dy
            c = row_sum(dot, ROWS) * rstd / N
            for col_start in range(0, N, BLOCK_N):
                cols, mask, x, dy, w = _load_columns(
                    col_start, X + x_tile, stride_xn, DY + dy_tile, stride_dyn, W, row_ok, N, BLOCK_N)
                xhat = x * rstd
                dx = (w * dy - xhat * c) * rstd
                if HAS_DRESIDUAL:
                    dx += tl.load(DH + dh_tile + cols * stride_dhn, mask=mask, other=0.0).to(tl.float32)
                tl.store(DX + dx_tile + cols, dx.to(DX.dtype.element_ty), mask=mask)
                if HAS_DX2:
                    tl.store(DX2 + dx_tile + cols, dx.to(DX2.dtype.element_ty), mask=mask)
                dw = tl.load(dw_row + cols, mask=cols < N, other=0.0)
                tl.store(dw_row + cols, dw + tl.sum(dy * xhat, axis=0)[None, :], mask=cols < N)
            DY, X, DH, DX, DX2, RSTD = _advance_rows(
                ROWS, DY, stride_dym, X, stride_xm, DH, stride_dhm, DX, DX2, RSTD, N)
    exit_region("body")


def _column_sum_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.column_sum(args["R"], args["N"]))


@triton.jit(launch_metadata=_column_sum_work)
def _column_sum_kernel(P, OUT, R, N, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """OUT[c] = sum_r P[r, c] for a block of columns; rows in fixed order (deterministic).

    Each program owns BLOCK_C columns and reads BLOCK_R rows per step."""
    enter_region("body")
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]
    rows = tl.arange(0, BLOCK_R)[:, None]
    total = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    for start in range(0, R, BLOCK_R):
        ok = (start + rows < R) & (cols < N)
        total += tl.load(P + (start + rows).to(tl.int64) * N + cols, mask=ok, other=0.0)
    tl.store(OUT + cols, tl.sum(total, axis=0)[None, :], mask=cols < N)
    exit_region("body")


def column_sum(partial: Tensor) -> Tensor:
    """Sum a contiguous fp32 [R, N] buffer over its rows. On a GPU, programs of 64 columns; in
    the interpreter one program over every column (see _utils.interpreter_config)."""
    R, N = partial.shape
    out = torch.empty(N, dtype=torch.float32, device=partial.device)
    block_c = triton.next_power_of_2(N) if interpreter_config() else min(triton.next_power_of_2(N), 64)
    block_r = tile_rows(R, block_c) if interpreter_config() else max(1, min(triton.next_power_of_2(R), 4096 // block_c))
    launch(_column_sum_kernel, (triton.cdiv(N, block_c),), partial, out, R, N, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4)
    return out


def _block_n(n: int) -> tuple[int, bool]:
    if n <= MAX_FUSED_N:
        return triton.next_power_of_2(n), True
    return triton.next_power_of_2(MAX_FUSED_N), False


def rmsnorm_forward(
    x2d: Tensor, weight: Tensor, eps: float, residual2d: Tensor | None = None, out_dtype=None, h_dtype=None
) -> tuple[Tensor, Tensor | None, Tensor]:
    """Launch the forward on [M, N] views; returns (y, h or None, rstd). Used by add_rmsnorm too.

    y (in ``out_dtype``) and h (in ``h_dtype``) are contiguous; both default to x's dtype.
    """
    M, N = x2d.shape
    block_n, single = _block_n(N)
    rows = tile_rows(M, block_n)
    y = torch.empty((M, N), dtype=out_dtype or x2d.dtype, device=x2d.device)
    rstd = torch.empty(M, dtype=torch.float32, device=x2d.device)
    h = torch.empty((M, N), dtype=h_dtype or x2d.dtype, device=x2d.device) if residual2d is not None else None
    r = residual2d if residual2d is not None else x2d
    if M > 0:
        launch(_rmsnorm_fwd_kernel, (triton.cdiv(M, rows),),
            x2d, x2d.stride(0), x2d.stride(1),
            r, r.stride(0), r.stride(1),
            y, h if h is not None else y, weight, rstd,
            N, eps, M,
            HAS_RESIDUAL=residual2d is not None,
            ROWS=rows,
            BLOCK_N=block_n,
            SINGLE_BLOCK=single,
            num_warps=row_num_warps(block_n),
        )
    return y, h, rstd


def _bwd_launch(M: int, block_n: int, device: torch.device) -> tuple[int, int]:
    """(rows per tile, programs) of the backward; see the constants at the top."""
    if interpreter_config() or block_n > NARROW_N:
        rows = tile_rows(M, block_n) if interpreter_config() else max(1, min(BWD_TILE // block_n, triton.next_power_of_2(M)))
        return rows, max(1, min(triton.cdiv(M, rows * MIN_BWD_TILES), sm_count(device) * BWD_PROGRAMS_PER_SM))
    programs = max(1, min(sm_count(device), triton.cdiv(M, 2)))
    rows_per_program = triton.cdiv(M, programs)
    tiles_of = max(1, rows_per_program // NARROW_TILES_PER_PROGRAM)
    return min(1 << (tiles_of.bit_length() - 1), max(1, NARROW_TILE // block_n)), programs


def rmsnorm_backward(
    dy2d: Tensor, x2d: Tensor, weight: Tensor, rstd: Tensor, dh2d: Tensor | None = None, dx2_dtype=None,
    dweight_out: Tensor | None = None,
) -> tuple[Tensor, Tensor | None, Tensor]:
    """Launch the backward on [M, N] views; returns (dx in x's dtype, dx in ``dx2_dtype`` or
    None, dweight). dy may come in another dtype than x (a bf16 GEMM's input gradient).
    ``dweight_out``: a zeroed fp32 [N] buffer that the atomic weight-gradient sum adds into and
    that comes back as dweight (v4 zeroes one buffer for all its norms, not one per norm); the
    deterministic and wide-row paths ignore it."""
    M, N = x2d.shape
    block_n, single = _block_n(N)
    rows, programs = _bwd_launch(M, block_n, x2d.device)
    dx = torch.empty((M, N), dtype=x2d.dtype, device=x2d.device)
    dx2 = torch.empty((M, N), dtype=dx2_dtype, device=x2d.device) if dx2_dtype is not None else None
    # whole tiles per program (the last programs may get fewer rows, or none)
    rows_per_program = triton.cdiv(triton.cdiv(M, programs), rows) * rows if M > 0 else 0
    atomic = ATOMIC_DW and single and not torch.are_deterministic_algorithms_enabled()
    if atomic:
        dw_partial = torch.zeros(N, dtype=torch.float32, device=x2d.device) if dweight_out is None else dweight_out
    else:
        alloc = torch.empty if single else torch.zeros
        dw_partial = alloc((programs, N), dtype=torch.float32, device=x2d.device)
    dh = dh2d if dh2d is not None else dy2d
    if M > 0:
        launch(_rmsnorm_bwd_kernel, (programs,),
            dy2d, dy2d.stride(0), dy2d.stride(1),
            x2d, x2d.stride(0), x2d.stride(1),
            dh, dh.stride(0), dh.stride(1),
            weight, rstd, dx, dx2 if dx2 is not None else dx, dw_partial,
            M, N, rows_per_program,
            HAS_DRESIDUAL=dh2d is not None,
            HAS_DX2=dx2 is not None,
            ATOMIC_DW=atomic,
            ROWS=rows,
            BLOCK_N=block_n,
            SINGLE_BLOCK=single,
            num_warps=row_num_warps(block_n * rows),
        )
        dw = dw_partial if atomic else column_sum(dw_partial)
    else:
        dw = torch.zeros(N, dtype=torch.float32, device=x2d.device)
    return dx, dx2, dw.to(weight.dtype)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, eps: float, out_dtype) -> Tensor:
        check_tensors(x, weight)
        x2d = as_rows(x)
        weight = weight.contiguous()
        y, _, rstd = rmsnorm_forward(x2d, weight, eps, out_dtype=out_dtype)
        ctx.save_for_backward(x2d, weight, rstd)
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy: Tensor):
        x2d, weight, rstd = ctx.saved_tensors
        dx, _, dw = rmsnorm_backward(as_rows(dy), x2d, weight, rstd)
        return dx.view(dy.shape), dw, None, None


def rmsnorm(x: Tensor, weight: Tensor, eps: float = 1e-6, out_dtype: torch.dtype | None = None) -> Tensor:
    """y = x / sqrt(mean(x**2, -1) + eps) * weight over the last dim, fp32 math, returned in
    ``out_dtype`` (default: x's dtype)."""
    if x.shape[-1] != weight.numel():
        raise ValueError(f"weight has {weight.numel()} elements, x's last dim is {x.shape[-1]}")
    return _RMSNorm.apply(x, weight, eps, out_dtype)
