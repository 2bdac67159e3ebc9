"""The names of the ranges the trainer marks on a GPU, shared by the trainer and the readers.

On a GPU every step is a range (roctx on ROCm, NVTX on CUDA: torch.cuda.nvtx maps to either),
with forward/backward/optimizer ranges inside it, so rocprofv3 --marker-trace, rocprof-sys and
Nsight Systems can scope kernels to steps (tinylab.core.steps). A warm-up step says so in its
name, which lets a reader keep only the measured steps without knowing the run's config.
"""

from __future__ import annotations

import re

PHASES = ("forward", "backward", "optimizer")
#: Nsight Systems names a range "<domain>:<message>" (torch's ranges are in the default domain: ":tinylab step 3")
_STEP = re.compile(r"(?:[^:]*:)?tinylab (warm-up )?step (\d+)")


def step_range(step: int, warmup: bool) -> str:
    return f"tinylab {'warm-up ' if warmup else ''}step {step}"


def parse_step_range(name: str) -> tuple[int, bool] | None:
    """(step, warm-up) of a step range's name (with or without an NVTX domain prefix), or None for
    any other range."""
    m = _STEP.fullmatch(name.strip())
    return (int(m.group(2)), bool(m.group(1))) if m else None
