"""Fused cross-entropy (Liger-style): loss and gradient in one pass over the logits.

At LLM vocabulary sizes the logits are the largest activation in the model. The eager path
reads them for log_softmax, writes log-probs, reads those for the loss, and in the backward
reads and writes the same size again. Here one program per row makes an online-softmax pass
over V in blocks (running max and sum), then a second pass writes the finished gradient
(softmax - onehot) / n_valid straight into a buffer, so no [N, V] probability tensor is ever
stored and the logits need not be kept for the backward. The backward only scales that buffer
by the incoming scalar gradient.

The count of non-ignored rows stays on the device (read inside the kernel), so there is no
host synchronization. Targets outside [0, V) other than ignore_index are not checked.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import check_tensors, interpreting


@triton.jit
def _cross_entropy_kernel(
    LOGITS, stride_n, stride_v,
    TARGETS, LOSS, GRAD, N_VALID,
    V, ignore_index,
    COMPUTE_GRAD: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    logits_row = LOGITS + row * stride_n
    grad_row = GRAD + row * V
    target = tl.load(TARGETS + row).to(tl.int64)
    if target == ignore_index:
        if COMPUTE_GRAD:
            for start in range(0, V, BLOCK_V):
                cols = start + tl.arange(0, BLOCK_V)
                tl.store(grad_row + cols, tl.zeros([BLOCK_V], dtype=GRAD.dtype.element_ty), mask=cols < V)
        tl.store(LOSS + row, 0.0)
    else:
        m = float("-inf")
        d = 0.0
        for start in range(0, V, BLOCK_V):
            cols = start + tl.arange(0, BLOCK_V)
            x = tl.load(logits_row + cols * stride_v, mask=cols < V, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        lse = m + tl.log(d)
        target_logit = tl.load(logits_row + target * stride_v).to(tl.float32)
        tl.store(LOSS + row, lse - target_logit)
        if COMPUTE_GRAD:
            inv_n = 1.0 / tl.load(N_VALID).to(tl.float32)
            for start in range(0, V, BLOCK_V):
                cols = start + tl.arange(0, BLOCK_V)
                mask = cols < V
                x = tl.load(logits_row + cols * stride_v, mask=mask, other=0.0).to(tl.float32)
                p = tl.exp(x - lse)
                grad = tl.where(cols == target, p - 1.0, p) * inv_n
                tl.store(grad_row + cols, grad.to(GRAD.dtype.element_ty), mask=mask)


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor, ignore_index: int, compute_grad: bool) -> Tensor:
        check_tensors(logits, targets)
        n, v = logits.shape
        loss_rows = torch.empty(n, dtype=torch.float32, device=logits.device)
        n_valid = (targets != ignore_index).sum()
        grad = torch.empty_like(logits, memory_format=torch.contiguous_format) if compute_grad else loss_rows
        block_v = min(triton.next_power_of_2(v), 256 if interpreting() else 4096)
        if n:
            _cross_entropy_kernel[(n,)](
                logits, logits.stride(0), logits.stride(1),
                targets, loss_rows, grad, n_valid,
                v, ignore_index,
                COMPUTE_GRAD=compute_grad,
                BLOCK_V=block_v,
                num_warps=8 if block_v >= 2048 else 4,
            )
        if compute_grad:
            ctx.save_for_backward(grad)
        # 0/0 = NaN when every row is ignored, like torch's mean reduction.
        return loss_rows.sum() / n_valid

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        (grad,) = ctx.saved_tensors
        return grad * grad_output.to(grad.dtype), None, None, None


def cross_entropy(logits: Tensor, targets: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean cross-entropy over rows whose target != ignore_index, as a 0-dim fp32 tensor."""
    if logits.dim() != 2 or targets.shape != logits.shape[:1]:
        raise ValueError(f"expected logits [N, V] and targets [N], got {tuple(logits.shape)}, {tuple(targets.shape)}")
    # Evaluation (no grad) skips writing the gradient buffer: half the memory traffic.
    compute_grad = logits.requires_grad and torch.is_grad_enabled()
    return _CrossEntropy.apply(logits, targets, ignore_index, compute_grad)
