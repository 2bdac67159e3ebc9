"""v4: v3 plus the fusions that remove whole passes over memory, and a graphed step.

- Residual add + RMSNorm in one kernel (`kernels.add_rmsnorm`): each block boundary reads the
  branch output and the residual once and writes the new residual and its norm, instead of an
  add kernel followed by a norm kernel that re-reads the sum. The first norm starts the stream
  (residual=None), so the two gradients of the embedding's output meet in its backward kernel
  instead of in an add kernel of autograd's.
- Cross-entropy fused with its softmax and gradient (`kernels.cross_entropy`): the logits are
  read once, the probabilities are never stored.
- Whole-step CUDA/HIP graph capture (toggle `cuda_graph`, on by default on GPUs): one launch
  replays forward, backward and the fused AdamW, removing per-kernel launch overhead, which
  dominates at this model size. Done by the trainer.
- Attention straight off the fused QKV projection (kernels.flash_attention_qkv): one RoPE
  launch rotates q and k inside the projection's output, the one buffer the backward keeps,
  and the backward's two kernels write dq, dk, dv into one d(qkv) tensor,
  undoing RoPE in their epilogues: no concatenation or RoPE kernels, no second copy of q and k.
- The FFN in one autograd Function whose backward writes d(act) and d(gate_up) over act and
  gate_up (no new buffers of the layer's largest activations at the backward's peak).
- Optional `sdpa` (the default in strict fp32, where Triton's dots cannot use tensor cores):
  torch's SDPA instead of our attention, fed by one RoPE + GQA-expansion kernel
  (kernels.rope_gqa_qkv) whose backward writes d(qkv) in one launch.
- Optional `recompute_ffn`: the FFN keeps only its input and the backward runs the gate/up
  GEMM again (not the down projection, as a generic checkpoint would): the two largest
  activations gone for a sixth more GEMM FLOPs.
- Under bf16/fp16 autocast, no per-tensor casts. Autocast casts each weight to bf16 at every
  use and casts each bf16 weight gradient back to fp32: 67 small kernels a step at the default
  size (measured), plus a cast of every norm output and of its gradient (50 more). Here the GEMM
  weights are views of one flat fp32 buffer (`flat_weights`) and the weight-gradient GEMMs
  write fp32 straight into per-layer gradient buffers laid out like it; the norm
  kernels write their output in bf16 (and their input gradient in both dtypes) themselves; and
  the optimizer (models.flat_adamw) updates the flat buffer, a kernel launch per layer that
  also writes the bf16 copy the next forward uses. Same arithmetic as autocast: bf16 operands, fp32
  accumulation, fp32 master weights and optimizer.
- Embedding backward as one Triton scatter-add (kernels.embedding) instead of torch's
  sort-based deterministic kernel chain; with `deterministic` on, torch's own backward is kept.
Each claim is measured by `tinylab bench`; see docs/performance.md.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import record_function

import kernels
from kernels.swiglu import swiglu_backward, swiglu_forward
from models.common import ModelConfig
from models.flat_adamw import FlatAdamW, GradBuffers, GradHome
from models.v3_triton import Attention, Block, SwiGLU, TinyLlamaV3, _call, column_major


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype autocast computes GEMMs in here, or None when autocast is off."""
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return None


_MM_OUT_DTYPE: dict[tuple[str, bool], bool] = {}


def mm_fp32(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b for bf16/fp16 operands, in fp32 from the GEMM's own epilogue where the build
    supports ``out_dtype`` (CUDA), else rounded to a and b's dtype first, as autocast would;
    into ``out`` (fp32) when given."""
    key = (a.device.type, out is None)
    if _MM_OUT_DTYPE.get(key, True):
        try:
            if out is None:
                return torch.mm(a, b, out_dtype=torch.float32)
            return torch.mm(a, b, out_dtype=torch.float32, out=out)
        except (RuntimeError, TypeError):  # NotImplementedError on CPU builds is a RuntimeError
            _MM_OUT_DTYPE[key] = False
    with record_function("mm_fp32_fallback"):
        product = torch.mm(a, b)
        return product.float() if out is None else out.copy_(product)


def _weight_grad(dy: torch.Tensor, x: torch.Tensor, low_precision: bool, weight: torch.Tensor) -> torch.Tensor:
    """dy.T @ x for 2-D dy, x (in fp32 straight from the GEMM for bf16/fp16 operands), the
    gradient of ``weight``.

    Written into the weight's place in its layer's gradient buffer (``grad_home``, see
    models.flat_adamw.GradBuffers) when it has one and holds no gradient yet: autograd adopts a
    returned tensor that nothing else references as ``.grad`` without a copy, so the gradient
    lands where the optimizer's kernel reads it. When the weight already has a gradient
    (accumulation over several backwards), a new tensor, which autograd adds to it.
    """
    home = getattr(weight, "grad_home", None)
    out = home.slot() if home is not None and weight.grad is None else None
    if low_precision:
        return mm_fp32(dy.t(), x, out)
    return dy.t() @ x if out is None else torch.mm(dy.t(), x, out=out)


def _low_precision(t: torch.Tensor) -> bool:
    return t.dtype in (torch.bfloat16, torch.float16)


class _Linear(torch.autograd.Function):
    """y = x @ w_c.T, where w_c is the fp32 weight w itself or this step's bf16/fp16 copy of it.

    The weight gradient goes to w, in fp32, straight from the GEMM (see _weight_grad): no
    low-precision weight gradient and no cast kernel.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, weight_c: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight_c)
        ctx.weight = weight
        return F.linear(x, weight_c)

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, weight_c = ctx.saved_tensors
        dy = dy.to(weight_c.dtype)
        dx = dy @ weight_c
        dy2d, x2d = dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1])
        return dx, _weight_grad(dy2d, x2d, _low_precision(weight_c), ctx.weight), None


