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


def _take(ctx) -> Tensor | None:
    """The forward's dweight_out, dropped from ctx: returned as the weight's gradient with no
    other reference, autograd adopts it as .grad instead of copying it."""
    out, ctx.dweight_out = ctx.dweight_out, None
    return out


class _AddRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, residual: Tensor, weight: Tensor, eps: float, out_dtype, dweight_out):
        check_tensors(x, residual, weight)
        ctx.dweight_out = dweight_out
        weight = weight.contiguous()
        h_dtype = torch.promote_types(x.dtype, residual.dtype)
        y, h, rstd = rmsnorm_forward(
            as_rows(x), weight, eps, residual2d=as_rows(residual), out_dtype=out_dtype or h_dtype, h_dtype=h_dtype
        )
        ctx.save_for_backward(h, weight, rstd)
        ctx.dtypes = (x.dtype, residual.dtype)
        return y.view(x.shape), h.view(x.shape)

    @staticmethod
    def backward(ctx, dy: Tensor, dh: Tensor):
        h, weight, rstd = ctx.saved_tensors
        x_dtype, residual_dtype = ctx.dtypes
        # x and residual receive the same gradient; the kernel stores it in both dtypes at once.
        dx2_dtype = x_dtype if x_dtype != h.dtype else None
        dh_total, dh_total2, dw = rmsnorm_backward(
            as_rows(dy), h, weight, rstd, dh2d=as_rows(dh), dx2_dtype=dx2_dtype, dweight_out=_take(ctx)
        )
        dh_total = dh_total.view(dy.shape)
        dx = dh_total2.view(dy.shape) if dh_total2 is not None else dh_total
        return dx, dh_total.to(residual_dtype), dw, None, None, None


class _RMSNormStream(torch.autograd.Function):
    """rmsnorm(x), and x as the residual stream it starts (the first block's norm): the stream's
    gradient comes back into this backward, whose kernel adds it to the norm's input gradient.
    Without it x would feed two ops, and autograd would add their gradients in a kernel of its
    own (a pass over [tokens, hidden] fp32 values)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, eps: float, out_dtype, dweight_out):
        check_tensors(x, weight)
        ctx.dweight_out = dweight_out
        x2d = as_rows(x)
        weight = weight.contiguous()
        y, _, rstd = rmsnorm_forward(x2d, weight, eps, out_dtype=out_dtype)
        ctx.save_for_backward(x2d, weight, rstd)
        return y.view(x.shape), x.view_as(x)

    @staticmethod
    def backward(ctx, dy: Tensor, dh: Tensor):
        x2d, weight, rstd = ctx.saved_tensors
        dx, _, dw = rmsnorm_backward(as_rows(dy), x2d, weight, rstd, dh2d=as_rows(dh), dweight_out=_take(ctx))
        return dx.view(dy.shape), dw, None, None, None


def add_rmsnorm(
    x: Tensor,
    residual: Tensor | None,
    weight: Tensor,
    eps: float = 1e-6,
    out_dtype: torch.dtype | None = None,
    dweight_out: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Returns (rmsnorm(x + residual, weight, eps), x + residual).

    x + residual comes back in the promoted dtype of x and residual, as eager ``x + residual``
    would (so a bf16 branch output added to an fp32 residual stream under autocast stays fp32);
    the norm in ``out_dtype`` (default: that same dtype), e.g. bf16 for the GEMM it feeds.
    ``residual=None`` starts a residual stream: (rmsnorm(x), x), with one backward kernel for
    the gradients of both uses of x. ``dweight_out``: a zeroed fp32 buffer shaped like weight
    that the weight's gradient may be accumulated into (see rmsnorm_backward).
    """
    if dweight_out is not None and (
        dweight_out.dtype != torch.float32 or dweight_out.shape != weight.shape or not dweight_out.is_contiguous()
    ):
        raise ValueError(f"dweight_out must be a contiguous fp32 tensor of shape {tuple(weight.shape)}")
    if residual is None:
        if x.shape[-1] != weight.numel():
            raise ValueError(f"weight has {weight.numel()} elements, x's last dim is {x.shape[-1]}")
        return _RMSNormStream.apply(x, weight, eps, out_dtype, dweight_out)
    if x.shape != residual.shape:
        raise ValueError(f"x {tuple(x.shape)} and residual {tuple(residual.shape)} must match")
    if x.shape[-1] != weight.numel():
        raise ValueError(f"weight has {weight.numel()} elements, x's last dim is {x.shape[-1]}")
    return _AddRMSNorm.apply(x, residual, weight, eps, out_dtype, dweight_out)
