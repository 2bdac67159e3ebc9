"""Launch helpers shared by the kernels.

Block sizes are chosen here in Python (not with ``@triton.autotune``) because autotuning with
several configs does not run in the Triton interpreter, and because the lab wants one
predictable config per shape that a learner can read and change.
"""

from __future__ import annotations

import functools
import os

import torch
from torch import Tensor


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter: small blocks keep tests fast there."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def check_tensors(*tensors: Tensor) -> None:
    """Fail with a clear message instead of an obscure Triton error on unusable inputs."""
    device = tensors[0].device
    for t in tensors:
        if t.device != device:
            raise ValueError(f"all tensors must be on one device, got {t.device} and {device}")
    if device.type == "cpu" and not interpreting():
        raise RuntimeError(
            "Triton kernels got CPU tensors but TRITON_INTERPRET=1 is not set: use a GPU, or set "
            "TRITON_INTERPRET=1 in the environment before importing triton/kernels"
        )


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count(device: torch.device) -> int:
    """Number of SMs (CUs on ROCm); 4 in the interpreter so persistent grids stay tiny."""
    if device.type != "cuda":
        return 4
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


def row_num_warps(block: int) -> int:
    """Warps for a program that holds ``block`` elements of a row (Liger/Triton-tutorial rule)."""
    if block >= 32768:
        return 32
    if block >= 8192:
        return 16
    if block >= 2048:
        return 8
    return 4


def as_rows(t: Tensor) -> Tensor:
    """[..., N] -> [M, N], copying only when the leading dims cannot be merged into one stride.

    Both strides of the result are passed to the kernels, so a transposed 2-D view (last-dim
    stride != 1) runs as is, with the slow uncoalesced loads the lab wants to show.
    """
    return t.reshape(-1, t.shape[-1])
