"""v1: the honest eager PyTorch baseline.

Separate q/k/v/o and gate/up/down projections, attention that materializes the [S, S] scores
with an explicit causal mask, RMSNorm and RoPE written as plain tensor expressions. Every
other version is measured against this one, so nothing here is slowed on purpose and nothing
is fused.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import record_function

from models.common import CanonicalMixin, ModelConfig, rope_cache


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Half-split rotation of x [B, S, H, D] by cos/sin [S, D/2]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with record_function("rms_norm"):
            return rms_norm(x, self.weight, self.eps)


class Attention(nn.Module):
    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.mc = mc
        self.q_proj = nn.Linear(mc.hidden_dim, mc.q_dim, bias=False)
        self.k_proj = nn.Linear(mc.hidden_dim, mc.kv_dim, bias=False)
        self.v_proj = nn.Linear(mc.hidden_dim, mc.kv_dim, bias=False)
        self.o_proj = nn.Linear(mc.q_dim, mc.hidden_dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        mc = self.mc
        B, S, _ = x.shape
        with record_function("qkv_projection"):
            q = self.q_proj(x).view(B, S, mc.num_heads, mc.head_dim)
            k = self.k_proj(x).view(B, S, mc.num_kv_heads, mc.head_dim)
            v = self.v_proj(x).view(B, S, mc.num_kv_heads, mc.head_dim)
        with record_function("rope"):
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        out = eager_causal_attention(q, k, v)
        with record_function("attention_output"):
            return self.o_proj(out.transpose(1, 2).reshape(B, S, mc.q_dim))


def eager_causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention that materializes the [B, H, S, S] scores: memory grows with S squared.

    q [B, H, S, D]; k, v [B, KVH, S, D] are repeated to H heads (grouped-query attention).
    """
    H, S, D = q.shape[1], q.shape[2], q.shape[3]
    groups = H // k.shape[1]
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    with record_function("attention_scores"):
        scores = (q @ k.transpose(-2, -1)) * D**-0.5
        scores = scores + torch.full((S, S), float("-inf"), device=q.device).triu(1)
    with record_function("attention_softmax"):
        probs = F.softmax(scores.float(), dim=-1).to(q.dtype)
    with record_function("attention_values"):
        return probs @ v


class SwiGLU(nn.Module):
    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.gate_proj = nn.Linear(mc.hidden_dim, mc.ffn_dim, bias=False)
        self.up_proj = nn.Linear(mc.hidden_dim, mc.ffn_dim, bias=False)
        self.down_proj = nn.Linear(mc.ffn_dim, mc.hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with record_function("swiglu"):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(mc.hidden_dim, mc.norm_eps)
        self.attn = Attention(mc)
        self.ffn_norm = RMSNorm(mc.hidden_dim, mc.norm_eps)
        self.ffn = SwiGLU(mc)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class TinyLlamaV1(CanonicalMixin, nn.Module):
    """Embedding (tied to the output projection), pre-norm blocks, final norm, cross-entropy.

    Later versions subclass this and swap `block_class` or override `forward`.
    """

    block_class: type[nn.Module] = Block

    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.config = mc
        self.embed = nn.Embedding(mc.vocab_size, mc.hidden_dim)
        self.layers = nn.ModuleList(self.block_class(mc) for _ in range(mc.num_layers))
        self.norm = RMSNorm(mc.hidden_dim, mc.norm_eps)
        cos, sin = rope_cache(mc.max_seq_len, mc.head_dim, mc.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        S = idx.shape[1]
        cos, sin = self.rope_cos[:S], self.rope_sin[:S]
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = F.linear(self.norm(x), self.embed.weight)
        with record_function("loss"):
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))
