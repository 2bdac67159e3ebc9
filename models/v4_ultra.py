"""v4: v3 plus the fusions that remove whole passes over memory, and a graphed step.

- Residual add + RMSNorm in one kernel (`kernels.add_rmsnorm`): each block boundary reads the
  branch output and the residual once and writes the new residual and its norm, instead of an
  add kernel followed by a norm kernel that re-reads the sum.
- Cross-entropy fused with its softmax and gradient (`kernels.cross_entropy`): the logits are
  read once, the probabilities are never stored.
- Whole-step CUDA/HIP graph capture (toggle `cuda_graph`, on by default on GPUs): one launch
  replays forward, backward and the fused AdamW, removing per-kernel launch overhead, which
  dominates at this model size. Done by the trainer.
- Attention straight off the fused QKV projection (kernels.flash_attention_qkv): one RoPE
  launch writes rotated q, k and v into the one buffer the backward keeps (the projection's
  output is freed), and the backward's two kernels write dq, dk, dv into one d(qkv) tensor,
  undoing RoPE in their epilogues: no concatenation or RoPE kernels, no second copy of q and k.
- The FFN in one autograd Function whose backward writes d(gate_up) over gate_up (no new
  buffer of the layer's largest activation at the backward's peak).
- Optional `sdpa` (the default in strict fp32, where Triton's dots cannot use tensor cores):
  torch's SDPA instead of our attention, fed by one RoPE + GQA-expansion kernel
  (kernels.rope_gqa_qkv) whose backward writes d(qkv) in one launch.
- Optional `recompute_ffn`: the FFN keeps only its input and the backward runs the gate/up
  GEMM again (not the down projection, as a generic checkpoint would): the largest activation
  gone for a sixth more GEMM FLOPs.
- Under bf16/fp16 autocast, no per-tensor casts. Autocast casts each weight to bf16 at every
  use and casts each bf16 weight gradient back to fp32: 67 small kernels a step at the default
  size (measured), plus a cast of every norm output and of its gradient (50 more). Here the GEMM weights
  are views of one fp32 buffer, cast to bf16 by one kernel per step; the weight-gradient GEMMs
  write fp32 straight into the master weights' gradients; and the norm kernels write their
  output in bf16 (and their input gradient in both dtypes) themselves. Same arithmetic as
  autocast: bf16 operands, fp32 accumulation, fp32 master weights and optimizer.
- Embedding backward as one scatter-add (`index_add_`) into a zeroed gradient instead of
  torch's sort-based deterministic kernel chain (31 us a step at seq 128, measured); with
  `deterministic` on, torch's own backward is kept.
Each claim is measured by `tinylab bench`; see README's Performance section.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import record_function

import kernels
from kernels.swiglu import swiglu_backward, swiglu_forward
from models.common import ModelConfig
from models.v3_triton import Attention, Block, SwiGLU, TinyLlamaV3, _call, column_major


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype autocast computes GEMMs in here, or None when autocast is off."""
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return None


_MM_OUT_DTYPE: dict[str, bool] = {}


def mm_fp32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for bf16/fp16 operands, returned in fp32 by the GEMM's own epilogue where the build
    supports ``out_dtype`` (CUDA), else rounded to a and b's dtype first, as autocast would."""
    if _MM_OUT_DTYPE.get(a.device.type, True):
        try:
            return torch.mm(a, b, out_dtype=torch.float32)
        except (RuntimeError, TypeError):  # NotImplementedError on CPU builds is a RuntimeError
            _MM_OUT_DTYPE[a.device.type] = False
    with record_function("mm_fp32_fallback"):
        return torch.mm(a, b).float()


def _weight_grad(dy: torch.Tensor, x: torch.Tensor, low_precision: bool) -> torch.Tensor:
    """dy.T @ x for 2-D dy, x: in fp32 straight from the GEMM for bf16/fp16 operands."""
    return mm_fp32(dy.t(), x) if low_precision else dy.t() @ x


