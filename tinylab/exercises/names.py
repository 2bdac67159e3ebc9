"""The names a check may read: summary fields, config settings, kernel categories, recorded outputs."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from tinylab.exercises import checks
from tinylab.core.categories import CATEGORIES
from tinylab.config import TOGGLES, RunConfig
from tinylab.core.events import SUMMARY_FIELDS

# ----------------------------------------------------------------------------- measured names
#: check name -> (summary key, description), from the summary's one declaration.
SUMMARY_NAMES: dict[str, tuple[str, str]] = {f.check: (f.key, f.description) for f in SUMMARY_FIELDS if f.check}
#: The summary's timings (step times and what is made of them): a check that reads one of the
#: baseline's compares the timings of two runs, which only quiet runs can settle.
TIMED_NAMES: frozenset[str] = frozenset(f.check for f in SUMMARY_FIELDS if f.check and f.timed)
START_NAMES: dict[str, tuple[str, str, str]] = {
    "param_elements": ("param_elements", checks.NUM, "number of parameters (elements)"),
    "device": ("device", checks.STR, 'where the run ran: "cpu", "cuda:0", ...'),
    "device_name": ("device_name", checks.STR, "the device's name"),
}
KERNEL_NAMES: dict[str, tuple[str, str]] = {
    "top_kernel_name": (checks.STR, "name of the kernel (CPU: operator) with the most time"),
    "top_kernel_category": (checks.STR, "its category: gemm, attention, norm, elementwise, ..."),
    "top_kernel_pct": (checks.NUM, "its share of all kernel time (%)"),
    "kernel_count": (checks.NUM, "distinct kernels in the table"),
    "kernel_launches": (checks.NUM, "kernel launches (calls) in the profiled steps"),
    "kernel_total_ms": (checks.NUM, "total kernel time in the profiled steps (ms)"),
}
PROFILE_NAMES: dict[str, tuple[str, str]] = {
    "profiled_steps": (checks.NUM, "training steps the kernel table covers (rocprofv3, nsys, rocprof-sys with the "
                                   "perfetto package: the measured steps, from the trainer's roctx/NVTX step ranges)"),
    "counter_passes": (checks.NUM, "runs of the program by a counter-pass profiler (rocprof-compute: one a "
                                   "group of hardware counters)"),
}
#: From a PyTorch/Chrome trace's step timeline (tinylab.analysis.timeline), over a run or a recorded trace.
TIMELINE_NAMES: dict[str, tuple[str, str]] = {
    "gpu_idle_pct": (checks.NUM, "share of a profiled step the GPU runs no kernel or copy (%): the gaps between "
                                 "its kernels, from a PyTorch trace's step timeline"),
}
DEEPSPEED_NAMES: dict[str, tuple[str, str]] = {
    # check name: (flops.json key, description)
    "deepspeed_fwd_flops": ("flops", "FLOPs of one forward pass, counted by the DeepSpeed FLOPS profiler"),
    "deepspeed_fwd_ms": ("fwd_latency_s", "that forward pass's time under the FLOPS profiler (ms)"),
}
RANK_NAMES: dict[str, tuple[str, str]] = {
    "ranks_in_sync": (checks.BOOL, "every rank of a run of several ended with the same weights"),
    "slowest_rank_fwd_ms": (checks.NUM, "median forward (ms) of the slowest rank (the summary's slowest_rank)"),
    "fastest_rank_fwd_ms": (checks.NUM, "median forward (ms) of the rank with the shortest one"),
    "slowest_rank_bwd_ms": (checks.NUM, "median backward (ms) of the slowest rank"),
    "fastest_rank_bwd_ms": (checks.NUM, "median backward (ms) of the rank with the shortest forward"),
    "rank_step_spread": (checks.NUM, "the ranks' longest median step over their shortest (1: all alike)"),
}
_CATEGORY_SUFFIXES = {"_ms": "total time (ms)", "_pct": "share of kernel time (%)", "_calls": "launches"}
_CONFIG_SKIPPED = ("device", "profilers", "profile_kernels")  # `device` is the start event's; lists are not values


def _config_types() -> dict[str, str]:
    defaults = RunConfig()
    types = {}
    for f in dataclasses.fields(RunConfig):
        if f.name in _CONFIG_SKIPPED:
            continue
        value = getattr(defaults, f.name)
        if f.name in TOGGLES or isinstance(value, bool):
            types[f.name] = checks.BOOL
        elif isinstance(value, (int, float)):
            types[f.name] = checks.NUM
        else:  # str, and `fault` (None = no fault, measured as "")
            types[f.name] = checks.STR
    return types


def category_names() -> dict[str, str]:
    """<category>_ms/_pct/_calls for every kernel category -> description."""
    return {cat + suffix: f"{cat} kernels: {desc}" for cat in CATEGORIES for suffix, desc in _CATEGORY_SUFFIXES.items()}


@lru_cache(maxsize=1)
def names() -> dict[str, tuple[str, str]]:
    """Every name a check may read: name -> (type, description)."""
    out: dict[str, tuple[str, str]] = {}
    out.update({name: (checks.NUM, desc) for name, (_, desc) in SUMMARY_NAMES.items()})
    out.update({name: (kind, desc) for name, (_, kind, desc) in START_NAMES.items()})
    out.update({name: (kind, f"config: {name}") for name, kind in _config_types().items()})
    out.update(KERNEL_NAMES)
    out.update(PROFILE_NAMES)
    out.update(TIMELINE_NAMES)
    out.update({name: (checks.NUM, desc) for name, (_, desc) in DEEPSPEED_NAMES.items()})
    out.update(RANK_NAMES)
    out.update({name: (checks.NUM, desc) for name, desc in category_names().items()})
    return out


def name_types(recorded: bool = False) -> dict[str, str]:
    """Names a check may read: every one over a run; over a recorded output its kernel table's and,
    for a trace, its timeline's."""
    kernel_names = set(KERNEL_NAMES) | set(category_names()) | set(TIMELINE_NAMES)
    return {name: kind for name, (kind, _) in names().items() if not recorded or name in kernel_names}
