"""Fused cross-entropy (Liger-style): loss and gradient in one pass over the logits.

At LLM vocabulary sizes the logits are the largest activation in the model. The eager path
reads them for log_softmax, writes log-probs, reads those for the loss, and in the backward
reads and writes the same size again. Here one program per row (many rows in the interpreter)
makes an online-softmax pass over V in blocks (running max and sum), then a second pass writes
the row's gradient softmax - onehot straight into a buffer, so no [N, V] probability tensor is
ever stored and the logits need not be kept for the backward (with ``in_place`` the gradient
even takes the logits' place). The backward only scales that buffer by the incoming scalar
gradient over the count of valid rows, both read from the device by a kernel of its own
(torch's multiply by a 0-dim tensor runs unvectorized: 16 us for [8192, 1000] bf16 on an H100).

The mean over non-ignored rows is one more single-program kernel, which also counts those rows
(torch's compare, two sums and a division were four launches); all of it stays on the device,
so there is no host synchronization. Targets outside [0, V) other than ignore_index are not
checked.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import (
    INTERPRETER_TILE,
    check_tensors,
    enter_region,
    exit_region,
    interpreter_config,
    launch,
    program_rows,
    row_all,
    row_full,
    row_max,
    row_sum,
    tile_rows,
    work_metadata,
)
from kernels import work as kernel_work

# Widest block of a row per loop step.
MAX_BLOCK_V = 4096


def _work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.cross_entropy(args["N"], args["V"], args["LOGITS"].element_size()))


def _mean_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.loss_mean(args["N"], args["TARGETS"].element_size()))


def _scale_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.scale(args["n"], args["X"].element_size()))


@triton.jit(launch_metadata=_work)
def _cross_entropy_kernel(
    LOGITS, stride_n, stride_v,
    TARGETS, LOSS, GRAD,
    V, ignore_index, N,
    COMPUTE_GRAD: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    enter_region("body")
    rows, row_ok = program_rows(N, ROWS)
    rows = rows.to(tl.int64)
    logits_rows = LOGITS + rows * stride_n
    grad_rows = GRAD + rows * V
    target = tl.load(TARGETS + rows, mask=row_ok, other=ignore_index).to(tl.int64)
    ignored = target == ignore_index
    # Where ROWS == 1, `ignored` is known false in the else branch, so its masks and where()s
    # fold away; in a tile, ignored rows run along on their real logits and are zeroed at the end.
    if row_all(ignored, ROWS):
        if COMPUTE_GRAD:
            for start in range(0, V, BLOCK_V):
                cols = start + tl.arange(0, BLOCK_V)[None, :]
                zeros = tl.zeros([ROWS, BLOCK_V], dtype=GRAD.dtype.element_ty)
                tl.store(grad_rows + cols, zeros, mask=row_ok & (cols < V))
        tl.store(LOSS + rows, 0.0, mask=row_ok)
    else:
        m = row_full(float("-inf"), ROWS)
        d = row_full(0.0, ROWS)
        for start in range(0, V, BLOCK_V):
            cols = start + tl.arange(0, BLOCK_V)[None, :]
            # No row mask: rows past N repeat row N - 1, so every row of a tile sees real logits.
            x = tl.load(logits_rows + cols * stride_v, mask=cols < V, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, row_max(x, ROWS))
            d = d * tl.exp(m - m_new) + row_sum(tl.exp(x - m_new), ROWS)
            m = m_new
        lse = m + tl.log(d)
        target_logit = tl.load(logits_rows + target * stride_v, mask=~ignored, other=0.0).to(tl.float32)
        tl.store(LOSS + rows, tl.where(ignored, 0.0, lse - target_logit), mask=row_ok)
        if COMPUTE_GRAD:  # of this row's loss; the mean's 1 / n_valid is applied in the backward
            for start in range(0, V, BLOCK_V):
                cols = start + tl.arange(0, BLOCK_V)[None, :]
                x = tl.load(logits_rows + cols * stride_v, mask=cols < V, other=0.0).to(tl.float32)
                p = tl.exp(x - lse)
                grad = tl.where(ignored, 0.0, tl.where(cols == target, p - 1.0, p))
                tl.store(grad_rows + cols, grad.to(GRAD.dtype.element_ty), mask=row_ok & (cols < V))
    exit_region("body")


@triton.jit(launch_metadata=_mean_work)
def _mean_kernel(LOSS, TARGETS, MEAN, N_VALID, N, ignore_index, BLOCK: tl.constexpr):
    """One program: the mean of the row losses over rows whose target is not ignored (0/0 = NaN
    when all are, as torch's mean reduction), and that row count, for the backward."""
    enter_region("body")
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        ok = offs < N
        total += tl.load(LOSS + offs, mask=ok, other=0.0)
        count += tl.where(ok & (tl.load(TARGETS + offs, mask=ok, other=ignore_index) != ignore_index), 1.0, 0.0)
    n_valid = tl.sum(count, axis=0)
    tl.store(MEAN, tl.where(n_valid > 0, tl.sum(total, axis=0) / tl.maximum(n_valid, 1.0), float("nan")))
    tl.store(N_VALID, n_valid)
    exit_region("body")


@triton.jit(launch_metadata=_scale_work)
def _scale_kernel(X, GO, N_VALID, OUT, n, BLOCK: tl.constexpr):
    enter_region("body")
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(X + offs, mask=ok).to(tl.float32)
    n_valid = tl.load(N_VALID)
    scale = tl.where(n_valid > 0, tl.load(GO).to(tl.float32) / tl.maximum(n_valid, 1.0), 0.0)  # none valid: all 0
    tl.store(OUT + offs, (x * scale).to(OUT.dtype.element_ty), mask=ok)
    exit_region("body")


def _mean(loss_rows: Tensor, targets: Tensor, ignore_index: int) -> tuple[Tensor, Tensor]:
    n = loss_rows.numel()
    mean = torch.empty(1, dtype=torch.float32, device=loss_rows.device)
    n_valid = torch.empty(1, dtype=torch.float32, device=loss_rows.device)
    block = min(INTERPRETER_TILE, triton.next_power_of_2(max(n, 1))) if interpreter_config() else 1024
    launch(_mean_kernel, (1,), loss_rows, targets, mean, n_valid, n, ignore_index, BLOCK=block, num_warps=4)
    return mean.view(()), n_valid


def _scaled(grad: Tensor, grad_output: Tensor, n_valid: Tensor) -> Tensor:
    """grad * grad_output / n_valid, for a contiguous grad and one-element scalars on its device."""
    out = torch.empty_like(grad)
    block = min(INTERPRETER_TILE, triton.next_power_of_2(max(grad.numel(), 1))) if interpreter_config() else 2048
    if grad.numel():
        launch(_scale_kernel, (triton.cdiv(grad.numel(), block),),
            grad, grad_output, n_valid, out, grad.numel(), BLOCK=block, num_warps=4
        )
    return out


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor, ignore_index: int, compute_grad: bool, in_place: bool) -> Tensor:
        check_tensors(logits, targets)
        n, v = logits.shape
        loss_rows = torch.empty(n, dtype=torch.float32, device=logits.device)
        if not compute_grad:
            grad = loss_rows
        elif in_place and logits.is_contiguous():
            grad = logits  # each row is read in full (first pass) before its gradient is written
        else:
            grad = torch.empty_like(logits, memory_format=torch.contiguous_format)
        block_v = min(triton.next_power_of_2(v), MAX_BLOCK_V)
        rows = tile_rows(n, block_v)
        if n:
            launch(_cross_entropy_kernel, (triton.cdiv(n, rows),),
                logits, logits.stride(0), logits.stride(1),
                targets, loss_rows, grad,
                v, ignore_index, n,
                COMPUTE_GRAD=compute_grad,
                ROWS=rows,
                BLOCK_V=block_v,
                num_warps=8 if block_v >= 2048 else 4,
            )
        mean, n_valid = _mean(loss_rows, targets, ignore_index)  # 0/0 = NaN over no valid rows, as torch
        if compute_grad:
            ctx.save_for_backward(grad, n_valid)
        return mean

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        grad, n_valid = ctx.saved_tensors
        return _scaled(grad, grad_output.reshape(1), n_valid), None, None, None, None


def cross_entropy(logits: Tensor, targets: Tensor, ignore_index: int = -100, in_place: bool = False) -> Tensor:
    """Mean cross-entropy over rows whose target != ignore_index, as a 0-dim fp32 tensor.

    ``in_place``: the gradient is written over the logits (contiguous ones), for a caller that
    does not read them afterwards (v4): one [N, V] buffer fewer."""
    if logits.dim() != 2 or targets.shape != logits.shape[:1]:
        raise ValueError(f"expected logits [N, V] and targets [N], got {tuple(logits.shape)}, {tuple(targets.shape)}")
    # Evaluation (no grad) skips writing the gradient buffer: half the memory traffic.
    compute_grad = logits.requires_grad and torch.is_grad_enabled()
    return _CrossEntropy.apply(logits, targets, ignore_index, compute_grad, in_place)
