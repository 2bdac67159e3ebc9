"""Residual add fused into RMSNorm: ``h = x + residual; y = rmsnorm(h)`` in one pass.

Unfused, a pre-norm block reads x and residual to write h, then reads h again to normalize it.
Fused, one kernel reads x and residual once and writes both y and h (h is the next residual
stream). The backward is one kernel too: h feeds both the norm and the residual stream, so its
gradient is the norm's backward of dy plus dh, and x and residual both receive it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from kernels._utils import as_rows, check_tensors
from kernels.rmsnorm import rmsnorm_backward, rmsnorm_forward


class _AddRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, residual: Tensor, weight: Tensor, eps: float):
        check_tensors(x, residual, weight)
        weight = weight.contiguous()
        y, h, rstd = rmsnorm_forward(as_rows(x), weight, eps, residual2d=as_rows(residual))
        ctx.save_for_backward(h, weight, rstd)
        ctx.residual_dtype = residual.dtype
        return y.view(x.shape), h.view(x.shape)

    @staticmethod
    def backward(ctx, dy: Tensor, dh: Tensor):
        h, weight, rstd = ctx.saved_tensors
        dx, dw = rmsnorm_backward(as_rows(dy), h, weight, rstd, dh2d=as_rows(dh))
        dx = dx.view(dy.shape)
        return dx, dx.to(ctx.residual_dtype), dw, None


def add_rmsnorm(
    x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6
) -> tuple[Tensor, Tensor]:
    """Returns (rmsnorm(x + residual, weight, eps), x + residual), both in x's dtype."""
    if x.shape != residual.shape:
        raise ValueError(f"x {tuple(x.shape)} and residual {tuple(residual.shape)} must match")
    if x.shape[-1] != weight.numel():
        raise ValueError(f"weight has {weight.numel()} elements, x's last dim is {x.shape[-1]}")
    return _AddRMSNorm.apply(x, residual, weight, eps)
