"""A deliberately slow SwiGLU FFN: the teaching example of "writing your own GEMM badly".

The reference workshop's stage-4 bug, made real and correct: one Triton program per output
element computes its own two dot products over D with vector loads and a reduction, without
tl.dot. Every program re-reads a row of x and a row of each weight matrix from memory, there is
no tiling and no reuse, and the tensor cores sit idle, so it is orders of magnitude slower than
two cuBLAS/hipBLASLt GEMMs plus a fused activation. That gap is what the lab wants a learner to
find in a profile. The backward is plain PyTorch (fp32 GEMMs), so every parameter still trains
correctly while the forward stays the thing to profile.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import Tensor

from kernels._utils import as_rows, check_tensors, interpreting


@triton.jit
def _naive_swiglu_ffn_kernel(
    X, stride_xm, stride_xk,
    WG, stride_gf, stride_gk,
    WU, stride_uf, stride_uk,
    Y, F, D,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    m = (pid // F).to(tl.int64)
    f = (pid % F).to(tl.int64)
    acc_gate = tl.zeros([BLOCK_K], dtype=tl.float32)
    acc_up = tl.zeros([BLOCK_K], dtype=tl.float32)
    for start in range(0, D, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K)
        mask = k < D
        x = tl.load(X + m * stride_xm + k * stride_xk, mask=mask, other=0.0).to(tl.float32)
        wg = tl.load(WG + f * stride_gf + k * stride_gk, mask=mask, other=0.0).to(tl.float32)
        wu = tl.load(WU + f * stride_uf + k * stride_uk, mask=mask, other=0.0).to(tl.float32)
        acc_gate += x * wg
        acc_up += x * wu
    gate = tl.sum(acc_gate, axis=0)
    up = tl.sum(acc_up, axis=0)
    tl.store(Y + pid, (gate * tl.sigmoid(gate) * up).to(Y.dtype.element_ty))


class _NaiveSwiGLUFFN(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
        check_tensors(x, w_gate, w_up)
        x2d = as_rows(x)
        rows, d = x2d.shape
        f = w_gate.shape[0]
        y = torch.empty((rows, f), dtype=x.dtype, device=x.device)
        if y.numel():
            block_k = min(triton.next_power_of_2(d), 32 if interpreting() else 128)
            _naive_swiglu_ffn_kernel[(rows * f,)](
                x2d, *x2d.stride(),
                w_gate, *w_gate.stride(),
                w_up, *w_up.stride(),
                y, f, d,
                BLOCK_K=block_k,
                num_warps=1,
            )
        ctx.save_for_backward(x2d, w_gate, w_up)
        ctx.x_shape = x.shape
        return y.view(*x.shape[:-1], f)

    @staticmethod
    def backward(ctx, dy: Tensor):
        x2d, w_gate, w_up = ctx.saved_tensors
        x32, wg32, wu32 = x2d.float(), w_gate.float(), w_up.float()
        dy32 = dy.reshape(-1, dy.shape[-1]).float()
        gate, up = x32 @ wg32.T, x32 @ wu32.T
        sig = torch.sigmoid(gate)
        d_up = dy32 * F.silu(gate)
        d_gate = dy32 * up * sig * (1.0 + gate * (1.0 - sig))
        dx = d_gate @ wg32 + d_up @ wu32
        return (
            dx.to(x2d.dtype).view(ctx.x_shape),
            (d_gate.T @ x32).to(w_gate.dtype),
            (d_up.T @ x32).to(w_up.dtype),
        )


def naive_swiglu_ffn(x: Tensor, w_gate: Tensor, w_up: Tensor) -> Tensor:
    """silu(x @ w_gate.T) * (x @ w_up.T) for x [..., D], w_gate/w_up [F, D]; slow on purpose."""
    if w_gate.shape != w_up.shape or w_gate.dim() != 2 or w_gate.shape[1] != x.shape[-1]:
        raise ValueError(
            f"w_gate/w_up must both be [F, {x.shape[-1]}], got "
            f"{tuple(w_gate.shape)} and {tuple(w_up.shape)}"
        )
    return _NaiveSwiGLUFFN.apply(x, w_gate, w_up)
