"""v4: v3 plus the fusions that remove whole passes over memory, and a graphed step.

- Residual add + RMSNorm in one kernel (`kernels.add_rmsnorm`): each block boundary reads the
  branch output and the residual once and writes the new residual and its norm, instead of an
  add kernel followed by a norm kernel that re-reads the sum.
- Cross-entropy fused with its softmax and gradient (`kernels.cross_entropy`): the logits are
  read once, the probabilities are never stored.
- Whole-step CUDA/HIP graph capture (toggle `cuda_graph`, on by default on GPUs): one launch
  replays forward, backward and the fused AdamW, removing per-kernel launch overhead, which
  dominates at this model size. Done by the trainer.
- Optional `sdpa`: torch's flash attention instead of ours, to compare the two in one model.
Each claim is measured by `tinylab bench`; see README's Performance section.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.profiler import record_function

import kernels
from models.common import ModelConfig
from models.v2_fused import sdpa_causal
from models.v3_triton import Attention, Block, TinyLlamaV3, _call, column_major


class SdpaAttention(Attention):
    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return sdpa_causal(q, k, v)


class UltraBlock(Block):
    def __init__(self, mc: ModelConfig):
        super().__init__(mc)
        if mc.sdpa:
            self.attn = SdpaAttention(mc)


class TinyLlamaV4(TinyLlamaV3):
    block_class = UltraBlock

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        mc = self.config
        S = idx.shape[1]
        cos, sin = self.rope_cos[:S], self.rope_sin[:S]
        residual = self.embed(idx)
        h = self.layers[0].attn_norm(residual)
        norms_after = [layer.attn_norm for layer in self.layers[1:]] + [self.norm]
        for layer, next_norm in zip(self.layers, norms_after):
            with record_function("add_rmsnorm"):
                h, residual = self._add_norm(layer.attn(h, cos, sin), residual, layer.ffn_norm)
            with record_function("add_rmsnorm"):
                h, residual = self._add_norm(layer.ffn(h), residual, next_norm)
        logits = F.linear(h, self.embed.weight)
        with record_function("fused_cross_entropy"):
            return kernels.cross_entropy(logits.view(-1, mc.vocab_size), targets.reshape(-1))

    def _add_norm(self, branch: torch.Tensor, residual: torch.Tensor, norm) -> tuple[torch.Tensor, torch.Tensor]:
        if self.config.fault == "non-contiguous":
            branch = column_major(branch)
        return _call(kernels.add_rmsnorm, self.config, branch, residual, norm.weight, self.config.norm_eps)

