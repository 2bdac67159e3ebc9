import importlib

import pytest
import torch

from kernels import add_rmsnorm
from kernels.reference import add_rmsnorm_reference

# kernels re-exports the function under the module's name: fetch the module itself.
rmsnorm_mod = importlib.import_module("kernels.rmsnorm")

DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 37, 200), (6, 64)])
def test_add_rmsnorm_matches_reference(check, device, dtype, shape):
    x = torch.randn(shape, device=device).to(dtype).requires_grad_()
    r = torch.randn(shape, device=device).to(dtype).requires_grad_()
    w = torch.randn(shape[-1], device=device).to(dtype).requires_grad_()
    check(add_rmsnorm, add_rmsnorm_reference, [x, r, w], dtype=dtype, grad_inputs=[0, 1, 2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_rmsnorm_non_contiguous(check, device, dtype):
    x = torch.randn(200, 37, device=device).to(dtype).requires_grad_()
    r = torch.randn(37, 256, device=device).to(dtype).requires_grad_()
    w = torch.randn(200, device=device).to(dtype).requires_grad_()
    check(add_rmsnorm, add_rmsnorm_reference, [x.t(), r[:, 50:250], w], dtype=dtype, grad_inputs=[0, 1, 2])


def test_add_rmsnorm_wide_rows(check, device, monkeypatch):
    monkeypatch.setattr(rmsnorm_mod, "MAX_FUSED_N", 64)
    x, r = (torch.randn(3, 5, 200, device=device, requires_grad=True) for _ in range(2))
    w = torch.randn(200, device=device, requires_grad=True)
    check(add_rmsnorm, add_rmsnorm_reference, [x, r, w], dtype=torch.float32, grad_inputs=[0, 1, 2])


def test_add_rmsnorm_grads_reach_x_and_residual_equally(device):
    """Only h is used downstream here: the gradient must still reach x and residual (as dh)."""
    x, r = (torch.randn(4, 200, device=device, requires_grad=True) for _ in range(2))
    w = torch.randn(200, device=device, requires_grad=True)
    y, h = add_rmsnorm(x, r, w)
    dh = torch.randn_like(h)
    dy = torch.randn_like(y)
    gx, gr = torch.autograd.grad((y, h), (x, r), (dy, dh), retain_graph=True)
    torch.testing.assert_close(gx, gr)
    gx_h_only, = torch.autograd.grad(h, x, dh, retain_graph=True)
    torch.testing.assert_close(gx_h_only, dh)


def test_add_rmsnorm_bf16_branch_into_fp32_residual(check, device):
    """Under autocast the branch is bf16 and the residual stream fp32: outputs promote to fp32."""
    x = torch.randn(2, 9, 200, device=device).bfloat16().requires_grad_()
    r = torch.randn(2, 9, 200, device=device, requires_grad=True)
    w = torch.randn(200, device=device, requires_grad=True)
    y, h = add_rmsnorm(x, r, w)
    assert y.dtype == h.dtype == torch.float32
    check(add_rmsnorm, add_rmsnorm_reference, [x, r, w], dtype=torch.bfloat16, grad_inputs=[0, 1, 2])


def test_add_rmsnorm_bf16_norm_out_of_fp32_residual(check, device):
    """v4 under autocast: bf16 branch, fp32 residual stream, norm asked for in bf16. The branch
    gets its gradient in bf16 and the residual in fp32, the same values (one kernel, two stores)."""
    x = torch.randn(2, 9, 200, device=device).bfloat16().requires_grad_()
    r = torch.randn(2, 9, 200, device=device, requires_grad=True)
    w = torch.randn(200, device=device, requires_grad=True)
    y, h = add_rmsnorm(x, r, w, out_dtype=torch.bfloat16)
    assert (y.dtype, h.dtype) == (torch.bfloat16, torch.float32)
    gx, gr = torch.autograd.grad((y, h), (x, r), (torch.randn_like(y), torch.randn_like(h)))
    assert (gx.dtype, gr.dtype) == (torch.bfloat16, torch.float32)
    # within one bf16 rounding (the interpreter's fp32 -> bf16 cast truncates)
    torch.testing.assert_close(gx.float(), gr, rtol=2**-7, atol=1e-6)

    def fn(a, b, c):
        y, h = add_rmsnorm(a, b, c, out_dtype=torch.bfloat16)
        return y.float(), h

    check(fn, add_rmsnorm_reference, [x, r, w], dtype=torch.bfloat16, grad_inputs=[0, 1, 2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_residual_starts_the_stream(check, device, dtype):
    """residual=None: (rmsnorm(x), x); x's gradient is the norm's plus the stream's, from one
    backward kernel. A strided x, and a bf16 norm output for an fp32 stream (v4 under autocast)."""
    from kernels.reference import rmsnorm_reference

    base = torch.randn(3, 37, 2 * 200, device=device).to(dtype)
    x = base[..., ::2].requires_grad_()
    w = torch.randn(200, device=device).to(dtype).requires_grad_()
    check(lambda a, b: add_rmsnorm(a, None, b), lambda a, b: (rmsnorm_reference(a, b), a * 1),
          [x, w], dtype=dtype, grad_inputs=[0, 1])
    xf = torch.randn(2, 9, 200, device=device, requires_grad=True)
    y, h = add_rmsnorm(xf, None, w.float(), out_dtype=torch.bfloat16)
    assert y.dtype == torch.bfloat16 and h.dtype == torch.float32
    torch.testing.assert_close(h, xf, rtol=0, atol=0)


@pytest.mark.parametrize("residual", [True, False])
def test_dweight_out_receives_the_weight_gradient(launch, device, residual):
    """The weight gradient added into a given zeroed buffer is returned as that buffer (no copy)
    and equals the one computed without it."""
    x = torch.randn(5, 7, 64, device=device, requires_grad=True)
    r = torch.randn(5, 7, 64, device=device) if residual else None
    w = torch.randn(64, device=device, requires_grad=True)
    dy = torch.randn(5, 7, 64, device=device)
    want, = torch.autograd.grad(add_rmsnorm(x, r, w)[0], w, dy)
    out = torch.zeros(64, device=device)
    got, = torch.autograd.grad(add_rmsnorm(x, r, w, dweight_out=out)[0], w, dy)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert got.data_ptr() == out.data_ptr()
    with pytest.raises(ValueError, match="dweight_out"):
        add_rmsnorm(x, r, w, dweight_out=torch.zeros(64, device=device, dtype=torch.float64))
