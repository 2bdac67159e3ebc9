"""Flash attention (forward and backward) in Triton, with causal masking and GQA.

Forward (FlashAttention-2, as in the Triton fused-attention tutorial): each program owns a block
of queries of one head, streams K/V blocks through an online softmax with fp32 accumulators, and
never materializes the [S, S] score matrix. Scores are scaled by sm_scale * log2(e) so the
softmax uses exp2. With causal masking the key range splits in two: blocks entirely below the
diagonal need no mask, the diagonal blocks do, and blocks above it are skipped altogether. The
logsumexp (base 2) of each row is saved for the backward.

Backward: the dQ kernel runs first; each program owns a block of queries, computes their
delta = rowsum(dO * O) (stored for the next kernel; FlashAttention-2's separate preprocess
launch is folded in here) and accumulates dQ over key blocks. A second kernel owns a block of
keys and accumulates dK and dV over query blocks (and over every query head of its GQA group, so the
group's sum needs no atomics or extra buffer). Probabilities are recomputed from the saved
logsumexp.

All tensors are addressed through their strides, so q/k/v sliced out of a fused QKV projection,
or [B, S, H, D] tensors transposed to [B, H, S, D], run without a copy.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels import _utils
from kernels._utils import (check_tensors, device_arch, enter_region, exit_region, interpreter_config, interpreting,
                            is_amd, launch, work_metadata)
from kernels import work as kernel_work
from kernels.rope import apply_rope

_LOG2E = 1.4426950408889634
SUPPORTED_HEAD_DIMS = (16, 32, 64, 128)


@triton.jit
def _dot(a, b, FP32_DOT: tl.constexpr, acc=None):
    """tl.dot (plus ``acc``, accumulated by the MMA itself), in exact fp32 (IEEE) when FP32_DOT
    is set.

    Set for fp32 inputs when TF32 is not allowed: Triton's default for an fp32 dot is TF32,
    which would quietly make a "strict fp32" run use 10-bit mantissas here only. Also set in
    the interpreter, where Triton 3.x multiplies bf16 operands as their raw uint16 bit patterns;
    fp32 operands give exactly what the GPU computes for bf16 (exact products, fp32 accumulation).
    """
    if FP32_DOT:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        out = tl.dot(a, b, acc)
    return out


@triton.jit
def _unrotate(t, COS, SIN, offs, S, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr):
    """RoPE's inverse (half-split: a rotation's transpose) on a [BLOCK, HEAD_DIM] fp32 gradient
    tile whose rows are positions ``offs``; cos/sin are contiguous [>= S, HEAD_DIM / 2]."""
    HALF: tl.constexpr = HEAD_DIM // 2
    t1, t2 = tl.split(tl.permute(tl.reshape(t, (BLOCK, 2, HALF)), (0, 2, 1)))
    at = offs[:, None] * HALF + tl.arange(0, HALF)[None, :]
    ok = (offs < S)[:, None]
    cos = tl.load(COS + at, mask=ok, other=0.0)
    sin = tl.load(SIN + at, mask=ok, other=0.0)
    r1 = t1 * cos + t2 * sin
    r2 = t2 * cos - t1 * sin
    return tl.reshape(tl.permute(tl.join(r1, r2), (0, 2, 1)), (BLOCK, HEAD_DIM))


def _grid(blocks: int, heads: int) -> tuple[int, int]:
    """Launch grid (heads, blocks): the GPU starts programs in grid order, axis 0 fastest, so
    every head's block b starts before any head's block b + 1. The kernels map b so that the
    longest causal blocks come first (the last query blocks, the first key blocks) and the short
    ones fill the tail. Measured fwd+bwd per layer at the model's shapes (H200, against blocks
    in order within each head): bf16 S=1024 166.7 -> 135.0 us, S=2048 494.6 -> 438.0, exact
    fp32 S=128 144.6 -> 128.4; bf16 S=128 19.3 -> 20.1 (two blocks a head: nothing to balance).
    """
    return heads, blocks


@triton.jit
def _query_block(BLOCK_M: tl.constexpr):
    """(first query row, batch*head) of this program: last query blocks (most keys) first."""
    return (tl.num_programs(1) - 1 - tl.program_id(1)) * BLOCK_M, tl.program_id(0)


@triton.jit
def _fwd_inner(
    acc, l_i, m_i, q,
    K_head, V_head, stride_kn, stride_kd, stride_vn, stride_vd,
    offs_m, offs_d, lo, hi, S, qk_scale,
    CAUSAL_MASK: tl.constexpr,
    BOUND_MASK: tl.constexpr,
    BLOCK_N: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_ptrs = K_head + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
        v_ptrs = V_head + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
        if BOUND_MASK:
            k = tl.load(k_ptrs, mask=(offs_n < S)[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs)
        qk = _dot(q, tl.trans(k), FP32_DOT)
        if CAUSAL_MASK:
            qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
        if BOUND_MASK:
            qk = tl.where((offs_n < S)[None, :], qk, float("-inf"))
        # Every row has seen an unmasked key before any fully masked block reaches it (key 0
        # for the first block, the diagonal's first key otherwise), so m_new is finite. The
        # scale is applied to the row maxima and inside exp2's argument (one FMA an element),
        # not in a pass of its own over the tile.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if BOUND_MASK:
            v = tl.load(v_ptrs, mask=(offs_n < S)[:, None], other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = _dot(p.to(v.dtype), v, FP32_DOT, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


def _shapes(args, kv_heads: int) -> tuple:
    """(batch, heads, kv heads, seq, head dim, element bytes, causal) of an attention launch."""
    return (args["Q"].shape[0], args["H"], kv_heads, args["S"], args["HEAD_DIM"], args["Q"].element_size(),
            bool(args["CAUSAL"]))


def _fwd_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.attention_fwd(*_shapes(args, args["H"] // args["GROUP"])))


def _dq_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.attention_bwd_dq(*_shapes(args, args["H"] // args["GROUP"])))


def _dkdv_work(grid, kernel, args) -> dict[str, float]:
    return work_metadata(kernel_work.attention_bwd_dkdv(*_shapes(args, args["KVH"])))


@triton.jit(launch_metadata=_fwd_work)
def _attn_fwd_kernel(
    Q, K, V, O, LSE,
    sqb, sqh, sqm, sqd,
    skb, skh, skn, skd,
    svb, svh, svn, svd,
    sob, soh, som, sod,
    H, GROUP, S, qk_scale,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    # Regions (enter_region/exit_region) are what proton's instrumentation mode times inside
    # the kernel: the v3-flash-attention lesson's view of where a program's cycles go.
    enter_region("load_q")
    start_m, off_bh = _query_block(BLOCK_M)
    b = (off_bh // H).to(tl.int64)
    h = off_bh % H
    kvh = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < S
    q = tl.load(
        Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
        mask=row_ok[:, None], other=0.0,
    )
    exit_region("load_q")
    K_head = K + b * skb + kvh * skh
    V_head = V + b * svb + kvh * svh
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        # Keys below this query block: no mask. BLOCK_M % BLOCK_N == 0 keeps them whole blocks.
        enter_region("below_diagonal")
        acc, l_i, m_i = _fwd_inner(
            acc, l_i, m_i, q, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, 0, start_m, S, qk_scale,
            CAUSAL_MASK=False, BOUND_MASK=False, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
        exit_region("below_diagonal")
        # The diagonal blocks; keys above the diagonal are never visited.
        enter_region("diagonal")
        acc, l_i, m_i = _fwd_inner(
            acc, l_i, m_i, q, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, start_m, tl.minimum(start_m + BLOCK_M, S), S, qk_scale,
            CAUSAL_MASK=True, BOUND_MASK=True, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
        exit_region("diagonal")
    else:
        full = (S // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _fwd_inner(
            acc, l_i, m_i, q, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, 0, full, S, qk_scale,
            CAUSAL_MASK=False, BOUND_MASK=False, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
        acc, l_i, m_i = _fwd_inner(
            acc, l_i, m_i, q, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, full, S, S, qk_scale,
            CAUSAL_MASK=False, BOUND_MASK=True, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
    enter_region("store")
    tl.store(LSE + off_bh.to(tl.int64) * S + offs_m, m_i + tl.log2(l_i), mask=row_ok)
    o = acc / l_i[:, None]
    tl.store(
        O + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod,
        o.to(O.dtype.element_ty), mask=row_ok[:, None],
    )
    exit_region("store")


@triton.jit
def _bwd_dkdv_inner(
    dk, dv, k, v,
    Q_head, DO_head, LSE_head, DELTA_head,
    sqm, sqd, sdom, sdod,
    offs_n, offs_d, lo, hi, S, qk_scale,
    CAUSAL_MASK: tl.constexpr,
    BLOCK_M: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < S
        q = tl.load(Q_head + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=row_ok[:, None], other=0.0)
        do = tl.load(DO_head + offs_m[:, None] * sdom + offs_d[None, :] * sdod, mask=row_ok[:, None], other=0.0)
        # Padding rows get lse = +inf, hence p = 0: they add nothing to dK or dV.
        lse = tl.load(LSE_head + offs_m, mask=row_ok, other=float("inf"))
        delta = tl.load(DELTA_head + offs_m, mask=row_ok, other=0.0)
        p_t = tl.exp2(_dot(k, tl.trans(q), FP32_DOT) * qk_scale - lse[None, :])
        if CAUSAL_MASK:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = _dot(p_t.to(do.dtype), do, FP32_DOT, dv)
        dp_t = _dot(v, tl.trans(do), FP32_DOT)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = _dot(ds_t.to(q.dtype), q, FP32_DOT, dk)
    return dk, dv


@triton.jit(launch_metadata=_dkdv_work)
def _attn_bwd_dkdv_kernel(
    Q, K, V, DO, DK, DV, LSE, DELTA, COS, SIN,
    sqb, sqh, sqm, sqd,
    skb, skh, skn, skd,
    svb, svh, svn, svd,
    sdob, sdoh, sdom, sdod,
    sdkb, sdkh, sdkn, sdkd,
    sdvb, sdvh, sdvn, sdvd,
    H, KVH, GROUP, S, qk_scale, sm_scale,
    CAUSAL: tl.constexpr,
    UNROPE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    enter_region("body")
    start_n = tl.program_id(1) * BLOCK_N  # first key blocks (most queries) first: see _grid
    off_bkv = tl.program_id(0)
    b = (off_bkv // KVH).to(tl.int64)
    kvh = off_bkv % KVH
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    col_ok = (offs_n < S)[:, None]
    k = tl.load(K + b * skb + kvh * skh + offs_n[:, None] * skn + offs_d[None, :] * skd, mask=col_ok, other=0.0)
    v = tl.load(V + b * svb + kvh * svh + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=col_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for g in range(GROUP):
        h = kvh * GROUP + g
        Q_head = Q + b * sqb + h * sqh
        DO_head = DO + b * sdob + h * sdoh
        LSE_head = LSE + (b * H + h) * S
        DELTA_head = DELTA + (b * H + h) * S
        if CAUSAL:
            # Query blocks on the diagonal need the mask; BLOCK_N % BLOCK_M == 0 keeps the
            # later ones whole blocks, which see every key of this block.
            dk, dv = _bwd_dkdv_inner(
                dk, dv, k, v, Q_head, DO_head, LSE_head, DELTA_head, sqm, sqd, sdom, sdod,
                offs_n, offs_d, start_n, tl.minimum(start_n + BLOCK_N, S), S, qk_scale,
                CAUSAL_MASK=True, BLOCK_M=BLOCK_M, FP32_DOT=FP32_DOT,
            )
            dk, dv = _bwd_dkdv_inner(
                dk, dv, k, v, Q_head, DO_head, LSE_head, DELTA_head, sqm, sqd, sdom, sdod,
                offs_n, offs_d, start_n + BLOCK_N, S, S, qk_scale,
                CAUSAL_MASK=False, BLOCK_M=BLOCK_M, FP32_DOT=FP32_DOT,
            )
        else:
            dk, dv = _bwd_dkdv_inner(
                dk, dv, k, v, Q_head, DO_head, LSE_head, DELTA_head, sqm, sqd, sdom, sdod,
                offs_n, offs_d, 0, S, S, qk_scale,
                CAUSAL_MASK=False, BLOCK_M=BLOCK_M, FP32_DOT=FP32_DOT,
            )
    dk *= sm_scale
    if UNROPE:
        dk = _unrotate(dk, COS, SIN, offs_n, S, BLOCK_N, HEAD_DIM)
    tl.store(
        DK + b * sdkb + kvh * sdkh + offs_n[:, None] * sdkn + offs_d[None, :] * sdkd,
        dk.to(DK.dtype.element_ty), mask=col_ok,
    )
    tl.store(
        DV + b * sdvb + kvh * sdvh + offs_n[:, None] * sdvn + offs_d[None, :] * sdvd,
        dv.to(DV.dtype.element_ty), mask=col_ok,
    )
    exit_region("body")


@triton.jit
def _bwd_dq_inner(
    dq, q, do, lse, delta,
    K_head, V_head, skn, skd, svn, svd,
    offs_m, offs_d, lo, hi, S, qk_scale,
    CAUSAL_MASK: tl.constexpr,
    BOUND_MASK: tl.constexpr,
    BLOCK_N: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_ptrs = K_head + offs_n[:, None] * skn + offs_d[None, :] * skd
        v_ptrs = V_head + offs_n[:, None] * svn + offs_d[None, :] * svd
        # Padding keys load as zeros: whatever p they get, ds @ k adds zero to dQ.
        if BOUND_MASK:
            k = tl.load(k_ptrs, mask=(offs_n < S)[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=(offs_n < S)[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        p = tl.exp2(_dot(q, tl.trans(k), FP32_DOT) * qk_scale - lse[:, None])
        if CAUSAL_MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = _dot(do, tl.trans(v), FP32_DOT)
        ds = p * (dp - delta[:, None])
        dq = _dot(ds.to(k.dtype), k, FP32_DOT, dq)
    return dq


@triton.jit(launch_metadata=_dq_work)
def _attn_bwd_dq_kernel(
    Q, K, V, O, DO, DQ, LSE, DELTA, COS, SIN,
    sqb, sqh, sqm, sqd,
    skb, skh, skn, skd,
    svb, svh, svn, svd,
    sob, soh, som, sod,
    sdob, sdoh, sdom, sdod,
    sdqb, sdqh, sdqm, sdqd,
    H, GROUP, S, qk_scale, sm_scale,
    CAUSAL: tl.constexpr,
    UNROPE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    enter_region("body")
    start_m, off_bh = _query_block(BLOCK_M)
    b = (off_bh // H).to(tl.int64)
    h = off_bh % H
    kvh = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < S
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=row_ok[:, None], other=0.0)
    do = tl.load(DO + b * sdob + h * sdoh + offs_m[:, None] * sdom + offs_d[None, :] * sdod, mask=row_ok[:, None], other=0.0)
    o = tl.load(O + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod, mask=row_ok[:, None], other=0.0)
    lse = tl.load(LSE + off_bh.to(tl.int64) * S + offs_m, mask=row_ok, other=float("inf"))
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
    tl.store(DELTA + off_bh.to(tl.int64) * S + offs_m, delta, mask=row_ok)
    K_head = K + b * skb + kvh * skh
    V_head = V + b * svb + kvh * svh
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        dq = _bwd_dq_inner(
            dq, q, do, lse, delta, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, 0, start_m, S, qk_scale,
            CAUSAL_MASK=False, BOUND_MASK=False, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
        dq = _bwd_dq_inner(
            dq, q, do, lse, delta, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, start_m, tl.minimum(start_m + BLOCK_M, S), S, qk_scale,
            CAUSAL_MASK=True, BOUND_MASK=True, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
    else:
        full = (S // BLOCK_N) * BLOCK_N
        dq = _bwd_dq_inner(
            dq, q, do, lse, delta, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, 0, full, S, qk_scale,
            CAUSAL_MASK=False, BOUND_MASK=False, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
        dq = _bwd_dq_inner(
            dq, q, do, lse, delta, K_head, V_head, skn, skd, svn, svd,
            offs_m, offs_d, full, S, S, qk_scale,
            CAUSAL_MASK=False, BOUND_MASK=True, BLOCK_N=BLOCK_N, FP32_DOT=FP32_DOT,
        )
    dq *= sm_scale
    if UNROPE:
        dq = _unrotate(dq, COS, SIN, offs_m, S, BLOCK_M, HEAD_DIM)
    tl.store(
        DQ + b * sdqb + h * sdqh + offs_m[:, None] * sdqm + offs_d[None, :] * sdqd,
        dq.to(DQ.dtype.element_ty), mask=row_ok[:, None],
    )
    exit_region("body")


def _interpreter_config(seq_len: int) -> dict:
    # The interpreter pays for every op a program runs, whatever the block size: one block over
    # the whole sequence (up to 64, and a score tile within the interpreter's tile budget)
    # means fewer programs and fewer loop steps.
    block = min(triton.next_power_of_2(seq_len), 64)
    while block > 16 and block * block > _utils.INTERPRETER_TILE:
        block //= 2
    return dict(BLOCK_M=block, BLOCK_N=block, num_warps=4, num_stages=1)


# GPU configs from a sweep on an H200 (bf16, B*H=64 or 32, S=2048, causal; see bench_kernels):
# 64x64 forward blocks beat the tutorial's 128x64 by 10-40%, and a 32x64 dK/dV block beat 32x128.
# At the model's shapes (tests/gpu/sweep_configs.py; B8, H8/KVH4, D64, RoPE fused in): dK/dV
# blocks of 32x32 at S=128 (19.3 vs 20.6 us forward+backward with 32x64: twice the programs
# when there are only 2 key blocks a head) and 64x64 at S=1024 (166.6 vs 171.3 us). Exact-fp32
# dots (FMA, not tensor cores) at S=128, D=64: 32x32 blocks for all three kernels took 146.6 us
# against 273.1 with the bf16 blocks (128.1 with the heavy-first grid; torch's SDPA fed by
# kernels.rope_gqa_qkv, v4's fp32 path: 70.3).
def _small_exact(head_dim: int, seq_len: int, exact_fp32: bool) -> bool:
    return exact_fp32 and head_dim <= 64 and seq_len <= 256


# AMD CDNA (gfx90a, gfx942, gfx950: wave64, 512 VGPRs+AGPRs a lane, 102 addressable SGPRs a
# wave). Compiled for gfx942 at the model's shapes (`tinylab kernels NAME --target gfx942
# --sweep ...`), the NVIDIA configs (2 stages there) spilled SGPRs in the forward and dQ
# kernels (14 and 11 in bf16 at S=128) and held dK/dV to 1 wave per SIMD (256 VGPRs + 21
# AGPRs). Here: one software-pipelining stage (the forward then took 156 VGPRs, 3 waves), and
# 16x16 matrix-core instructions (matrix_instr_nonkdim=16) rather than 32x32, whose operands
# and accumulators take fewer registers at these block sizes: bf16 dK/dV 216 -> 110 VGPRs,
# fp32 dQ 212 -> 144. dQ takes 64x32 blocks (64x64 spilled SGPRs in bf16 and VGPRs in fp32;
# NVIDIA's 128x64 on 8 warps at D=128 spilled 273 VGPRs); dK/dV 32-row blocks in bf16 at
# D <= 64 (64x64 spilled at every size), 32x64 past S=256. fp32 dots (exact or not: AMD's
# are IEEE) and D=128 hold about twice the registers a row: dK/dV 16x32, and with both a 32x32
# forward and a 32x16 dQ on 8 warps. At every shipped config nothing spills and the attention
# kernels run 2 to 4 waves per SIMD (tests/anatomy). These come from compiles, not timings: no
# AMD GPU has run them yet.
def _cdna_configs(head_dim: int, seq_len: int, fp32_dots: bool) -> tuple[dict, dict, dict]:
    """(forward, dK/dV, dQ) configs for AMD CDNA; see above."""
    small = _small_exact(head_dim, seq_len, fp32_dots)
    heavy = fp32_dots and head_dim > 64
    cdna = dict(num_stages=1, matrix_instr_nonkdim=16)
    block = 32 if small or heavy else 64
    fwd = dict(BLOCK_M=block, BLOCK_N=block, num_warps=4, **cdna)
    if heavy:
        dq = dict(BLOCK_M=32, BLOCK_N=16, num_warps=8, **cdna)
    else:
        dq = dict(BLOCK_M=32 if small else 64, BLOCK_N=32, num_warps=4, **cdna)
    if fp32_dots or head_dim > 64:
        dkdv = dict(BLOCK_M=16, BLOCK_N=32, num_warps=4, **cdna)
    else:
        dkdv = dict(BLOCK_M=32, BLOCK_N=64 if seq_len > 256 else 32, num_warps=4, **cdna)
    return fwd, dkdv, dq


def _fwd_config(head_dim: int, seq_len: int, exact_fp32: bool = False, arch: str | None = None) -> dict:
    """The forward's launch config for a GPU architecture (kernels._utils.device_arch);
    ``exact_fp32``: the dots run in fp32 (see _fp32_dots)."""
    if interpreter_config():
        return _interpreter_config(seq_len)
    if is_amd(arch):
        return _cdna_configs(head_dim, seq_len, exact_fp32)[0]
    if _small_exact(head_dim, seq_len, exact_fp32):
        return dict(BLOCK_M=32, BLOCK_N=32, num_warps=4, num_stages=2)
    return dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3)


def _bwd_config(head_dim: int, seq_len: int, exact_fp32: bool = False, arch: str | None = None) -> tuple[dict, dict]:
    """(dK/dV config, dQ config) for a GPU architecture. dK/dV keeps a key block resident while
    query blocks stream past it; dQ the other way round. Exact-fp32 dots past S=256 keep the
    S=2048 config: with 64x64 dK/dV blocks v3's fp32 step at S=1024 took 188 ms instead of 73
    (H200)."""
    if interpreter_config():
        return _interpreter_config(seq_len), _interpreter_config(seq_len)
    if is_amd(arch):
        _, dkdv, dq = _cdna_configs(head_dim, seq_len, exact_fp32)
        return dkdv, dq
    if _small_exact(head_dim, seq_len, exact_fp32):
        small = dict(BLOCK_M=32, BLOCK_N=32, num_warps=4, num_stages=2)
        return small, dict(small)
    block_m, block_n = 32, 64
    if not exact_fp32 and seq_len <= 256:
        block_m, block_n = 32, 32
    elif not exact_fp32 and seq_len <= 1024:
        block_m, block_n = 64, 64
    dkdv = dict(BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4, num_stages=3)
    if head_dim <= 64:
        return dkdv, dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3)
    return dkdv, dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)


def _exact_fp32(t: Tensor) -> bool:
    return interpreting() or (t.dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32)


def _fp32_dots(t: Tensor, arch: str | None) -> bool:
    """Whether the attention dots run in fp32 (slow, register-hungry), which the configs size
    their blocks for: exact fp32 (FP32_DOT), and on AMD any fp32 input, whose dots Triton's
    backend computes in IEEE fp32 unless asked for TF32 (HIPOptions.default_dot_input_precision)."""
    return _exact_fp32(t) or (is_amd(arch) and t.dtype == torch.float32)


def _bshd_like(t: Tensor) -> Tensor:
    """An empty [B, H, S, D] tensor laid out as [B, S, H, D] in memory.

    Attention inputs are views of a [B, S, heads*D] projection; outputs and gradients in that
    layout turn back into [B, S, heads*D] without a copy.
    """
    B, H, S, D = t.shape
    return torch.empty((B, S, H, D), dtype=t.dtype, device=t.device).transpose(1, 2)


def _attention_forward(q: Tensor, k: Tensor, v: Tensor, causal: bool, sm_scale: float) -> tuple[Tensor, Tensor]:
    """Launch the forward on [B, H, S, D] / [B, KVH, S, D] views; returns (o, lse)."""
    B, H, S, D = q.shape
    KVH = k.shape[1]
    arch = device_arch(q.device)
    cfg = _fwd_config(D, S, _fp32_dots(q, arch), arch)
    o = _bshd_like(q)
    lse = torch.empty((B * H, S), dtype=torch.float32, device=q.device)
    launch(_attn_fwd_kernel, _grid(triton.cdiv(S, cfg["BLOCK_M"]), B * H),
        q, k, v, o, lse,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        H, H // KVH, S, sm_scale * _LOG2E,
        CAUSAL=causal, HEAD_DIM=D, FP32_DOT=_exact_fp32(q), **cfg,
    )
    return o, lse


def _attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal: bool, sm_scale: float, rope=None) -> None:
    """Launch the backward, writing into the dq, dk, dv views (any strides). With ``rope`` =
    (cos, sin), contiguous fp32 [>= S, D/2], q and k were rotated by RoPE before attention and
    dq, dk are written with its inverse applied (the gradients of the unrotated q and k)."""
    B, H, S, D = q.shape
    KVH = k.shape[1]
    arch = device_arch(q.device)
    dkdv_cfg, dq_cfg = _bwd_config(D, S, _fp32_dots(q, arch), arch)
    delta = torch.empty_like(lse)
    qk_scale = sm_scale * _LOG2E
    cos, sin = rope if rope is not None else (lse, lse)  # any pointer: unread without UNROPE
    # dQ first: it writes delta, which the dK/dV kernel reads.
    launch(_attn_bwd_dq_kernel, _grid(triton.cdiv(S, dq_cfg["BLOCK_M"]), B * H),
        q, k, v, o, do, dq, lse, delta, cos, sin,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(), *do.stride(), *dq.stride(),
        H, H // KVH, S, qk_scale, sm_scale,
        CAUSAL=causal, UNROPE=rope is not None, HEAD_DIM=D, FP32_DOT=_exact_fp32(q), **dq_cfg,
    )
    launch(_attn_bwd_dkdv_kernel, _grid(triton.cdiv(S, dkdv_cfg["BLOCK_N"]), B * KVH),
        q, k, v, do, dk, dv, lse, delta, cos, sin,
        *q.stride(), *k.stride(), *v.stride(), *do.stride(), *dk.stride(), *dv.stride(),
        H, KVH, H // KVH, S, qk_scale, sm_scale,
        CAUSAL=causal, UNROPE=rope is not None, HEAD_DIM=D, FP32_DOT=_exact_fp32(q), **dkdv_cfg,
    )


class _FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, causal: bool, sm_scale: float) -> Tensor:
        o, lse = _attention_forward(q, k, v, causal, sm_scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        ctx.sm_scale = sm_scale
        return o

    @staticmethod
    def backward(ctx, do: Tensor):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _bshd_like(q), _bshd_like(k), _bshd_like(v)
        _attention_backward(q, k, v, o, lse, do, dq, dk, dv, ctx.causal, ctx.sm_scale)
        return dq, dk, dv, None, None


def _split_qkv(heads: Tensor, num_heads: int, num_kv_heads: int) -> tuple[Tensor, Tensor, Tensor]:
    """[B, S, H + 2*KVH, D] -> q [B, H, S, D], k, v [B, KVH, S, D]: views, no copy."""
    return heads.transpose(1, 2).split([num_heads, num_kv_heads, num_kv_heads], dim=1)


class _FlashAttentionQKV(torch.autograd.Function):
    """RoPE + attention straight off the fused QKV projection.

    Forward: one RoPE launch writes the rotated q and k heads, and v unchanged, into one new
    [B, S, H + 2*KVH, D] buffer; attention reads its three views. That buffer is all the
    backward keeps (the projection's output is freed). Backward: the attention kernels write dq,
    dk and dv into views of one d(qkv) buffer, so no concatenation rebuilds it for the GEMM;
    they apply RoPE's inverse to their dq and dk tiles before storing them (once per tile, in
    the epilogue). (Rotating q and k inside the forward's loops instead was measured slower on
    an H200: 30 vs 28 us at S=128 and 328 vs 194 us at S=1024, forward + backward, since every
    k tile is rotated again for each query block it meets.)
    """

    @staticmethod
    def forward(
        ctx, qkv: Tensor, cos: Tensor, sin: Tensor, num_heads: int, num_kv_heads: int, sm_scale: float, in_place: bool
    ) -> Tensor:
        B, S, _ = qkv.shape
        heads = qkv.view(B, S, num_heads + 2 * num_kv_heads, -1)
        if in_place:  # rotate q and k where they are; v is neither read nor written
            rotated = heads
            qk = heads[:, :, : num_heads + num_kv_heads]
            apply_rope(qk, cos, sin, out=qk)
        else:
            rotated = torch.empty(heads.shape, dtype=qkv.dtype, device=qkv.device)
            apply_rope(heads, cos, sin, out=rotated, rotate_heads=num_heads + num_kv_heads)
        q, k, v = _split_qkv(rotated, num_heads, num_kv_heads)
        o, lse = _attention_forward(q, k, v, True, sm_scale)
        ctx.save_for_backward(rotated, o, lse, cos, sin)
        ctx.heads = (num_heads, num_kv_heads)
        ctx.sm_scale = sm_scale
        B, H, S, D = o.shape
        return o.transpose(1, 2).reshape(B, S, H * D)

    @staticmethod
    def backward(ctx, do: Tensor):
        rotated, o, lse, cos, sin = ctx.saved_tensors
        num_heads, num_kv_heads = ctx.heads
        B, H, S, D = o.shape
        dqkv = torch.empty(rotated.shape, dtype=rotated.dtype, device=rotated.device)
        q, k, v = _split_qkv(rotated, num_heads, num_kv_heads)
        dq, dk, dv = _split_qkv(dqkv, num_heads, num_kv_heads)
        do = do.reshape(B, S, H, D).transpose(1, 2)
        _attention_backward(q, k, v, o, lse, do, dq, dk, dv, True, ctx.sm_scale, rope=(cos, sin))
        return dqkv.view(B, S, -1), None, None, None, None, None, None


def _check_head_dim(D: int) -> None:
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"head dim {D} not supported; use one of {SUPPORTED_HEAD_DIMS}")


def flash_attention(
    q: Tensor, k: Tensor, v: Tensor, causal: bool = True, sm_scale: float | None = None
) -> Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v for q [B, H, S, D], k/v [B, KVH, S, D].

    Query head h attends with kv head h // (H // KVH) (GQA); sm_scale defaults to D ** -0.5.
    """
    if q.dim() != 4 or k.shape != v.shape or k.dim() != 4:
        raise ValueError(f"expected q [B, H, S, D], k/v [B, KVH, S, D]; got {q.shape}, {k.shape}, {v.shape}")
    B, H, S, D = q.shape
    if k.shape[0] != B or k.shape[2:] != q.shape[2:] or H % k.shape[1]:
        raise ValueError(f"k/v {tuple(k.shape)} do not fit q {tuple(q.shape)} (H % KVH must be 0)")
    _check_head_dim(D)
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    check_tensors(q, k, v)
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    return _FlashAttention.apply(q, k, v, causal, scale)


