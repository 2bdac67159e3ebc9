"""Profiler adapters: one per tool, one kernel table for all (see base.py for the interface).

Importing this package is cheap (no torch, pandas or tool import): the CLI, the launcher and
`tinylab doctor` use it to check availability and build wrapper argv.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.errors import UserError
from tinylab.profilers.base import (
    IN_PROCESS,
    WRAPPER,
    Availability,
    CollectResult,
    InProcessAdapter,
    InProcessHook,
    ProfilerAdapter,
    WrapperAdapter,
    profile_dir,
    write_kernel_table,
)
from tinylab.profilers.deepspeed import DeepSpeedAdapter
from tinylab.profilers.ncu import NcuAdapter
from tinylab.profilers.nsys import NsysAdapter
from tinylab.profilers.pytorch import PyTorchAdapter
from tinylab.profilers.rocprof_compute import RocprofComputeAdapter
from tinylab.profilers.rocprof_sys import RocprofSysAdapter
from tinylab.profilers.rocprofv3 import Rocprofv3Adapter

if TYPE_CHECKING:
    from tinylab.config import RunConfig

__all__ = [
    "IN_PROCESS",
    "WRAPPER",
    "Availability",
    "CollectResult",
    "InProcessHook",
    "ProfilerAdapter",
    "all_adapters",
    "get_adapter",
    "inprocess_hooks",
    "profile_dir",
    "wrapper_adapter",
    "write_kernel_table",
]


def _registry() -> dict[str, ProfilerAdapter]:
    """Fresh adapters in tinylab.config.PROFILERS order; env-tunable ones read the env now."""
    adapters: list[ProfilerAdapter] = [
        PyTorchAdapter(),
        DeepSpeedAdapter(),
        Rocprofv3Adapter.from_env(),
        RocprofSysAdapter(),
        RocprofComputeAdapter.from_env(),
        NcuAdapter.from_env(),
        NsysAdapter(),
    ]
    return {a.name: a for a in adapters}


def get_adapter(name: str) -> ProfilerAdapter:
    registry = _registry()
    if name not in registry:
        raise UserError(f"unknown profiler {name!r}: choose from {', '.join(registry)}")
    return registry[name]


def all_adapters() -> list[ProfilerAdapter]:
    return list(_registry().values())


def inprocess_hooks(config: "RunConfig", run_dir: Path, rank: int | None = None) -> list[InProcessHook]:
    """Hooks for the in-process profilers in config.profilers (wrappers need none); with a rank,
    each writes into its rank's own folder.

    Raises UserError when a requested tool cannot load, so a run fails before training
    instead of finishing without the profile that was asked for.
    """
    hooks = []
    for name in config.profilers:
        adapter = get_adapter(name)
        if isinstance(adapter, InProcessAdapter):
            hooks.append(adapter.make_hook(config, profile_dir(run_dir, name, rank)))
    return hooks


def wrapper_adapter(config: "RunConfig") -> WrapperAdapter | None:
    """The external (argv-wrapping) profiler of a run, or None (config allows at most one)."""
    for name in config.profilers:
        adapter = get_adapter(name)
        if isinstance(adapter, WrapperAdapter):
            return adapter
    return None
