import importlib

import pytest
import torch
import torch.nn.functional as F

from kernels import rmsnorm
from kernels.reference import rmsnorm_reference

# kernels re-exports the function under the module's name: fetch the module itself.
rmsnorm_mod = importlib.import_module("kernels.rmsnorm")

DTYPES = [torch.float32, torch.bfloat16]


def _weight(n, dtype, device):
    return (1.0 + 0.5 * torch.randn(n, device=device)).to(dtype).requires_grad_()


def test_reference_matches_torch_rms_norm():
    x, w = torch.randn(3, 5, 48, dtype=torch.float64), torch.randn(48, dtype=torch.float64)
    torch.testing.assert_close(rmsnorm_reference(x, w, 1e-5), F.rms_norm(x, (48,), w, 1e-5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 37, 200), (5, 64), (1, 1, 128)])
def test_rmsnorm_matches_reference(check, device, dtype, shape):
    x = torch.randn(shape, device=device).to(dtype).requires_grad_()
    w = _weight(shape[-1], dtype, device)
    check(rmsnorm, rmsnorm_reference, [x, w], dtype=dtype, grad_inputs=[0, 1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_eps_is_used(check, device, dtype):
    x = (1e-2 * torch.randn(4, 200, device=device)).to(dtype).requires_grad_()
    w = _weight(200, dtype, device)
    check(lambda a, b: rmsnorm(a, b, 1e-3), lambda a, b: rmsnorm_reference(a, b, 1e-3), [x, w], dtype=dtype, grad_inputs=[0, 1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_column_major_view(check, device, dtype):
    """A transposed view (last-dim stride != 1) is read through both strides, not copied."""
    base = torch.randn(200, 37, device=device).to(dtype).requires_grad_()
    x = base.t()
    assert x.stride() == (1, 37)
    check(rmsnorm, rmsnorm_reference, [x, _weight(200, dtype, device)], dtype=dtype, grad_inputs=[0, 1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_strided_views(check, device, dtype):
    base = torch.randn(3, 40, 256, device=device).to(dtype).requires_grad_()
    w = _weight(200, dtype, device)
    check(rmsnorm, rmsnorm_reference, [base[:, :37, :200], w], dtype=dtype, grad_inputs=[0, 1])
    check(rmsnorm, rmsnorm_reference, [base[:, ::3, 16:216], w], dtype=dtype, grad_inputs=[0, 1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_wide_rows_loop_over_blocks(check, device, dtype, monkeypatch):
    """Rows wider than MAX_FUSED_N take the two-pass path (forward) and the accumulating dweight."""
    monkeypatch.setattr(rmsnorm_mod, "MAX_FUSED_N", 64)
    x = torch.randn(37, 200, device=device).to(dtype).requires_grad_()
    check(rmsnorm, rmsnorm_reference, [x.t().contiguous().t(), _weight(200, dtype, device)], dtype=dtype, grad_inputs=[0, 1])


def test_rmsnorm_rejects_wrong_weight(device):
    with pytest.raises(ValueError, match="weight"):
        rmsnorm(torch.randn(4, 8, device=device), torch.randn(9, device=device))


def test_rmsnorm_out_dtype_bf16_from_fp32(check, device):
    """Under autocast v4 asks for the norm in bf16 (it feeds a bf16 GEMM); the gradient then
    arrives in bf16 while x stays fp32."""
    x = torch.randn(3, 37, 200, device=device, requires_grad=True)
    w = _weight(200, torch.float32, device)
    y = rmsnorm(x, w, out_dtype=torch.bfloat16)
    assert y.dtype == torch.bfloat16
    check(
        lambda a, b: rmsnorm(a, b, out_dtype=torch.bfloat16).float(),
        rmsnorm_reference, [x, w], dtype=torch.bfloat16, grad_inputs=[0, 1],
    )


@pytest.mark.parametrize("shape", [(1, 5), (37, 200), (300, 130)])
def test_column_sum_matches_torch(launch, device, shape):
    """The dweight partials' sum (many programs' rows, ragged row and column blocks)."""
    p = torch.randn(shape, device=device)
    torch.testing.assert_close(rmsnorm_mod.column_sum(p), p.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("deterministic", [False, True])
def test_rmsnorm_weight_gradient_with_and_without_atomics(check, device, deterministic, monkeypatch):
    """Default: partial dweights added with atomics; deterministic mode: partial rows summed by
    the column-sum kernel, bit-identical from run to run."""
    sums, column_sum = [], rmsnorm_mod.column_sum
    monkeypatch.setattr(rmsnorm_mod, "column_sum", lambda p: sums.append(p.shape) or column_sum(p))
    prior = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        x = torch.randn(301, 96, device=device).requires_grad_()
        w = _weight(96, torch.float32, device)
        check(rmsnorm, rmsnorm_reference, [x, w], dtype=torch.float32, grad_inputs=[0, 1])
        upstream = torch.randn(301, 96, device=device)
        runs = [torch.autograd.grad(rmsnorm(x, w), w, upstream)[0] for _ in range(2)]
    finally:
        torch.use_deterministic_algorithms(prior)
    assert bool(sums) == deterministic
    if deterministic:
        assert torch.equal(runs[0], runs[1])
