"""v3: Triton kernels for everything that is not a GEMM, each with its own backward.

RMSNorm, RoPE, the SwiGLU activation and causal flash attention run as Triton kernels from
kernels/ (torch.autograd.Functions with Triton backward kernels); the GEMMs (fused QKV, output,
fused gate/up, down) stay with cuBLAS/rocBLAS, which no hand-written kernel at this size beats.
Unlike the reference workshop's v3, gradients flow through every kernel, so every parameter
trains; the `detached-backward` fault re-creates the reference's bug on purpose.

Toggle `recompute_ffn`: activation checkpointing of the FFN with torch.utils.checkpoint, which
keeps the FFN's input only and runs the whole FFN forward again in the backward.

Faults that live here (see tinylab/training/faults.py for the catalogue):
- naive-triton-swiglu: the FFN's gate/up GEMM and activation replaced by a Triton kernel that
  computes each output element with its own dot product.
- non-contiguous: RMSNorm is fed a column-major copy of its input, so each row's loads stride
  across memory instead of being coalesced (same values, slower kernel).
- detached-backward: RMSNorm and attention kernels called outside autograd, as in the reference.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import record_function
from torch.utils.checkpoint import checkpoint

import kernels
from models.common import ModelConfig
from models.v1_baseline import TinyLlamaV1


def _call(fn, mc: ModelConfig, *args):
    """Call a kernel, or under the detached-backward fault, call it as a raw launch."""
    if mc.fault == "detached-backward":
        with torch.no_grad():
            return fn(*args)
    return fn(*args)


class TritonRMSNorm(nn.Module):
    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.mc = mc
        self.weight = nn.Parameter(torch.ones(mc.hidden_dim))

    def forward(self, x: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
        if self.mc.fault == "non-contiguous":
            x = column_major(x)
        with record_function("triton_rmsnorm"):
            return _call(kernels.rmsnorm, self.mc, x, self.weight, self.mc.norm_eps, out_dtype)


def column_major(x: torch.Tensor) -> torch.Tensor:
    """Same values, transposed memory layout: row elements end up `rows` apart."""
    flat = x.reshape(-1, x.shape[-1])
    return flat.t().contiguous().t().view(x.shape)


class Attention(nn.Module):
    linear: type[nn.Linear] = nn.Linear

    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.mc = mc
        self.qkv_proj = self.linear(mc.hidden_dim, mc.q_dim + 2 * mc.kv_dim, bias=False)
        self.o_proj = self.linear(mc.q_dim, mc.hidden_dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        mc = self.mc
        B, S, _ = x.shape
        with record_function("qkv_projection"):
            qk, v = self.qkv_proj(x).split([mc.q_dim + mc.kv_dim, mc.kv_dim], dim=-1)
        with record_function("triton_rope"):
            # q and k heads sit side by side in the projection: one launch rotates both
            qk = kernels.rope(qk.view(B, S, mc.num_heads + mc.num_kv_heads, mc.head_dim), cos, sin)
        q, k = qk.split([mc.num_heads, mc.num_kv_heads], dim=2)
        v = v.view(B, S, mc.num_kv_heads, mc.head_dim)
        with record_function("flash_attention"):
            out = self.attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        with record_function("attention_output"):
            return self.o_proj(out.transpose(1, 2).reshape(B, S, mc.q_dim))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return _call(kernels.flash_attention, self.mc, q, k, v, True)


class SwiGLU(nn.Module):
    linear: type[nn.Linear] = nn.Linear

    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.mc = mc
        self.gate_up_proj = self.linear(mc.hidden_dim, 2 * mc.ffn_dim, bias=False)
        self.down_proj = self.linear(mc.ffn_dim, mc.hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mc.recompute_ffn:
            # Non-reentrant checkpoint: autograd keeps x only and re-runs _forward in the
            # backward. The FFN draws no random numbers, so no RNG state is saved (its
            # get_rng_state would also break a CUDA graph capture).
            return checkpoint(self._forward, x, use_reentrant=False, preserve_rng_state=False)
        return self._forward(x)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mc.fault == "naive-triton-swiglu":
            with record_function("naive_triton_swiglu"):
                w_gate, w_up = self.gate_up_proj.weight.chunk(2, dim=0)
                h = kernels.naive_swiglu_ffn(x, w_gate, w_up)
        else:
            with record_function("triton_swiglu"):
                h = kernels.swiglu(self.gate_up_proj(x))
        return self.down_proj(h)


class Block(nn.Module):
    ffn_class: type[SwiGLU] = SwiGLU

    def __init__(self, mc: ModelConfig):
        super().__init__()
        self.attn_norm = TritonRMSNorm(mc)
        self.attn = self.attention_class(mc)(mc)
        self.ffn_norm = TritonRMSNorm(mc)
        self.ffn = self.ffn_class(mc)

    def attention_class(self, mc: ModelConfig) -> type[Attention]:
        return Attention

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class TinyLlamaV3(TinyLlamaV1):
    block_class = Block

    def __init__(self, mc: ModelConfig):
        super().__init__(mc)
        self.norm = TritonRMSNorm(mc)
