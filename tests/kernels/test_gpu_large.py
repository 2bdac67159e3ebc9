"""Training-sized shapes on a real GPU: real block sizes, multi-stage pipelines, many programs.

The interpreter runs the same kernel code with tiny blocks; these tests check the GPU configs
(and fp16), which only a GPU can compile and run.
"""

import pytest
import torch

from kernels import (
    add_rmsnorm,
    cross_entropy,
    flash_attention,
    rmsnorm,
    rope,
    rope_cos_sin,
    swiglu,
)
from kernels.reference import (
    add_rmsnorm_reference,
    attention_reference,
    cross_entropy_reference,
    rmsnorm_reference,
    rope_reference,
    swiglu_reference,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA/ROCm GPU")

DTYPES = [torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [4096, 5000, 12288])
def test_rmsnorm_large(check, dtype, n):
    x = torch.randn(2048, n, device="cuda").to(dtype).requires_grad_()
    w = (1 + 0.3 * torch.randn(n, device="cuda")).to(dtype).requires_grad_()
    check(rmsnorm, rmsnorm_reference, [x, w], dtype=dtype, grad_inputs=[0, 1])
    r = torch.randn_like(x).requires_grad_()
    check(add_rmsnorm, add_rmsnorm_reference, [x, r, w], dtype=dtype, grad_inputs=[0, 1, 2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_and_rope_large(check, dtype):
    gu = (2 * torch.randn(4, 1024, 2 * 2816, device="cuda")).to(dtype).requires_grad_()
    check(swiglu, swiglu_reference, [gu], dtype=dtype, grad_inputs=[0])
    x = torch.randn(4, 16, 1024, 64, device="cuda").to(dtype).requires_grad_()
    cos, sin = rope_cos_sin(1024, 64, device="cuda")
    check(rope, rope_reference, [x.transpose(1, 2), cos, sin], dtype=dtype, grad_inputs=[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal,kvh,s", [(True, 4, 1024), (False, 2, 1000), (True, 8, 777)])
def test_flash_attention_large(check, dtype, d, causal, kvh, s):
    q = torch.randn(2, 8, s, d, device="cuda").to(dtype).requires_grad_()
    k, v = (torch.randn(2, kvh, s, d, device="cuda").to(dtype).requires_grad_() for _ in range(2))
    check(
        lambda q, k, v: flash_attention(q, k, v, causal=causal),
        lambda q, k, v: attention_reference(q, k, v, causal=causal),
        [q, k, v], dtype=dtype, grad_inputs=[0, 1, 2],
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_large_vocab(check, dtype):
    logits = (3 * torch.randn(512, 32000, device="cuda")).to(dtype).requires_grad_()
    targets = torch.randint(0, 32000, (512,), device="cuda")
    targets[::7] = -100
    check(cross_entropy, cross_entropy_reference, [logits, targets], dtype=dtype, grad_inputs=[0])
