"""Triton kernels for the tinylab model versions, each with a real backward.

Every op is a ``torch.autograd.Function`` whose forward and backward are Triton kernels (the
naive SwiGLU FFN's backward excepted, see its module), with a plain PyTorch reference in
``kernels.reference`` for tests. All ops take fp32/bf16/fp16 tensors, compute in fp32, return
the input dtype, and accept non-contiguous views. On a machine without a GPU they run in the
Triton interpreter: set ``TRITON_INTERPRET=1`` before importing triton or this package.
"""

from kernels.adamw import adamw_step
from kernels.add_rmsnorm import add_rmsnorm
from kernels.cross_entropy import cross_entropy
from kernels.embedding import embedding
from kernels.flash_attention import flash_attention, flash_attention_qkv
from kernels.naive_swiglu import naive_swiglu_ffn
from kernels.rmsnorm import rmsnorm
from kernels.rope import rope, rope_cos_sin
from kernels.rope_gqa import rope_gqa_qkv
from kernels.swiglu import swiglu

__all__ = [
    "adamw_step",
    "add_rmsnorm",
    "cross_entropy",
    "embedding",
    "flash_attention",
    "flash_attention_qkv",
    "naive_swiglu_ffn",
    "rmsnorm",
    "rope",
    "rope_cos_sin",
    "rope_gqa_qkv",
    "swiglu",
]
