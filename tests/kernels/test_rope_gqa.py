"""RoPE + GQA head expansion of a fused QKV projection (v4's strict-fp32 SDPA input), forward
and backward against the float64 reference (rope, then repeat_interleave)."""

import pytest
import torch

from kernels import rope_cos_sin
from kernels.reference import rope_gqa_qkv_reference
from kernels.rope_gqa import rope_gqa_qkv

DTYPES = [torch.float32, torch.bfloat16]
# (B, S, H, KVH, D): GQA groups of 2 and 4, plain multi-head (group 1), odd S and odd H.
SHAPES = [(2, 37, 4, 2, 16), (3, 5, 6, 3, 64), (1, 9, 4, 1, 32), (2, 7, 3, 3, 8)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B,S,H,KVH,D", SHAPES)
def test_rope_gqa_matches_reference(check, launch, device, dtype, B, S, H, KVH, D):
    qkv = torch.randn(B, S, (H + 2 * KVH) * D, device=device).to(dtype).requires_grad_()
    cos, sin = rope_cos_sin(S + 3, D, device=device)  # longer tables: rows past S unused
    check(lambda t: rope_gqa_qkv(t, cos, sin, H, KVH), lambda t: rope_gqa_qkv_reference(t, cos, sin, H, KVH),
          [qkv], dtype=dtype, grad_inputs=[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_projection_and_gradients(check, device, dtype):
    """qkv sliced out of a wider buffer (row stride > width), and upstream gradients in another
    layout than the outputs' (SDPA's backward chooses its own)."""
    B, S, H, KVH, D = 2, 11, 4, 2, 16
    wide = torch.randn(B, S, (H + 2 * KVH) * D + 10, device=device).to(dtype)
    qkv = wide[..., 5:-5].requires_grad_()
    cos, sin = rope_cos_sin(S, D, device=device)
    check(lambda t: rope_gqa_qkv(t, cos, sin, H, KVH), lambda t: rope_gqa_qkv_reference(t, cos, sin, H, KVH),
          [qkv], dtype=dtype, grad_inputs=[0])
    outs = rope_gqa_qkv(qkv, cos, sin, H, KVH)
    ups = [torch.randn(B, H, S, D, device=device).to(dtype) for _ in outs]  # contiguous [B, H, S, D]
    (g,) = torch.autograd.grad(outs, [qkv], ups)
    ref_in = qkv.detach().double().requires_grad_()
    (g_ref,) = torch.autograd.grad(rope_gqa_qkv_reference(ref_in, cos, sin, H, KVH), [ref_in], [u.double() for u in ups])
    err = ((g.double() - g_ref).norm() / g_ref.norm()).item()
    assert err < (1e-5 if dtype == torch.float32 else 2e-2), err


def test_bad_shapes_get_one_line_errors(device):
    cos, sin = rope_cos_sin(8, 16, device=device)
    with pytest.raises(ValueError, match="not \\[B, S, \\(H \\+ 2\\*KVH\\) \\* D\\]"):
        rope_gqa_qkv(torch.randn(1, 8, 100, device=device), cos, sin, 4, 2)
    with pytest.raises(ValueError, match="cos/sin"):
        rope_gqa_qkv(torch.randn(1, 9, 8 * 16, device=device), cos, sin, 4, 2)
