"""What kind of work a kernel does, from its name alone (no pandas: the CLI's argument parsing and
the exercise checks' names use the categories too).
"""

from __future__ import annotations

import functools
import re

CATEGORIES = ("gemm", "attention", "norm", "elementwise", "reduction", "communication", "memcpy", "triton", "other")

# First match wins. The order encodes the decisions that the regexes alone cannot:
# - communication first: NCCL/RCCL kernels ("ncclKernel_AllReduce_RING_LL_Sum_float",
#   "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", RCCL's "rccl_main_kernel(ncclDevComm*, ...)") name
#   the reduction or copy they do, and so do the host's collectives (gloo's "gloo:all_reduce" ranges,
#   "nccl:all_reduce", PyTorch's "c10d::allreduce_" and "_c10d_functional::all_gather_into_tensor"
#   ops, "record_param_comms"): all of it is time spent talking to the other ranks;
# - copies next: "__amd_rocclr_copyBuffer" or "Memcpy DtoD" are transfers whatever else they say;
# - Triton before the op kinds: inductor names ("triton_poi_fused_mul_0") describe fused ops,
#   and the learner wants to see how much time went to generated code;
# - log-softmax / cross-entropy / NLL are the loss, not attention, although their kernels are
#   softmax kernels ("cunn_SoftMaxForward<..., LogSoftMaxForwardEpilogue>");
# - attention before GEMM: flash-attention kernels are CUTLASS GEMMs internally;
# - GEMM before reduction: cuBLASLt's "splitKreduce_kernel" is part of a GEMM;
# - DDP's reducer ("torch.distributed.ddp.reducer::copy_bucket_to_grad") copies and scales buckets:
#   "reducer" is no reduction.
_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "communication",
        re.compile(r"(?:^|[^a-z])(?:nccl|rccl|hccl)|^gloo:|(?:^|[^a-z])c10d(?:_functional)?::|"
                   r"record_param_comms"),
    ),
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
            r"reduce(?!r)|reduction|(?:^|[^a-z])sum|sum_|cumsum|logsumexp|argmax|argmin|welford|"
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
