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
        out_dtype = torch.promote_types(x.dtype, residual.dtype)
        y, h, rstd = rmsnorm_forward(
            as_rows(x), weight, eps, residual2d=as_rows(residual), out_dtype=out_dtype
        )
        ctx.save_for_backward(h, weight, rstd)
        ctx.dtypes = (x.dtype, residual.dtype)
        return y.view(x.shape), h.view(x.shape)

    @staticmethod
    def backward(ctx, dy: Tensor, dh: Tensor):
        h, weight, rstd = ctx.saved_tensors
        dh_total, dw = rmsnorm_backward(as_rows(dy), h, weight, rstd, dh2d=as_rows(dh))
        dh_total = dh_total.view(dy.shape)
        x_dtype, residual_dtype = ctx.dtypes
        return dh_total.to(x_dtype), dh_total.to(residual_dtype), dw, None


def add_rmsnorm(
    x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6
) -> tuple[Tensor, Tensor]:
    """Returns (rmsnorm(x + residual, weight, eps), x + residual).

    Both come back in the promoted dtype of x and residual, as eager ``x + residual`` would
    (so a bf16 branch output added to an fp32 residual stream under autocast stays fp32); with
    equal dtypes that is simply the input dtype.
    """
    if x.shape != residual.shape:
        raise ValueError(f"x {tuple(x.shape)} and residual {tuple(residual.shape)} must match")
    if x.shape[-1] != weight.numel():
        raise ValueError(f"weight has {weight.numel()} elements, x's last dim is {x.shape[-1]}")
    return _AddRMSNorm.apply(x, residual, weight, eps)
