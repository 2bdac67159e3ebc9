"""What every version shares: the config, the canonical weight layout and its initialisation.

The canonical layout is v1's: separate q/k/v/o and gate/up/down projections. Fused versions
keep `qkv_proj = cat(q, k, v)` and `gate_up_proj = cat(gate, up)` along the output dimension;
`to_canonical`/`from_canonical` convert, so weights and gradients compare across versions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ModelConfig:
    """The workshop's TinyLlama defaults: vocab 1000, hidden 512, 8 layers, 8 heads, 4 KV heads."""

    vocab_size: int = 1000
    hidden_dim: int = 512
    num_layers: int = 8
    num_heads: int = 8
    num_kv_heads: int = 4
    ffn_dim: int = 2048
    max_seq_len: int = 128
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    qkv_fusion: bool = False
    sdpa: bool = False
    swiglu_fusion: bool = False
    recompute_ffn: bool = False
    fault: str | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    @classmethod
    def from_run_config(cls, cfg) -> "ModelConfig":
        return cls(
            vocab_size=cfg.vocab_size,
            hidden_dim=cfg.hidden_dim,
            num_layers=cfg.num_layers,
            num_heads=cfg.num_heads,
            num_kv_heads=cfg.num_kv_heads,
            ffn_dim=cfg.ffn_dim,
            max_seq_len=cfg.seq_len,
            norm_eps=cfg.norm_eps,
            rope_theta=cfg.rope_theta,
            qkv_fusion=cfg.toggle("qkv_fusion"),
            sdpa=cfg.toggle("sdpa"),
            swiglu_fusion=cfg.toggle("swiglu_fusion"),
            recompute_ffn=cfg.toggle("recompute_ffn"),
            fault=cfg.fault,
        )


def canonical_shapes(mc: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes in v1's layout, in a fixed order (the init order)."""
    shapes: dict[str, tuple[int, ...]] = {"embed.weight": (mc.vocab_size, mc.hidden_dim)}
    for i in range(mc.num_layers):
        p = f"layers.{i}."
        shapes[p + "attn_norm.weight"] = (mc.hidden_dim,)
        shapes[p + "attn.q_proj.weight"] = (mc.q_dim, mc.hidden_dim)
        shapes[p + "attn.k_proj.weight"] = (mc.kv_dim, mc.hidden_dim)
        shapes[p + "attn.v_proj.weight"] = (mc.kv_dim, mc.hidden_dim)
        shapes[p + "attn.o_proj.weight"] = (mc.hidden_dim, mc.q_dim)
        shapes[p + "ffn_norm.weight"] = (mc.hidden_dim,)
        shapes[p + "ffn.gate_proj.weight"] = (mc.ffn_dim, mc.hidden_dim)
        shapes[p + "ffn.up_proj.weight"] = (mc.ffn_dim, mc.hidden_dim)
        shapes[p + "ffn.down_proj.weight"] = (mc.hidden_dim, mc.ffn_dim)
    shapes["norm.weight"] = (mc.hidden_dim,)
    return shapes


def canonical_init(mc: ModelConfig, seed: int, default_init: bool = False) -> dict[str, torch.Tensor]:
    """Initial weights from one CPU generator, identical for every version and device.

    The lab's init is N(0, 0.02) for the embedding and every projection, 1 for norm weights.
    `default_init` reproduces PyTorch's module defaults instead (N(0, 1) embedding, Kaiming-uniform
    linears): the `missing-init` fault. With the embedding tied to the output projection, the
    N(0, 1) embedding makes the initial logits huge.
    """
    gen = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    for name, shape in canonical_shapes(mc).items():
        if name.endswith("norm.weight"):
            out[name] = torch.ones(shape)
        elif not default_init:
            out[name] = torch.randn(shape, generator=gen) * 0.02
        elif name == "embed.weight":
            out[name] = torch.randn(shape, generator=gen)
        else:
            bound = 1.0 / math.sqrt(shape[1])
            out[name] = (torch.rand(shape, generator=gen) * 2 - 1) * bound
    return out


_FUSED = {
    "attn.qkv_proj.weight": ("attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"),
    "ffn.gate_up_proj.weight": ("ffn.gate_proj.weight", "ffn.up_proj.weight"),
}


def to_canonical(tensors: dict[str, torch.Tensor], mc: ModelConfig) -> dict[str, torch.Tensor]:
    """Split fused tensors (weights or their gradients) into v1's names."""
    out: dict[str, torch.Tensor] = {}
    for name, t in tensors.items():
        for fused, parts in _FUSED.items():
            if name.endswith(fused):
                prefix = name[: -len(fused)]
                sizes = (
                    [mc.q_dim, mc.kv_dim, mc.kv_dim] if "qkv" in fused else [mc.ffn_dim, mc.ffn_dim]
                )
                for part, piece in zip(parts, torch.split(t, sizes, dim=0)):
                    out[prefix + part] = piece
                break
        else:
            out[name] = t
    return out


def from_canonical(canonical: dict[str, torch.Tensor], names: list[str]) -> dict[str, torch.Tensor]:
    """Build the tensors for a model whose parameters are called `names` (fused or not)."""
    out: dict[str, torch.Tensor] = {}
    for name in names:
        for fused, parts in _FUSED.items():
            if name.endswith(fused):
                prefix = name[: -len(fused)]
                out[name] = torch.cat([canonical[prefix + p] for p in parts], dim=0)
                break
        else:
            out[name] = canonical[name]
    return out


class CanonicalMixin:
    """Load/export canonical weights and gradients for any version's nn.Module."""

    config: ModelConfig

    def load_canonical(self, canonical: dict[str, torch.Tensor]) -> None:
        params = dict(self.named_parameters())  # type: ignore[attr-defined]
        values = from_canonical(canonical, list(params))
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(values[name].to(p.device, p.dtype))

    def canonical_state(self) -> dict[str, torch.Tensor]:
        tensors = {n: p.detach() for n, p in self.named_parameters()}  # type: ignore[attr-defined]
        return to_canonical(tensors, self.config)

    def canonical_grads(self) -> dict[str, torch.Tensor]:
        tensors = {
            n: (p.grad if p.grad is not None else torch.zeros_like(p))
            for n, p in self.named_parameters()  # type: ignore[attr-defined]
        }
        return to_canonical(tensors, self.config)


def rope_cache(seq_len: int, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [S, D/2] in fp32 for the half-split ("rotate_half") RoPE convention."""
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv_freq)
    return angles.cos().float(), angles.sin().float()
