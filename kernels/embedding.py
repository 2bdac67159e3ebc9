"""Embedding lookup whose backward is one Triton scatter-add.

torch's embedding backward sorts the token ids to sum each row's gradients in a fixed order
(several kernels), and ``index_add_`` adds one element per thread: at the default vocabulary
(1000 rows) and 8192 tokens the two took 31 us a step at seq 128 and 26.4 us (with the zeroing)
at seq 1024 on an H200. Here each program adds a tile of 16 token rows (up to 512 columns) into their
weight rows with relaxed atomics: 8.8 us with the zeroing. Atomics add in an order that
varies from run to run, so the last bits of the gradient do too: callers that need
deterministic results keep torch's backward (v4 does when deterministic algorithms are on).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import INTERPRETER_TILE, check_tensors, enter_region, exit_region, interpreter_config, launch, work_metadata
from kernels import work as kernel_work


def _work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.embedding_backward(args["T"], args["N"]))


@triton.jit(launch_metadata=_work)
def _embedding_backward_kernel(
    IDX, G, DW, T, N, stride_g, stride_dw, BLOCK_T: tl.constexpr, BLOCK_N: tl.constexpr
):
    enter_region("body")
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ok = (rows < T)[:, None] & (cols < N)[None, :]
    ids = tl.load(IDX + rows, mask=rows < T, other=0).to(tl.int64)
    g = tl.load(G + rows[:, None].to(tl.int64) * stride_g + cols[None, :], mask=ok, other=0.0)
    tl.atomic_add(DW + ids[:, None] * stride_dw + cols[None, :], g.to(tl.float32), mask=ok, sem="relaxed")
    exit_region("body")


def embedding_backward(idx: Tensor, grad: Tensor, out: Tensor) -> Tensor:
    """Add each row of ``grad`` [T, N] into row ``idx[t]`` of ``out`` [V, N] (fp32, unit column
    stride), in place; returns ``out``. Zero ``out`` first for the embedding's gradient alone."""
    if out.dtype != torch.float32 or out.dim() != 2 or out.stride(1) != 1:
        raise ValueError(f"out must be a 2-D fp32 tensor with unit column stride, got {out.dtype} {tuple(out.shape)}")
    idx = idx.reshape(-1)
    grad = grad.reshape(-1, grad.shape[-1])
    if grad.shape != (idx.numel(), out.shape[1]):
        raise ValueError(f"grad {tuple(grad.shape)} does not fit {idx.numel()} ids of rows of {out.shape[1]}")
    if grad.stride(1) != 1:
        grad = grad.contiguous()
    check_tensors(idx, grad, out)
    T, N = grad.shape
    if interpreter_config():
        block_n = triton.next_power_of_2(N)
        block_t = max(1, min(triton.next_power_of_2(T), INTERPRETER_TILE // block_n))
    else:
        block_t, block_n = 16, min(triton.next_power_of_2(N), 512)
    if T and N:
        launch(_embedding_backward_kernel, (triton.cdiv(T, block_t), triton.cdiv(N, block_n)),
            idx, grad, out, T, N, grad.stride(0), out.stride(0), BLOCK_T=block_t, BLOCK_N=block_n, num_warps=4
        )
    return out


class _Embedding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, idx: Tensor, weight: Tensor) -> Tensor:
        ctx.save_for_backward(idx)
        ctx.weight_shape = weight.shape
        return F.embedding(idx, weight)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (idx,) = ctx.saved_tensors
        dweight = torch.zeros(ctx.weight_shape, dtype=torch.float32, device=grad.device)
        return None, embedding_backward(idx, grad, dweight)


def embedding(idx: Tensor, weight: Tensor) -> Tensor:
    """weight[idx] (F.embedding) for an fp32 weight [V, N]; the gradient is summed by atomics,
    so its last bits vary from run to run (see the module docstring)."""
    if weight.dtype != torch.float32 or weight.dim() != 2:
        raise ValueError(f"weight must be a 2-D fp32 tensor, got {weight.dtype} {tuple(weight.shape)}")
    if idx.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"idx must hold int32/int64 token ids, got {idx.dtype}")
    check_tensors(idx, weight)
    return _Embedding.apply(idx, weight)
