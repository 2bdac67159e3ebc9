"""What kind of work a kernel does, from its name alone (no pandas: the CLI's argument parsing and
the exercise checks' names use the categories too).
"""

from __future__ import annotations

import functools
import re

CATEGORIES = ("gemm", "attention", "norm", "elementwise", "reduction", "memcpy", "communication", "triton", "other")

# First match wins. The order encodes the decisions that the regexes alone cannot:
# - copies first: "__amd_rocclr_copyBuffer" or "Memcpy DtoD" are transfers whatever else they say;
# - Triton before the op kinds: inductor names ("triton_poi_fused_mul_0") describe fused ops,
#   and the learner wants to see how much time went to generated code;
# - log-softmax / cross-entropy / NLL are the loss, not attention, although their kernels are
#   softmax kernels ("cunn_SoftMaxForward<..., LogSoftMaxForwardEpilogue>");
# - attention before GEMM: flash-attention kernels are CUTLASS GEMMs internally;
# - GEMM before reduction: cuBLASLt's "splitKreduce_kernel" is part of a GEMM.
_RULES: list[tuple[str, re.Pattern[str]]] = [
    # collectives first: "ncclDevKernel_AllReduce_Sum_f32_RING_LL" is communication, not a reduction
    ("communication", re.compile(r"^nccl|^rccl|nccl(?:dev)?kernel|^(?:gloo|nccl|rccl):|^c10d::")),
    ("memcpy", re.compile(r"memcpy|memset|copybuffer|fillbuffer|__amd_rocclr_|memory_copy|\b(?:dtoh|htod|dtod)\b")),
    ("triton", re.compile(r"triton")),
    ("reduction", re.compile(r"log_?softmax|cross_?entropy|nll_?loss")),
    ("attention", re.compile(r"flash|fmha|attention|attn|sdpa|scaled_dot_product|softmax")),
    (
        "gemm",
        re.compile(
            r"gemm|gemv|matmul|xmma|cutlass|cublas|hipblas|rocblas|tensile|^cijk_|nvjet|"
            r"splitkreduce|wvsplitk|mfma|wmma|matrix_?mul|aten::(?:mm|addmm|bmm|baddbmm|matmul|linear)\b"
        ),
    ),
    ("norm", re.compile(r"(?:rms|layer|batch|group|instance)_?norm|rowwisemoments")),
    (
        "reduction",
        re.compile(
            r"reduce|reduction|(?:^|[^a-z])sum|sum_|cumsum|logsumexp|argmax|argmin|welford|"
            r"lpnorm|normtwo|norm_two|(?:^|[^a-z])mean|mean_|scan_kernel"
        ),
    ),
    (
        "elementwise",
        re.compile(
            r"elementwise|vectorized|unrolled|pointwise|foreach|multi_tensor|adamw|fill|copy|cast|"
            r"add|mul|div|sub|silu|gelu|relu|swiglu|sigmoid|tanh|exp|pow|sqrt|neg|where|clamp|"
            r"rope|rotary|dropout|masked|embedding|index|gather|scatter|cat|transpose|permute|"
            r"distribution|philox|random"
        ),
    ),
]


@functools.lru_cache(maxsize=65536)
def categorize(name: str) -> str:
    """Kernel category from its name; see _RULES for the order of the decisions."""
    lowered = str(name).lower()
    for category, pattern in _RULES:
        if pattern.search(lowered):
            return category
    return "other"