def flash_attention_qkv(
    qkv: Tensor, cos: Tensor, sin: Tensor, num_heads: int, num_kv_heads: int, in_place: bool = False
) -> Tensor:
    """Causal attention of a fused projection qkv [B, S, (H + 2*KVH) * D] (q heads, then k,
    then v), with half-split RoPE (cos/sin [>= S, D/2]) applied to q and k; returns
    [B, S, H * D], ready for the output projection. Equals rope + flash_attention + reshape.

    ``in_place``: RoPE rotates q and k inside qkv itself (which then holds the rotated values,
    kept for the backward) instead of writing all of qkv to a new buffer: for a caller that no
    longer needs the unrotated projection (v4), a pass over v and a buffer fewer."""
    if qkv.dim() != 3 or num_heads % num_kv_heads or qkv.shape[-1] % (num_heads + 2 * num_kv_heads):
        raise ValueError(
            f"qkv {tuple(qkv.shape)} is not [B, S, (H + 2*KVH) * D] for H={num_heads}, KVH={num_kv_heads}"
        )
    S, D = qkv.shape[1], qkv.shape[-1] // (num_heads + 2 * num_kv_heads)
    _check_head_dim(D)
    if cos.shape != sin.shape or cos.shape[0] < S or cos.shape[1] != D // 2:
        raise ValueError(f"cos/sin {tuple(cos.shape)} must be [>= {S}, {D // 2}]")
    if qkv.stride(-1) != 1:
        qkv = qkv.contiguous()  # the head split needs unit-stride columns
    check_tensors(qkv, cos, sin)
    cos, sin = cos.float().contiguous(), sin.float().contiguous()
    return _FlashAttentionQKV.apply(qkv, cos, sin, num_heads, num_kv_heads, 1.0 / math.sqrt(D), in_place)
