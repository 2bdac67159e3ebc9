"""Plain PyTorch references for every kernel in this package.

They exist for the tests and as readable documentation of the math: each one upcasts to fp32,
computes the textbook formula with materialized intermediates, and returns in the input dtype,
so a kernel's error can be measured against them (or against the same code run in float64).
They are differentiable through autograd, which makes them the reference for the backward too.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def _compute_dtype(t: Tensor) -> torch.dtype:
    # float64 inputs stay float64 so tests can build a higher-precision reference.
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def rmsnorm_reference(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    ct = _compute_dtype(x)
    xf = x.to(ct)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(ct)).to(x.dtype)


def add_rmsnorm_reference(
    x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6
) -> tuple[Tensor, Tensor]:
    """Outputs in the promoted dtype of x and residual, as eager ``x + residual`` gives."""
    out_dtype = torch.promote_types(x.dtype, residual.dtype)
    ct = torch.promote_types(_compute_dtype(x), _compute_dtype(residual))
    h = x.to(ct) + residual.to(ct)
    return rmsnorm_reference(h, weight, eps).to(out_dtype), h.to(out_dtype)


def rope_reference(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x [B, S, H, D]; cos/sin [S, D/2] (rows beyond S are ignored); half-split convention."""
    ct = _compute_dtype(x)
    seq, half = x.shape[1], x.shape[-1] // 2
    c = cos[:seq].to(ct)[None, :, None, :]
    s = sin[:seq].to(ct)[None, :, None, :]
    xf = x.to(ct)
    x1, x2 = xf[..., :half], xf[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def swiglu_reference(gate_up: Tensor) -> Tensor:
    ct = _compute_dtype(gate_up)
    gate, up = gate_up.to(ct).chunk(2, dim=-1)
    return (F.silu(gate) * up).to(gate_up.dtype)


def swiglu_ffn_reference(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
    ct = _compute_dtype(x)
    xf = x.to(ct)
    return (F.silu(xf @ w_gate.to(ct).T) * (xf @ w_up.to(ct).T)).to(x.dtype)


def attention_reference(
    q: Tensor, k: Tensor, v: Tensor, causal: bool = True, sm_scale: float | None = None
) -> Tensor:
    """Materialized-scores attention; q [B, H, S, D], k/v [B, KVH, S, D] with GQA by repetition."""
    ct = _compute_dtype(q)
    heads, kv_heads, seq, head_dim = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    scale = head_dim**-0.5 if sm_scale is None else sm_scale
    kf = k.to(ct).repeat_interleave(heads // kv_heads, dim=1)
    vf = v.to(ct).repeat_interleave(heads // kv_heads, dim=1)
    scores = (q.to(ct) @ kf.transpose(-1, -2)) * scale
    if causal:
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return (scores.softmax(-1) @ vf).to(q.dtype)


def cross_entropy_reference(logits: Tensor, targets: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean over non-ignored rows, as a 0-dim fp32 (or float64) tensor; NaN if every row is ignored."""
    return F.cross_entropy(logits.to(_compute_dtype(logits)), targets, ignore_index=ignore_index)


def attention_qkv_reference(qkv: Tensor, cos: Tensor, sin: Tensor, num_heads: int, num_kv_heads: int) -> Tensor:
    """Causal attention of a fused projection [B, S, (H + 2*KVH) * D] with RoPE on q and k."""
    B, S, width = qkv.shape
    D = width // (num_heads + 2 * num_kv_heads)
    heads = qkv.view(B, S, num_heads + 2 * num_kv_heads, D)
    q, k, v = heads.split([num_heads, num_kv_heads, num_kv_heads], dim=2)
    q, k = rope_reference(q, cos, sin), rope_reference(k, cos, sin)
    out = attention_reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True)
    return out.transpose(1, 2).reshape(B, S, num_heads * D)


def rope_gqa_qkv_reference(qkv: Tensor, cos: Tensor, sin: Tensor, num_heads: int, num_kv_heads: int):
    """(q, k, v) [B, H, S, D] of a fused projection: RoPE on q and k, k and v repeated per group."""
    B, S, width = qkv.shape
    D = width // (num_heads + 2 * num_kv_heads)
    q, k, v = qkv.view(B, S, num_heads + 2 * num_kv_heads, D).split([num_heads, num_kv_heads, num_kv_heads], dim=2)
    group = num_heads // num_kv_heads
    k, v = rope_reference(k, cos, sin).repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
    return rope_reference(q, cos, sin).transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def adamw_reference(
    param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, step: Tensor, lr: float,
    betas: tuple[float, float], eps: float, weight_decay: float, low_precision_out: Tensor | None = None,
) -> None:
    """kernels.adamw_step in torch ops, in place, same order of operations (torch's fused AdamW)."""
    beta1, beta2 = betas
    bias_correction1 = -torch.expm1(step * math.log(beta1))
    bias_correction2_sqrt = torch.sqrt(-torch.expm1(step * math.log(beta2)))
    param.sub_(lr * weight_decay * param)
    exp_avg.mul_(beta1).add_((1 - beta1) * grad)
    exp_avg_sq.mul_(beta2).add_((1 - beta2) * grad * grad)
    denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)
    param.sub_((lr / bias_correction1) * exp_avg / denom)
    if low_precision_out is not None:
        low_precision_out.copy_(param)
