import pytest
import torch

from kernels import naive_swiglu_ffn
from kernels.reference import swiglu_ffn_reference

DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_naive_swiglu_ffn_matches_reference(check, device, dtype):
    x = torch.randn(3, 40, device=device).to(dtype).requires_grad_()
    w_gate = (0.2 * torch.randn(24, 40, device=device)).to(dtype).requires_grad_()
    w_up = (0.2 * torch.randn(24, 40, device=device)).to(dtype).requires_grad_()
    check(naive_swiglu_ffn, swiglu_ffn_reference, [x, w_gate, w_up], dtype=dtype, grad_inputs=[0, 1, 2])


def test_naive_swiglu_ffn_non_contiguous(check, device):
    x = torch.randn(40, 7, device=device, requires_grad=True)
    w_gate = torch.randn(40, 12, device=device, requires_grad=True)  # used as its transpose
    w_up = torch.randn(12, 80, device=device, requires_grad=True)
    check(naive_swiglu_ffn, swiglu_ffn_reference, [x.t(), w_gate.t(), w_up[:, ::2]], dtype=torch.float32, grad_inputs=[0, 1, 2])


def test_naive_swiglu_ffn_rejects_mismatched_weights(device):
    with pytest.raises(ValueError, match="w_gate"):
        naive_swiglu_ffn(torch.randn(3, 8, device=device), torch.randn(4, 8, device=device), torch.randn(4, 9, device=device))