class _LowPrecisionLinear(torch.autograd.Function):
    """y = x @ w_lp.T, where w_lp is this step's bf16 copy of the fp32 master weight w.

    The weight gradient goes to w itself, in fp32, straight from the GEMM: no bf16 weight
    gradient and no cast kernel.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, weight_lp: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight_lp)
        return F.linear(x, weight_lp)

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, weight_lp = ctx.saved_tensors
        dy = dy.to(weight_lp.dtype)
        dx = dy @ weight_lp
        return dx, _weight_grad(dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1]), True), None


class MixedLinear(nn.Linear):
    """nn.Linear that, while the model has set ``weight_lp`` (autocast), computes with it."""

    weight_lp: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight_lp is None:
            return super().forward(x)
        return _LowPrecisionLinear.apply(x.to(self.weight_lp.dtype), self.weight, self.weight_lp)


class UltraAttention(Attention):
    """Attention read straight off the fused projection (see kernels.flash_attention_qkv)."""

    linear = MixedLinear

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        mc = self.mc
        with record_function("qkv_projection"):
            qkv = self.qkv_proj(x)
        with record_function("flash_attention_rope"):
            out = _call(kernels.flash_attention_qkv, mc, qkv, cos, sin, mc.num_heads, mc.num_kv_heads)
        with record_function("attention_output"):
            return self.o_proj(out)


class SdpaAttention(UltraAttention):
    """torch's SDPA as the attention, fed by one kernel that rotates q and k and repeats k and v
    to the query heads (kernels.rope_gqa_qkv; its backward sums the groups and undoes RoPE into
    one d(qkv)), instead of a RoPE launch, two repeat_interleave copies, two group sums and a
    concatenation."""

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        mc = self.mc
        B, S, _ = x.shape
        with record_function("qkv_projection"):
            qkv = self.qkv_proj(x)
        with record_function("rope_gqa_sdpa"):
            q, k, v = _call(kernels.rope_gqa_qkv, mc, qkv, cos, sin, mc.num_heads, mc.num_kv_heads)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        with record_function("attention_output"):
            return self.o_proj(out.transpose(1, 2).reshape(B, S, mc.q_dim))


class _SwiGLUFFN(torch.autograd.Function):
    """down_proj(swiglu(x @ w_gate_up.T)), keeping x, gate_up and the activation for the
    backward, or with ``recompute`` x only (activation checkpointing, cut where it pays: the
    backward runs the gate/up GEMM again, not the down projection as torch.utils.checkpoint
    would, and its SwiGLU kernel writes the activation again beside d(gate_up)).

    d(gate_up) overwrites gate_up, which the backward no longer needs: no new [tokens, 2*ffn]
    buffer at the backward's peak. (So this graph cannot be run backward twice.)
    """

    @staticmethod
    def forward(ctx, x, w_gu, w_gu_lp, w_down, w_down_lp, recompute: bool) -> torch.Tensor:
        low_precision = w_gu_lp is not None
        w_gu = w_gu_lp if low_precision else w_gu
        w_down = w_down_lp if low_precision else w_down
        x2d = x.reshape(-1, x.shape[-1]).to(w_gu.dtype)
        gu = F.linear(x2d, w_gu)
        act = swiglu_forward(gu)
        out = F.linear(act, w_down)
        if recompute:
            ctx.save_for_backward(x2d, w_gu, w_down)
        else:
            ctx.save_for_backward(x2d, w_gu, w_down, gu, act)
        ctx.low_precision = low_precision
        return out.view(*x.shape[:-1], out.shape[-1])

    @staticmethod
    def backward(ctx, dout: torch.Tensor):
        x2d, w_gu, w_down, *kept = ctx.saved_tensors
        dout2d = dout.reshape(-1, dout.shape[-1]).to(w_down.dtype)
        if kept:
            gu, act = kept
            dgu, _ = swiglu_backward(gu, dout2d @ w_down, in_place=True)
        else:
            with record_function("recompute_gate_up"):
                gu = F.linear(x2d, w_gu)
            dgu, act = swiglu_backward(gu, dout2d @ w_down, recompute_y=True, in_place=True)
        dx = (dgu @ w_gu).view(*dout.shape[:-1], w_gu.shape[1])
        low = ctx.low_precision
        return dx, _weight_grad(dgu, x2d, low), None, _weight_grad(dout2d, act, low), None, None


class UltraSwiGLU(SwiGLU):
    linear = MixedLinear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mc.fault == "naive-triton-swiglu":
            return super().forward(x)
        gate_up, down = self.gate_up_proj, self.down_proj
        with record_function("triton_swiglu_ffn"):
            return _SwiGLUFFN.apply(x, gate_up.weight, gate_up.weight_lp, down.weight, down.weight_lp, self.mc.recompute_ffn)


class _ScatterEmbedding(torch.autograd.Function):
    """F.embedding whose weight gradient is one atomic scatter-add: order-dependent in the last
    bits, hence only used when deterministic algorithms are off."""

    @staticmethod
    def forward(ctx, idx: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(idx)
        ctx.weight_shape = weight.shape
        return F.embedding(idx, weight)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (idx,) = ctx.saved_tensors
        dweight = grad.new_zeros(ctx.weight_shape)
        dweight.index_add_(0, idx.reshape(-1), grad.reshape(-1, ctx.weight_shape[1]))
        return None, dweight


def embed(idx: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if torch.are_deterministic_algorithms_enabled():
        return F.embedding(idx, weight)
    with record_function("scatter_embedding"):
        return _ScatterEmbedding.apply(idx, weight)


class UltraBlock(Block):
    ffn_class = UltraSwiGLU

    def attention_class(self, mc: ModelConfig) -> type[Attention]:
        return SdpaAttention if mc.sdpa else UltraAttention


class TinyLlamaV4(TinyLlamaV3):
    block_class = UltraBlock

    def __init__(self, mc: ModelConfig):
        super().__init__(mc)
        self._linears = tuple(m for m in self.modules() if isinstance(m, MixedLinear))
        self._flat: torch.Tensor | None = None
        self._flat_ptrs: list[int] = []

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        lp_dtype = autocast_dtype(idx.device.type)
        if lp_dtype is None:
            return self._forward(idx, targets, None, None)
        *weights_lp, head_lp = self._low_precision_weights(lp_dtype)
        for m, w in zip(self._linears, weights_lp):
            m.weight_lp = w
        try:
            return self._forward(idx, targets, lp_dtype, head_lp)
        finally:
            for m in self._linears:
                m.weight_lp = None

    def _forward(self, idx, targets, lp_dtype: torch.dtype | None, head_lp: torch.Tensor | None) -> torch.Tensor:
        """The layers, with norms written in ``lp_dtype`` (the GEMMs' input dtype) under autocast."""
        mc = self.config
        S = idx.shape[1]
        cos, sin = self.rope_cos[:S], self.rope_sin[:S]
        residual = embed(idx, self.embed.weight)
        h = self.layers[0].attn_norm(residual, out_dtype=lp_dtype)
        norms_after = [layer.attn_norm for layer in self.layers[1:]] + [self.norm]
        for layer, next_norm in zip(self.layers, norms_after):
            with record_function("add_rmsnorm"):
                h, residual = self._add_norm(layer.attn(h, cos, sin), residual, next_norm=layer.ffn_norm, out_dtype=lp_dtype)
            with record_function("add_rmsnorm"):
                h, residual = self._add_norm(layer.ffn(h), residual, next_norm=next_norm, out_dtype=lp_dtype)
        if head_lp is None:
            logits = F.linear(h, self.embed.weight)
        else:
            logits = _LowPrecisionLinear.apply(h, self.embed.weight, head_lp)
        with record_function("fused_cross_entropy"):
            return kernels.cross_entropy(logits.view(-1, mc.vocab_size), targets.reshape(-1))

    def _add_norm(self, branch, residual, next_norm, out_dtype) -> tuple[torch.Tensor, torch.Tensor]:
        if self.config.fault == "non-contiguous":
            branch = column_major(branch)
        return _call(kernels.add_rmsnorm, self.config, branch, residual, next_norm.weight, self.config.norm_eps, out_dtype)

    def _gemm_weights(self) -> list[torch.Tensor]:
        """Every weight a GEMM reads: the MixedLinears' in module order, then the tied embedding."""
        return [m.weight for m in self._linears] + [self.embed.weight]

    def _low_precision_weights(self, dtype: torch.dtype) -> list[torch.Tensor]:
        """bf16 copies of _gemm_weights(), made by one cast of the flat fp32 buffer they live in.

        The first call (and any after the parameters moved, e.g. ``model.to(device)``) re-homes
        the weights into one fresh buffer by swapping each Parameter's data, so the optimizer's
        references stay valid. The copies carry no autograd history: _LowPrecisionLinear sends
        the gradient to the fp32 weights.
        """
        weights = self._gemm_weights()
        if [w.data_ptr() for w in weights] != self._flat_ptrs:
            with torch.no_grad():
                flat = torch.cat([w.detach().reshape(-1) for w in weights])
                offset = 0
                for w in weights:
                    w.data = flat[offset : offset + w.numel()].view_as(w)
                    offset += w.numel()
            self._flat = flat
            self._flat_ptrs = [w.data_ptr() for w in weights]
        with torch.no_grad(), record_function("cast_weights"):
            flat_lp = self._flat.to(dtype)
        out, offset = [], 0
        for w in weights:
            out.append(flat_lp[offset : offset + w.numel()].view_as(w))
            offset += w.numel()
        return out
