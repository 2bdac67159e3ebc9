import pytest
import torch

from kernels import rope, rope_cos_sin
from kernels.reference import rope_reference

DTYPES = [torch.float32, torch.bfloat16]


def _tables(seq, head_dim, device):
    return rope_cos_sin(seq, head_dim, device=device)


def test_rope_cos_sin_formula():
    cos, sin = rope_cos_sin(37, 16, theta=500.0)
    assert cos.shape == sin.shape == (37, 8) and cos.dtype == torch.float32
    inv_freq = 500.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    angles = torch.arange(37, dtype=torch.float64)[:, None] * inv_freq[None, :]
    torch.testing.assert_close(cos.double(), angles.cos(), atol=1e-5, rtol=0)
    torch.testing.assert_close(sin.double(), angles.sin(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 37, 4, 16), (3, 5, 3, 64)])
def test_rope_matches_reference(check, device, dtype, shape):
    x = torch.randn(shape, device=device).to(dtype).requires_grad_()
    cos, sin = _tables(shape[1], shape[3], device)
    check(rope, rope_reference, [x, cos, sin], dtype=dtype, grad_inputs=[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_transposed_view_keeps_layout(check, device, dtype):
    """A [B, H, S, D] tensor seen as [B, S, H, D] is rotated in place of layout, not copied."""
    bhsd = torch.randn(2, 4, 19, 32, device=device).to(dtype).requires_grad_()
    x = bhsd.transpose(1, 2)
    cos, sin = _tables(19, 32, device)
    check(rope, rope_reference, [x, cos, sin], dtype=dtype, grad_inputs=[0])
    assert rope(x, cos, sin).stride() == x.stride()


def test_rope_sliced_fused_qkv_and_longer_tables(check, device):
    qkv = torch.randn(2, 37, 3, 4, 16, device=device, requires_grad=True)
    cos, sin = _tables(64, 16, device)  # tables for a longer max length: first 37 rows used
    check(rope, rope_reference, [qkv[:, :, 1], cos, sin], dtype=torch.float32, grad_inputs=[0])


def test_rope_is_half_split_and_backward_inverts(device):
    x = torch.randn(1, 9, 2, 16, device=device)
    cos, sin = _tables(9, 16, device)
    y = rope(x, cos, sin)
    interleaved = torch.stack(
        [x[..., 0::2] * cos[None, :, None] - x[..., 1::2] * sin[None, :, None],
         x[..., 1::2] * cos[None, :, None] + x[..., 0::2] * sin[None, :, None]], dim=-1
    ).flatten(-2)
    assert (y - interleaved).norm() > 0.1 * y.norm(), "looks like the interleaved (GPT-J) convention"
    torch.testing.assert_close(rope(y, cos, -sin), x, atol=1e-5, rtol=1e-5)


def test_rope_rejects_bad_tables(device):
    x = torch.randn(1, 9, 2, 16, device=device)
    cos, sin = _tables(8, 16, device)
    with pytest.raises(ValueError, match="cos/sin"):
        rope(x, cos, sin)


def test_apply_rope_partial_heads_and_in_place(launch, device):
    """The fused-QKV attention rotates q and k heads and copies v in one launch, and undoes the
    rotation in place on its gradient buffer: both must equal the plain out-of-place rotation."""
    from kernels.rope import apply_rope

    x = torch.randn(2, 9, 7, 32, device=device)[:, :, :6]  # strided heads
    cos, sin = rope_cos_sin(9, 32, device=device)
    out = apply_rope(x, cos, sin, rotate_heads=4)
    torch.testing.assert_close(out[:, :, :4], rope_reference(x[:, :, :4], cos, sin))
    torch.testing.assert_close(out[:, :, 4:], x[:, :, 4:], rtol=0, atol=0)
    y = x.clone()
    apply_rope(y, cos, sin, out=y)
    torch.testing.assert_close(y, rope_reference(x, cos, sin))
    apply_rope(y, cos, sin, out=y, inverse=True)
    torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-5)
