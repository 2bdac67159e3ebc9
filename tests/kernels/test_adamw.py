import pytest
import torch

from kernels._utils import interpreting
from kernels.adamw import adamw_step
from kernels.reference import adamw_reference

HYPER = dict(lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def _torch_adamw_run(param, grads, **hyper):
    """The reference: torch.optim.AdamW (its for-loop implementation) over the same gradients."""
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.AdamW([p], foreach=False, **hyper)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    state = opt.state[p]
    return p.detach(), state["exp_avg"], state["exp_avg_sq"]


def _steps(update, param, grads):
    """(weights, exp_avg, exp_avg_sq) after one ``update`` (kernel or reference) per gradient."""
    p, m, v = param.clone(), torch.zeros_like(param), torch.zeros_like(param)
    step = torch.zeros(1, device=param.device)
    for g in grads:
        step += 1
        update(p, g, m, v, step, **HYPER)
    return p, m, v


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_adamw_matches_torch(launch, device, n):
    """Three steps on random weights and gradients (odd lengths: partial last blocks): weights and
    both moments equal torch's AdamW's, step counts and bias corrections included."""
    param = torch.randn(n, device=device)
    grads = [torch.randn(n, device=device) * s for s in (1.0, 0.1, 3.0)]
    want_p, want_m, want_v = _torch_adamw_run(param, grads, **HYPER)
    p, m, v = _steps(adamw_step, param, grads)
    torch.testing.assert_close(p, want_p, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(m, want_m, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(v, want_v, rtol=1e-5, atol=1e-9)
    # the torch-ops version FlatAdamW runs on a CPU: the same three steps, to rounding
    rp, _, _ = _steps(adamw_reference, param, grads)
    torch.testing.assert_close(p, rp, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_adamw_writes_the_low_precision_copy(launch, device, dtype):
    """The copy is the updated weight in dtype, and writing it changes nothing else."""
    param = torch.randn(777, device=device)
    grad = torch.randn(777, device=device)
    p, m, v = param.clone(), torch.zeros_like(param), torch.zeros_like(param)
    lp = torch.full((777,), float("nan"), device=device, dtype=dtype)
    adamw_step(p, grad, m, v, torch.ones(1, device=device), **HYPER, low_precision_out=lp)
    if dtype == torch.float16 and interpreting():  # the interpreter rounds toward zero
        torch.testing.assert_close(lp.float(), p, rtol=torch.finfo(dtype).eps, atol=0)
    else:  # to nearest even, as torch's cast does (bf16 spelled out in the kernel)
        torch.testing.assert_close(lp, p.to(dtype), rtol=0, atol=0)
    q = param.clone()
    adamw_step(q, grad, torch.zeros_like(q), torch.zeros_like(q), torch.ones(1, device=device), **HYPER)
    torch.testing.assert_close(q, p, rtol=0, atol=0)


def test_adamw_names_bad_buffers(device):
    p = torch.randn(8, device=device)
    z = torch.zeros(8, device=device)
    one = torch.ones(1, device=device)
    with pytest.raises(ValueError, match="grad must be a contiguous 1-D fp32"):
        adamw_step(p, torch.randn(16, device=device)[::2], z.clone(), z.clone(), one, lr=1e-3)
    with pytest.raises(ValueError, match="low_precision_out"):
        adamw_step(p, z, z.clone(), z.clone(), one, lr=1e-3, low_precision_out=torch.zeros(8, device=device))
    with pytest.raises(ValueError, match="betas"):
        adamw_step(p, z, z.clone(), z.clone(), one, lr=1e-3, betas=(0.9, 1.0))
