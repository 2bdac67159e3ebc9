import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels import swiglu
from kernels.reference import swiglu_reference

DTYPES = [torch.float32, torch.bfloat16]


def test_reference_is_silu_gate_times_up():
    gu = torch.randn(5, 2 * 7, dtype=torch.float64)
    torch.testing.assert_close(swiglu_reference(gu), F.silu(gu[:, :7]) * gu[:, 7:])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 37, 400), (4, 128), (2, 1, 2)])
def test_swiglu_matches_reference(check, device, dtype, shape):
    gu = (2 * torch.randn(shape, device=device)).to(dtype).requires_grad_()
    check(swiglu, swiglu_reference, [gu], dtype=dtype, grad_inputs=[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_non_contiguous(check, device, dtype):
    base = torch.randn(3, 40, 512, device=device).to(dtype).requires_grad_()
    check(swiglu, swiglu_reference, [base[:, ::2, 100:500]], dtype=dtype, grad_inputs=[0])
    cols = torch.randn(400, 37, device=device).to(dtype).requires_grad_()
    check(swiglu, swiglu_reference, [cols.t()], dtype=dtype, grad_inputs=[0])


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 9), f=st.integers(1, 150), seed=st.integers(0, 2**31 - 1))
def test_swiglu_any_shape(rows, f, seed):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator().manual_seed(seed)
    gu = (3 * torch.randn(rows, 2 * f, generator=gen)).to(device).requires_grad_()
    y = swiglu(gu)
    torch.testing.assert_close(y, swiglu_reference(gu), atol=1e-5, rtol=1e-5)
    dy = torch.randn(y.shape, generator=gen).to(device)
    g, = torch.autograd.grad(y, gu, dy)
    ref_gu = gu.detach().requires_grad_()
    g_ref, = torch.autograd.grad(swiglu_reference(ref_gu), ref_gu, dy)
    torch.testing.assert_close(g, g_ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_backward_recomputes_y(launch, device, dtype):
    """The backward can hand back the forward's output too (v4 saves gate_up only): the same
    values the forward kernel writes, and the same d(gate_up) as without it."""
    import importlib

    swiglu_mod = importlib.import_module("kernels.swiglu")
    base = (2 * torch.randn(37, 2 * 300 + 6, device=device)).to(dtype)
    gu = base[:, 3:-3]  # strided rows
    dy = torch.randn(37, 300, device=device).to(dtype)
    dgu, y = swiglu_mod.swiglu_backward(gu, dy, recompute_y=True)
    dgu_only, none = swiglu_mod.swiglu_backward(gu, dy)
    assert none is None
    torch.testing.assert_close(y, swiglu_mod.swiglu_forward(gu), rtol=0, atol=0)
    torch.testing.assert_close(dgu, dgu_only, rtol=0, atol=0)
    torch.testing.assert_close(y.double(), swiglu_reference(gu.double()), rtol=2e-2 if dtype == torch.bfloat16 else 1e-5, atol=1e-5)


@pytest.mark.parametrize("recompute_y", [False, True])
def test_swiglu_backward_in_place(launch, device, recompute_y):
    """With in_place, d(gate_up) is written over gate_up itself (v4's FFN): the same values as
    into a new buffer, and the forward's y recomputed from gate_up before it was overwritten.
    A strided gate_up is not overwritten (the kernel writes d(gate_up) contiguous)."""
    import importlib

    swiglu_mod = importlib.import_module("kernels.swiglu")
    gu = 2 * torch.randn(37, 2 * 300, device=device)
    dy = torch.randn(37, 300, device=device)
    want, want_y = swiglu_mod.swiglu_backward(gu.clone(), dy, recompute_y=recompute_y)
    buf = gu.clone()
    dgu, y = swiglu_mod.swiglu_backward(buf, dy, recompute_y=recompute_y, in_place=True)
    assert dgu.data_ptr() == buf.data_ptr()
    torch.testing.assert_close(dgu, want, rtol=0, atol=0)
    if recompute_y:
        torch.testing.assert_close(y, want_y, rtol=0, atol=0)
    wide = torch.cat([gu, gu[:, :6]], dim=1)
    strided = wide[:, : 2 * 300]
    dgu_s, _ = swiglu_mod.swiglu_backward(strided, dy, in_place=True)
    assert dgu_s.data_ptr() != strided.data_ptr()
    torch.testing.assert_close(strided, gu, rtol=0, atol=0)
    torch.testing.assert_close(dgu_s, want, rtol=0, atol=0)
