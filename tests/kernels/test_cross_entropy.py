import math

import pytest
import torch

from kernels import cross_entropy
from kernels.reference import cross_entropy_reference

DTYPES = [torch.float32, torch.bfloat16]


def _targets(n, v, device, ignore_index=-100):
    t = torch.randint(0, v, (n,), device=device)
    t[1::4] = ignore_index
    return t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,v", [(13, 1000), (9, 37), (4, 1)])
def test_cross_entropy_matches_reference(check, device, dtype, n, v):
    logits = (3 * torch.randn(n, v, device=device)).to(dtype).requires_grad_()
    targets = _targets(n, v, device)
    loss = cross_entropy(logits, targets)
    assert loss.dtype == torch.float32 and loss.dim() == 0
    check(cross_entropy, cross_entropy_reference, [logits, targets], dtype=dtype, grad_inputs=[0])


def test_cross_entropy_custom_ignore_index_and_strided_logits(check, device):
    base = torch.randn(1000, 11, device=device, requires_grad=True)
    targets = _targets(11, 1000, device, ignore_index=7)
    targets[targets == 7] = 8
    targets[::3] = 7
    check(
        lambda x, t: cross_entropy(x, t, ignore_index=7),
        lambda x, t: cross_entropy_reference(x, t, ignore_index=7),
        [base.t(), targets], dtype=torch.float32, grad_inputs=[0],
    )


def test_cross_entropy_mean_over_valid_rows_only(device):
    logits = torch.randn(6, 50, device=device)
    targets = torch.tensor([3, -100, 5, -100, -100, 9], device=device)
    expected = torch.nn.functional.cross_entropy(logits[[0, 2, 5]], targets[[0, 2, 5]])
    torch.testing.assert_close(cross_entropy(logits, targets), expected)


def test_cross_entropy_all_ignored_is_nan_with_zero_grad(device):
    logits = torch.randn(3, 20, device=device, requires_grad=True)
    loss = cross_entropy(logits, torch.full((3,), -100, device=device))
    assert math.isnan(loss.item())
    g, = torch.autograd.grad(loss, logits)
    assert torch.equal(g, torch.zeros_like(g))


def test_cross_entropy_without_grad(device):
    logits = torch.randn(8, 300, device=device)
    targets = torch.randint(0, 300, (8,), device=device)
    torch.testing.assert_close(cross_entropy(logits, targets), cross_entropy_reference(logits, targets))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cross_entropy_in_place(launch, device, dtype):
    """in_place: the same loss and logits gradient (here scaled by an upstream of 3), and the
    logits buffer now holds the rows' gradients (before the mean's and the upstream's scale);
    strided logits are left alone."""
    logits = (3 * torch.randn(37, 300, device=device)).to(dtype)
    targets = torch.randint(0, 300, (37,), device=device)
    targets[5] = -100
    ref_in = logits.clone().requires_grad_()
    ref = cross_entropy(ref_in, targets)
    ref_grad, = torch.autograd.grad(3 * ref, ref_in)
    leaf = logits.clone().requires_grad_()
    buf = leaf * 1
    loss = cross_entropy(buf, targets, in_place=True)
    grad, = torch.autograd.grad(3 * loss, leaf)
    torch.testing.assert_close(loss, ref, rtol=0, atol=0)
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=0)
    n_valid = int((targets != -100).sum())  # the buffer holds each row's gradient; the mean's 1/n comes later
    torch.testing.assert_close(3 * buf.detach().float() / n_valid, ref_grad.float(), rtol=1e-2 if dtype == torch.bfloat16 else 1e-6, atol=1e-6)
    wide = logits.repeat(1, 2)[:, :300]
    kept = wide.clone()
    cross_entropy(wide.requires_grad_(), targets, in_place=True)
    torch.testing.assert_close(wide.detach(), kept, rtol=0, atol=0)