class MixedLinear(nn.Linear):
    """nn.Linear that, while the model has set ``weight_lp`` (autocast), computes with it."""

    weight_lp: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight_c = self.weight if self.weight_lp is None else self.weight_lp
        return _Linear.apply(x.to(weight_c.dtype), self.weight, weight_c)


class UltraAttention(Attention):
    """Attention read straight off the fused projection (see kernels.flash_attention_qkv)."""

    linear = MixedLinear

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        mc = self.mc
        with record_function("qkv_projection"):
            qkv = self.qkv_proj(x)
        with record_function("flash_attention_rope"):
            out = _call(kernels.flash_attention_qkv, mc, qkv, cos, sin, mc.num_heads, mc.num_kv_heads, True)
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

    d(act) and d(gate_up) overwrite act and gate_up once the backward no longer needs them: no
    new buffers of the layer's largest activations at the backward's peak (so this graph cannot
    be run backward twice).
    """

    @staticmethod
    def forward(ctx, x, w_gu, w_gu_lp, w_down, w_down_lp, recompute: bool) -> torch.Tensor:
        low_precision = w_gu_lp is not None
        ctx.weights = w_gu, w_down
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
        low, (w_gu_master, w_down_master) = ctx.low_precision, ctx.weights
        if kept:
            gu, act = kept
            # The down projection's weight gradient first: then act is dead and d(act) takes
            # its buffer, as d(gate_up) takes gate_up's.
            dw_down = _weight_grad(dout2d, act, low, w_down_master)
            dgu, _ = swiglu_backward(gu, torch.mm(dout2d, w_down, out=act), in_place=True)
        else:
            with record_function("recompute_gate_up"):
                gu = F.linear(x2d, w_gu)
            dgu, act = swiglu_backward(gu, dout2d @ w_down, recompute_y=True, in_place=True)
            dw_down = _weight_grad(dout2d, act, low, w_down_master)
        dx = (dgu @ w_gu).view(*dout.shape[:-1], w_gu.shape[1])
        return dx, _weight_grad(dgu, x2d, low, w_gu_master), None, dw_down, None, None


class UltraSwiGLU(SwiGLU):
    linear = MixedLinear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mc.fault == "naive-triton-swiglu":
            return super().forward(x)
        gate_up, down = self.gate_up_proj, self.down_proj
        with record_function("triton_swiglu_ffn"):
            return _SwiGLUFFN.apply(x, gate_up.weight, gate_up.weight_lp, down.weight, down.weight_lp, self.mc.recompute_ffn)


def embed(idx: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if torch.are_deterministic_algorithms_enabled():
        return F.embedding(idx, weight)
    with record_function("triton_embedding"):
        return kernels.embedding(idx, weight)


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
        self._grads: GradBuffers | None = None
        self._flat_lp: torch.Tensor | None = None
        self._flat_ptrs: list[int] = []
        self._lp_versions: list[int] | None = None

    optimizer_class = FlatAdamW  # what the trainer builds for this model: see models.flat_adamw

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        self.flat_weights()[2].new_step()
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
        norms = [self.layers[0].attn_norm]
        for layer, next_norm in zip(self.layers, [layer.attn_norm for layer in self.layers[1:]] + [self.norm]):
            norms += [layer.ffn_norm, next_norm]
        dweights = self._norm_weight_grads(norms, idx.device)
        with record_function("rmsnorm"):
            h, residual = self._add_norm(embed(idx, self.embed.weight), None, norms[0], lp_dtype, dweights[0])
        for i, layer in enumerate(self.layers):
            with record_function("add_rmsnorm"):
                h, residual = self._add_norm(layer.attn(h, cos, sin), residual, norms[2 * i + 1], lp_dtype, dweights[2 * i + 1])
            with record_function("add_rmsnorm"):
                h, residual = self._add_norm(layer.ffn(h), residual, norms[2 * i + 2], lp_dtype, dweights[2 * i + 2])
        head = self.embed.weight
        logits = _Linear.apply(h, head, head if head_lp is None else head_lp)
        with record_function("fused_cross_entropy"):
            return kernels.cross_entropy(logits.view(-1, mc.vocab_size), targets.reshape(-1), in_place=True)

    @staticmethod
    def _norm_weight_grads(norms, device) -> list[torch.Tensor | None]:
        """One zeroed fp32 row per norm, where its backward kernel adds its weight gradient and
        which autograd adopts as .grad: one fill kernel a step instead of one per norm."""
        weights = [n.weight for n in norms]
        if not torch.is_grad_enabled() or any(w.dtype != torch.float32 or not w.requires_grad for w in weights):
            return [None] * len(norms)
        return list(torch.zeros(len(weights), weights[0].numel(), device=device).unbind(0))

    def _add_norm(self, branch, residual, norm, out_dtype, dweight) -> tuple[torch.Tensor, torch.Tensor]:
        if self.config.fault == "non-contiguous":
            branch = column_major(branch)
        mc = self.config
        return _call(kernels.add_rmsnorm, mc, branch, residual, norm.weight, mc.norm_eps, out_dtype, dweight)

    def _gemm_weights(self) -> list[torch.Tensor]:
        """Every weight a GEMM reads: the MixedLinears' in module order, then the tied embedding."""
        return [m.weight for m in self._linears] + [self.embed.weight]

    def flat_weights(self) -> tuple[torch.Tensor, list[torch.Tensor], GradBuffers]:
        """(flat weights, the weights, gradient buffers): every GEMM weight (_gemm_weights) is a
        view of one fp32 buffer, and its ``grad_home`` attribute says where in its layer's
        gradient buffer the backward's weight-gradient GEMM writes (see _weight_grad).

        Built on the first call and again whenever the parameters moved (``model.to(...)``)
        by swapping each Parameter's data, so an optimizer's references to the Parameters stay
        valid. Every forward calls it first.
        """
        weights = self._gemm_weights()
        if [w.data_ptr() for w in weights] != self._flat_ptrs:
            layer_of = {id(m.weight): name.split(".")[1] for name, m in self.named_modules() if isinstance(m, MixedLinear)}
            with torch.no_grad():
                flat = torch.cat([w.detach().reshape(-1) for w in weights])
            bounds, keys, offset = [], [], 0
            for w in weights:
                key = layer_of.get(id(w), "embed")
                if not keys or keys[-1] != key:
                    keys.append(key)
                    bounds.append([offset, offset])
                bounds[-1][1] = offset = offset + w.numel()
            grads = GradBuffers([tuple(b) for b in bounds], flat.device)
            offset = 0
            for w in weights:
                w.data = flat[offset : offset + w.numel()].view_as(w)
                chunk = next(i for i, (lo, hi) in enumerate(grads.bounds) if lo <= offset < hi)
                w.grad_home = GradHome(grads, chunk, offset - grads.bounds[chunk][0], w.shape)
                offset += w.numel()
            self._flat, self._grads, self._flat_lp = flat, grads, None
            self._flat_ptrs = [w.data_ptr() for w in weights]
        return self._flat, weights, self._grads

    def low_precision_copy(self) -> torch.Tensor | None:
        """The flat bf16/fp16 copy of the weights that autocast forwards compute with (None
        before the first): an optimizer that writes it along with its update
        (models.flat_adamw) calls low_precision_copy_written() after, and the next forward
        skips the cast."""
        return self._flat_lp

    def low_precision_copy_written(self) -> None:
        self._lp_versions = self._weight_versions()

    def _weight_versions(self) -> list[int]:
        # In-place changes through torch (an optimizer, load_canonical's copy_) bump these.
        return [w._version for w in self._gemm_weights()]

    def _low_precision_weights(self, dtype: torch.dtype) -> list[torch.Tensor]:
        """Views of the flat bf16/fp16 copy of _gemm_weights(): cast by one kernel, unless the
        copy already holds the current weights (written by the optimizer, and no in-place
        change since). The views carry no autograd history: _Linear sends the gradient to the
        fp32 weights."""
        flat, weights, _ = self.flat_weights()
        lp = self._flat_lp
        if lp is None or lp.dtype != dtype or self._lp_versions != self._weight_versions():
            with torch.no_grad(), record_function("cast_weights"):
                self._flat_lp = lp = flat.to(dtype)
            self._lp_versions = self._weight_versions()
        out, offset = [], 0
        for w in weights:
            out.append(lp[offset : offset + w.numel()].view_as(w))
            offset += w.numel()
        return out
