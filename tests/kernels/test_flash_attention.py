import pytest
import torch
import torch.nn.functional as F

from kernels import flash_attention, flash_attention_qkv, rope_cos_sin
from kernels.reference import attention_qkv_reference, attention_reference

HAS_GPU = torch.cuda.is_available()
# fp32 tl.dot runs as tf32 on NVIDIA GPUs (about 3e-4); the interpreter computes it exactly.
FP32_TOL = 3e-3 if HAS_GPU else 1e-4


def _tol(dtype):
    return FP32_TOL if dtype == torch.float32 else None


def _qkv(b, h, kvh, s, d, dtype, device):
    def make(heads):
        return torch.randn(b, heads, s, d, device=device).to(dtype).requires_grad_()
    return make(h), make(kvh), make(kvh)


def test_reference_matches_sdpa():
    q, k, v = (torch.randn(2, 4, 9, 16, dtype=torch.float64) for _ in range(3))
    for causal in (True, False):
        torch.testing.assert_close(attention_reference(q, k, v, causal), F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    k2, v2 = k[:, :2], v[:, :2]
    torch.testing.assert_close(
        attention_reference(q, k2, v2), F.scaled_dot_product_attention(q, k2.repeat_interleave(2, 1), v2.repeat_interleave(2, 1), is_causal=True)
    )


@pytest.mark.parametrize(
    "b,h,kvh,s,d,causal,dtype",
    [
        (1, 4, 2, 37, 16, True, torch.float32),
        (2, 2, 2, 37, 32, False, torch.float32),
        (1, 4, 1, 40, 64, True, torch.bfloat16),
        (2, 4, 4, 33, 64, False, torch.bfloat16),
        (1, 2, 1, 37, 32, True, torch.bfloat16),
        (1, 4, 2, 37, 16, False, torch.bfloat16),
        (1, 2, 2, 5, 16, True, torch.float32),
        (1, 2, 2, 64, 16, True, torch.float32),
    ],
)
def test_flash_attention_matches_reference(check, device, b, h, kvh, s, d, causal, dtype):
    q, k, v = _qkv(b, h, kvh, s, d, dtype, device)
    check(
        lambda q, k, v: flash_attention(q, k, v, causal=causal),
        lambda q, k, v: attention_reference(q, k, v, causal=causal),
        [q, k, v], dtype=dtype, grad_inputs=[0, 1, 2], tol=_tol(dtype),
    )


@pytest.mark.skipif(HAS_GPU, reason="D=128 is covered by the GPU test; slow in the interpreter")
def test_flash_attention_head_dim_128(check, device):
    q, k, v = _qkv(1, 2, 1, 17, 128, torch.float32, device)
    check(flash_attention, attention_reference, [q, k, v], dtype=torch.float32, grad_inputs=[0, 1, 2])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_flash_attention_from_fused_qkv(check, device, dtype):
    """q/k/v sliced from one [B, S, 3, H, D] projection and permuted: strided, not contiguous."""
    qkv = torch.randn(2, 37, 3, 2, 32, device=device).to(dtype).requires_grad_()
    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    assert not q.is_contiguous()
    check(flash_attention, attention_reference, [q, k, v], dtype=dtype, grad_inputs=[0, 1, 2], tol=_tol(dtype))


def test_flash_attention_custom_scale(check, device):
    q, k, v = _qkv(1, 2, 1, 21, 32, torch.float32, device)
    check(
        lambda q, k, v: flash_attention(q, k, v, causal=True, sm_scale=0.3),
        lambda q, k, v: attention_reference(q, k, v, causal=True, sm_scale=0.3),
        [q, k, v], dtype=torch.float32, grad_inputs=[0, 1, 2], tol=_tol(torch.float32),
    )


def test_flash_attention_causal_matters(device):
    q, k, v = _qkv(1, 2, 2, 20, 16, torch.float32, device)
    causal, full = flash_attention(q, k, v, causal=True), flash_attention(q, k, v, causal=False)
    assert (causal - full).norm() > 0.1 * full.norm()
    torch.testing.assert_close(causal[:, :, -1], full[:, :, -1], atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("d", [8, 48])
def test_flash_attention_rejects_unsupported_head_dim(device, d):
    q = torch.randn(1, 2, 8, d, device=device)
    with pytest.raises(ValueError, match="head dim"):
        flash_attention(q, q, q)


def test_flash_attention_rejects_bad_gqa(device):
    q, k = torch.randn(1, 3, 8, 16, device=device), torch.randn(1, 2, 8, 16, device=device)
    with pytest.raises(ValueError, match="KVH"):
        flash_attention(q, k, k)


def _rope_tables(s, d, device):
    return rope_cos_sin(s + 3, d, device=device)  # longer than S: rows past S are never read


@pytest.mark.parametrize(
    "b,h,kvh,s,d,dtype",
    [
        (1, 4, 2, 37, 16, torch.float32),
        (2, 2, 1, 33, 64, torch.bfloat16),
        (1, 2, 2, 70, 32, torch.float32),
        (1, 4, 1, 5, 64, torch.bfloat16),
    ],
)
def test_flash_attention_qkv_matches_rope_then_attention(check, launch, device, b, h, kvh, s, d, dtype):
    """RoPE + attention off the fused projection (and d(qkv) in one buffer, RoPE undone in
    the backward kernels' epilogues) against the reference rope + attention, with qkv a strided view (rows wider than
    the projection, as a slice of a bigger buffer)."""
    width = (h + 2 * kvh) * d
    base = (2 * torch.randn(b, s, width + 24, device=device)).to(dtype)
    qkv = base[:, :, 8 : 8 + width].requires_grad_()
    cos, sin = _rope_tables(s, d, device)
    check(
        lambda t: flash_attention_qkv(t, cos, sin, h, kvh),
        lambda t: attention_qkv_reference(t, cos.double(), sin.double(), h, kvh),
        [qkv], dtype=dtype, grad_inputs=[0], tol=_tol(dtype),
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_flash_attention_qkv_in_place(launch, device, dtype):
    """in_place=True (v4): the same output and d(qkv) as the default call, bit for bit; qkv then
    holds q and k rotated by RoPE, and v as it was."""
    from kernels.reference import rope_reference

    b, h, kvh, s, d = 2, 4, 2, 37, 32
    src = (2 * torch.randn(b, s, (h + 2 * kvh) * d, device=device)).to(dtype)
    cos, sin = _rope_tables(s, d, device)
    ref_in = src.clone().requires_grad_()
    ref = flash_attention_qkv(ref_in, cos, sin, h, kvh)
    upstream = torch.randn_like(ref)
    ref_grad, = torch.autograd.grad(ref, ref_in, upstream)
    leaf = src.clone().requires_grad_()
    qkv = leaf * 1  # not a leaf, as a projection's output is not
    out = flash_attention_qkv(qkv, cos, sin, h, kvh, in_place=True)
    grad, = torch.autograd.grad(out, leaf, upstream)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=0)
    heads, src_heads = qkv.detach().view(b, s, h + 2 * kvh, d), src.view(b, s, h + 2 * kvh, d)
    torch.testing.assert_close(heads[:, :, h + kvh :], src_heads[:, :, h + kvh :], rtol=0, atol=0)
    rotated = rope_reference(src_heads[:, :, : h + kvh].double(), cos.double(), sin.double())
    torch.testing.assert_close(heads[:, :, : h + kvh].double(), rotated, rtol=2e-2 if dtype == torch.bfloat16 else 1e-5, atol=1e-5)


def test_flash_attention_qkv_rejects_bad_shapes(device):
    cos, sin = _rope_tables(8, 16, device)
    with pytest.raises(ValueError, match="H=4, KVH=3"):
        flash_attention_qkv(torch.randn(1, 8, 160, device=device), cos, sin, 4, 3)
    with pytest.raises(ValueError, match="cos/sin"):
        flash_attention_qkv(torch.randn(1, 8, 128, device=device), cos[:, :4], sin[:, :4], 4, 2)
