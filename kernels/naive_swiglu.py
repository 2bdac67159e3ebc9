"""A deliberately slow SwiGLU FFN: the teaching example of "writing your own GEMM badly".

The reference workshop's stage-4 bug, made real and correct: one Triton program per output
element computes its own two dot products over D with vector loads and a reduction, without
tl.dot. Every program re-reads a row of x and a row of each weight matrix from memory, there is
no tiling and no reuse, and the tensor cores sit idle, so it is orders of magnitude slower than
two cuBLAS/hipBLASLt GEMMs plus a fused activation. That gap is what the lab wants a learner to
find in a profile. The backward is plain PyTorch (fp32 GEMMs), so every parameter still trains
correctly while the forward stays the thing to profile. (In the Triton interpreter, where each
program costs milliseconds of Python, a program computes a block of output elements instead,
each still its own dot product: see the kernel.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import as_rows, check_tensors, enter_region, exit_region, launch, tile_rows, work_metadata
from kernels import work as kernel_work


def _work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.naive_swiglu_ffn(args["M"], args["F"], args["D"], args["X"].element_size()))


@triton.jit(launch_metadata=_work)
def _naive_swiglu_ffn_kernel(
    X, stride_xm, stride_xk,
    WG, stride_gf, stride_gk,
    WU, stride_uf, stride_uk,
    Y, F, D, M,
    ROWS: tl.constexpr,
    COLS: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """Output elements (m, f) of a [ROWS, COLS] block, each its own two dot products over D.

    A GPU launch has ROWS == COLS == 1: one program per output element, the point of the
    kernel. The interpreter, where every program costs milliseconds of Python, takes blocks of
    outputs; each element is still a separate multiply-and-reduce over D (no tl.dot, no reuse
    beyond what broadcasting the loaded rows gives numpy).
    """
    enter_region("body")
    pid = tl.program_id(0)
    if ROWS * COLS == 1:
        m = (pid // F).to(tl.int64)
        f = (pid % F).to(tl.int64)
        acc_gate = tl.zeros([BLOCK_K], dtype=tl.float32)
        out = Y + pid
        out_ok = tl.full([], 1, tl.int1)
    else:
        col_blocks = tl.cdiv(F, COLS)
        m = (pid // col_blocks) * ROWS + tl.arange(0, ROWS)[:, None]
        f = (pid % col_blocks) * COLS + tl.arange(0, COLS)[None, :]
        out = Y + m.to(tl.int64) * F + f
        out_ok = (m < M) & (f < F)
        # Out-of-range rows and columns repeat the last one, so their loads need no mask.
        m = tl.minimum(m, M - 1).to(tl.int64)[:, :, None]
        f = tl.minimum(f, F - 1).to(tl.int64)[:, :, None]
        acc_gate = tl.zeros([ROWS, COLS, BLOCK_K], dtype=tl.float32)
    acc_up = acc_gate
    for start in range(0, D, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K)
        mask = k < D
        x = tl.load(X + m * stride_xm + k * stride_xk, mask=mask, other=0.0).to(tl.float32)
        wg = tl.load(WG + f * stride_gf + k * stride_gk, mask=mask, other=0.0).to(tl.float32)
        wu = tl.load(WU + f * stride_uf + k * stride_uk, mask=mask, other=0.0).to(tl.float32)
        acc_gate += x * wg
        acc_up += x * wu
    gate = tl.sum(acc_gate, axis=-1)
    up = tl.sum(acc_up, axis=-1)
    tl.store(out, (gate * tl.sigmoid(gate) * up).to(Y.dtype.element_ty), mask=out_ok)
    exit_region("body")


class _NaiveSwiGLUFFN(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
        check_tensors(x, w_gate, w_up)
        x2d = as_rows(x)
        rows, d = x2d.shape
        f = w_gate.shape[0]
        y = torch.empty((rows, f), dtype=x.dtype, device=x.device)
        if y.numel():
            block_k = min(triton.next_power_of_2(d), 128)
            # Rows of the weights, then rows of x, per program: 1 and 1 on a GPU.
            block_cols = tile_rows(f, block_k)
            block_rows = tile_rows(rows, block_cols * block_k)
            grid = (triton.cdiv(rows, block_rows) * triton.cdiv(f, block_cols),)
            launch(_naive_swiglu_ffn_kernel, grid,
                x2d, *x2d.stride(),
                w_gate, *w_gate.stride(),
                w_up, *w_up.stride(),
                y, f, d, rows,
                ROWS=block_rows,
                COLS=block_cols,
                BLOCK_K=block_k,
                num_warps=1,
            )
        ctx.save_for_backward(x2d, w_gate, w_up)
        ctx.x_shape = x.shape
        return y.view(*x.shape[:-1], f)

    @staticmethod
    def backward(ctx, dy: Tensor):
        x2d, w_gate, w_up = ctx.saved_tensors
        x32, wg32, wu32 = x2d.float(), w_gate.float(), w_up.float()
        dy32 = dy.reshape(-1, dy.shape[-1]).float()
        gate, up = x32 @ wg32.T, x32 @ wu32.T
        sig = torch.sigmoid(gate)
        d_up = dy32 * F.silu(gate)
        d_gate = dy32 * up * sig * (1.0 + gate * (1.0 - sig))
        dx = d_gate @ wg32 + d_up @ wu32
        return (
            dx.to(x2d.dtype).view(ctx.x_shape),
            (d_gate.T @ x32).to(w_gate.dtype),
            (d_up.T @ x32).to(w_up.dtype),
        )


def naive_swiglu_ffn(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
    """silu(x @ w_gate.T) * (x @ w_up.T) for x [..., D], w_gate/w_up [F, D]; slow on purpose."""
    if w_gate.shape != w_up.shape or w_gate.dim() != 2 or w_gate.shape[1] != x.shape[-1]:
        raise ValueError(
            f"w_gate/w_up must both be [F, {x.shape[-1]}], got "
            f"{tuple(w_gate.shape)} and {tuple(w_up.shape)}"
        )
    return _NaiveSwiGLUFFN.apply(x, w_gate, w_up)
