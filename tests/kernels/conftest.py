"""Fixtures for the kernel tests: where to run, and how to compare with a reference.

Kernels run on a GPU when there is one, else in the Triton interpreter, which must be switched
on (TRITON_INTERPRET=1) before triton is first imported; without either, every test here skips
with the reason instead of failing inside Triton.

In the interpreter, tests that take the ``launch`` fixture run once per launch configuration:
the interpreter's own (few programs, many rows per program), the same with small tiles (many
programs, several tiles per persistent program, ragged last tiles), and the GPU's (one row per
program, GPU block sizes), so a CPU-only CI covers the code path GPUs take too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
INTERPRETING = os.environ.get("TRITON_INTERPRET") == "1"

# Relative-norm error bounds (||out - ref|| / ||ref||) against a float64 reference. fp32 on the
# interpreter lands near 1e-7; bf16 rounding of inputs and outputs lands near 5e-3.
TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def pytest_collection_modifyitems(config, items):
    if HAS_GPU or INTERPRETING:
        return
    skip = pytest.mark.skip(
        reason="kernel tests need a CUDA/ROCm GPU or TRITON_INTERPRET=1 set before triton is imported"
    )
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(skip)


LAUNCHES = ["tiles", "small-tiles", "gpu"] if INTERPRETING and not HAS_GPU else ["gpu"]


@pytest.fixture(params=LAUNCHES)
def launch(request, monkeypatch) -> str:
    from kernels import _utils

    monkeypatch.setattr(_utils, "GPU_CONFIG_IN_INTERPRETER", request.param == "gpu")
    if request.param == "small-tiles":
        monkeypatch.setattr(_utils, "INTERPRETER_TILE", 512)
    return request.param


@pytest.fixture(scope="session")
def device() -> torch.device:
    return torch.device("cuda" if HAS_GPU else "cpu")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.detach().double().cpu(), ref.detach().double().cpu()
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str, tol: float | None = None):
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    bound = TOLERANCE[dtype] if tol is None else tol
    err = rel_err(out, ref)
    assert err <= bound, f"{what}: relative error {err:.3g} > {bound:.3g}"


def check_against_reference(
    fn: Callable,
    ref: Callable,
    inputs: Sequence[torch.Tensor],
    *,
    dtype: torch.dtype,
    grad_inputs: Sequence[int],
    tol: float | None = None,
    grad_tol: float | None = None,
) -> None:
    """Compare fn(*inputs) and its input gradients with ref run in float64 on the same values.

    ``inputs`` may be non-contiguous views; gradients are taken with respect to those views. A
    fresh random upstream gradient is drawn for every floating-point output.
    """
    outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    ref_inputs = [
        t.detach().double().requires_grad_(i in grad_inputs) if t.is_floating_point() else t
        for i, t in enumerate(inputs)
    ]
    ref_outs = ref(*ref_inputs)
    ref_outs = ref_outs if isinstance(ref_outs, tuple) else (ref_outs,)
    for i, (o, r) in enumerate(zip(outs, ref_outs)):
        assert_close(o, r, dtype, f"output {i}", tol)
    upstream = [torch.randn_like(o) for o in outs]
    grads = torch.autograd.grad(outs, [inputs[i] for i in grad_inputs], upstream)
    ref_grads = torch.autograd.grad(
        ref_outs, [ref_inputs[i] for i in grad_inputs], [u.double() for u in upstream]
    )
    for i, g, r in zip(grad_inputs, grads, ref_grads):
        assert g.dtype == inputs[i].dtype, f"grad of input {i}: dtype {g.dtype} != {inputs[i].dtype}"
        assert_close(g, r, dtype, f"grad of input {i}", grad_tol if grad_tol is not None else tol)


@pytest.fixture
def check() -> Callable:
    return check_against_reference


@pytest.fixture
def close() -> Callable:
    return assert_close
