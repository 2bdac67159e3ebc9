import pytest
import torch
import torch.nn.functional as F

from kernels import flash_attention
from kernels.reference import attention_reference

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
