"""Kernel anatomy: every Triton kernel that v3 and v4 launch, compiled on a CPU for AMD (gfx90a,
gfx942, gfx950) and NVIDIA (sm_80, sm_90) GPUs, with the registers, LDS/shared memory, scratch,
spills and occupancy each would hold there, and every IR stage Triton produced.

Public API (headless; torch and triton are imported only where the work runs):
- `analyze(cfg, targets, kernels=...) -> Anatomy`: plan and compile; `Anatomy.variants` holds
  one `Variant` per kernel and launch site with a `KernelReport` per target.
- `sweep(anatomy, name, param, values) -> list[SweepPoint]`: one parameter varied;
  `sweep_values` picks the values when none are given.
- `stage_text(anatomy, name, target, stage) -> str`: ttir/ttgir/llir/amdgcn/ptx/sass text.
- `known_targets(...)`: which targets the installed Triton cannot compile for, and why.
- `Pool` runs the work in processes (reused across calls), `Cache` keeps it on disk;
  `Progress` is what the ``progress`` callbacks receive.
"""

from tinylab.anatomy.cache import Cache
from tinylab.anatomy.compile import KernelReport
from tinylab.anatomy.core import (
    Anatomy, Progress, SweepPoint, Variant, analyze, known_targets, stage_text, sweep, sweep_values, tunable,
)
from tinylab.anatomy.pool import Pool
from tinylab.anatomy.targets import TARGETS, Occupancy, Target

__all__ = [
    "TARGETS",
    "Anatomy",
    "Cache",
    "KernelReport",
    "Occupancy",
    "Pool",
    "Progress",
    "SweepPoint",
    "Target",
    "Variant",
    "analyze",
    "known_targets",
    "stage_text",
    "sweep",
    "sweep_values",
    "tunable",
]
