"""FLOPs and minimum bytes of each of the lab's Triton kernels, as functions of a launch's shapes.

The one source of these formulas. The roofline (tinylab.analysis.roofline.op_models) evaluates
them at a run config's shapes; the kernels evaluate them at each launch's own shapes and dtypes
in their `@triton.jit(launch_metadata=...)` functions, which is how Triton's profiler, proton,
gets the FLOP and byte counts it divides by each kernel's time. A proton run's roofline can so be
checked against the model: where a launch's shapes are the config's, the two counts agree.

Bytes are the minimum a launch must move: every input read once, every output written once, at
the element sizes given (`eb`, bytes an element); a kernel that re-reads memory shows as below
its roof. FLOPs count multiplies and adds (2 a multiply-add). Kept free of torch and triton: the
roofline runs where neither is installed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class OpModel:
    """FLOPs and minimum bytes of an op.

    per="call": one launch does this work; per="step": all of a step's launches together (v4's
    AdamW runs one launch per layer, each over that layer's stretch of the flat weights)."""

    flops: float
    bytes: float
    per: str = "call"


def rmsnorm_fwd(rows: int, n: int, eb: int, residual: bool = False) -> OpModel:
    """`_rmsnorm_fwd_kernel`: y = x / rms(x) * w over rows of n; with a residual (add_rmsnorm)
    it reads x and r and writes y and h = x + r."""
    if residual:
        return OpModel(5 * rows * n, 4 * rows * n * eb)
    return OpModel(4 * rows * n, 2 * rows * n * eb)


def rmsnorm_bwd(rows: int, n: int, eb: int, residual: bool = False) -> OpModel:
    """`_rmsnorm_bwd_kernel`: reads x and dy, writes dx; with a residual also reads dh."""
    if residual:
        return OpModel(9 * rows * n, 4 * rows * n * eb)
    return OpModel(8 * rows * n, 3 * rows * n * eb)


def column_sum(rows: int, n: int) -> OpModel:
    """`_column_sum_kernel`: the deterministic weight-gradient sum of an fp32 [rows, n] buffer."""
    return OpModel(rows * n, (rows * n + n) * 4)


def swiglu_fwd(rows: int, f: int, eb: int) -> OpModel:
    """`_swiglu_fwd_kernel`: reads gate and up, writes silu(gate) * up."""
    return OpModel(5 * rows * f, 3 * rows * f * eb)


def swiglu_bwd(rows: int, f: int, eb: int) -> OpModel:
    """`_swiglu_bwd_kernel`: reads gate, up and dy, writes d(gate) and d(up)."""
    return OpModel(9 * rows * f, 5 * rows * f * eb)


def rope(positions: int, heads: int, rotated: int, head_dim: int, eb: int) -> OpModel:
    """`_rope_kernel`: reads and writes `heads` heads a position, of which `rotated` are rotated
    (v3 rotates its q and k heads in one call; v4's copies v beside them unrotated)."""
    return OpModel(3 * positions * rotated * head_dim, 2 * positions * heads * head_dim * eb)


def rope_gqa(positions: int, heads: int, kv_heads: int, head_dim: int, eb: int) -> OpModel:
    """`_rope_gqa_fwd_kernel` / `_rope_gqa_bwd_kernel`: v4's RoPE off the fused q, k, v projection
    (for torch's SDPA): reads the projection, writes the rotated q and k and the v heads."""
    return OpModel(3 * positions * (heads + kv_heads) * head_dim,
                   2 * positions * (heads + 2 * kv_heads) * head_dim * eb)


def _score_pairs(batch: int, heads: int, seq: int, causal: bool) -> float:
    """(query, key) pairs a head computes: the causal half with its diagonal, or all of them."""
    return batch * heads * seq * ((seq + 1) / 2 if causal else seq)


def attention_fwd(batch: int, heads: int, kv_heads: int, seq: int, head_dim: int, eb: int,
                  causal: bool = True) -> OpModel:
    """`_attn_fwd_kernel`: QK^T and PV over the pairs it computes; reads q, k, v, writes o."""
    return OpModel(4 * _score_pairs(batch, heads, seq, causal) * head_dim,
                   batch * seq * (2 * heads + 2 * kv_heads) * head_dim * eb)


def attention_bwd_dkdv(batch: int, heads: int, kv_heads: int, seq: int, head_dim: int, eb: int,
                       causal: bool = True) -> OpModel:
    """`_attn_bwd_dkdv_kernel`: twice the forward's FLOPs; reads q, k, v and dO, writes dK and dV."""
    fwd = attention_fwd(batch, heads, kv_heads, seq, head_dim, eb, causal)
    return OpModel(2 * fwd.flops, batch * seq * (2 * heads + 4 * kv_heads) * head_dim * eb)


def attention_bwd_dq(batch: int, heads: int, kv_heads: int, seq: int, head_dim: int, eb: int,
                     causal: bool = True) -> OpModel:
    """`_attn_bwd_dq_kernel`: 1.5 times the forward's FLOPs; reads q, k, v, dO and O (for delta),
    writes dQ."""
    fwd = attention_fwd(batch, heads, kv_heads, seq, head_dim, eb, causal)
    return OpModel(1.5 * fwd.flops, batch * seq * (4 * heads + 2 * kv_heads) * head_dim * eb)


def cross_entropy(rows: int, vocab: int, eb: int) -> OpModel:
    """`_cross_entropy_kernel`: reads the logits, writes their gradient."""
    return OpModel(5 * rows * vocab, 2 * rows * vocab * eb)


def loss_mean(rows: int, target_bytes: int) -> OpModel:
    """`_mean_kernel`: the mean of the fp32 row losses over the rows whose target counts."""
    return OpModel(2 * rows, rows * (4 + target_bytes) + 8)


def scale(elements: int, eb: int) -> OpModel:
    """`_scale_kernel`: the cross-entropy backward, the stored gradient times the incoming one."""
    return OpModel(elements, 2 * elements * eb)


def adamw(weights: int, low_precision_bytes: int = 0) -> OpModel:
    """`_adamw_kernel`: reads weight, gradient and both moments and writes weight and moments in
    fp32, plus (v4 under autocast) the weights at the compute precision."""
    return OpModel(15 * weights, weights * (7 * 4 + low_precision_bytes))


def embedding_backward(tokens: int, n: int) -> OpModel:
    """`_embedding_backward_kernel`: reads each token's fp32 gradient row and adds it into the
    weight gradient."""
    return OpModel(tokens * n, 2 * tokens * n * 4)


def naive_swiglu_ffn(rows: int, ffn: int, hidden: int, eb: int) -> OpModel:
    """`_naive_swiglu_ffn_kernel` (the naive-triton-swiglu fault): two dot products of length
    `hidden` an output element; at least x, both weights and y move once."""
    return OpModel(4 * rows * ffn * hidden, (rows * hidden + 2 * ffn * hidden + rows * ffn) * eb)
