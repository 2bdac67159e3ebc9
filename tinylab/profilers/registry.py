"""The adapters by name: which one a run's profiler names, and the hooks and wrapper a run needs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.core.errors import UserError
from tinylab.profilers.base import (
    InProcessAdapter,
    InProcessHook,
    ProfilerAdapter,
    WrapperAdapter,
    profile_dir,
)

if TYPE_CHECKING:
    from tinylab.config import RunConfig


def _registry(config: "RunConfig | None" = None) -> dict[str, ProfilerAdapter]:
    """Fresh adapters in tinylab.config.PROFILERS order, set up as `config` asks (the defaults without one).

    The adapters are imported here, not at the package's top: a module that needs only the ROCm
    facts (tinylab.core.rocm_releases) must not import every adapter, and through them the
    format readers that read those facts."""
    from tinylab.profilers.deepspeed import DeepSpeedAdapter
    from tinylab.profilers.ncu import NcuAdapter
    from tinylab.profilers.nsys import NsysAdapter
    from tinylab.profilers.proton import ProtonAdapter
    from tinylab.profilers.pytorch import PyTorchAdapter
    from tinylab.profilers.rocprof_compute import RocprofComputeAdapter
    from tinylab.profilers.rocprof_sys import RocprofSysAdapter
    from tinylab.profilers.rocprofv3 import Rocprofv3Adapter
    adapters: list[ProfilerAdapter] = [
        PyTorchAdapter(),
        DeepSpeedAdapter(),
        Rocprofv3Adapter.from_config(config),
        RocprofSysAdapter(),
        RocprofComputeAdapter.from_config(config),
        NcuAdapter.from_config(config),
        NsysAdapter(),
        ProtonAdapter(),
    ]
    return {a.name: a for a in adapters}


def get_adapter(name: str, config: "RunConfig | None" = None) -> ProfilerAdapter:
    """The adapter called `name`, set up for `config`'s profiler settings when one is given."""
    registry = _registry(config)
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
        adapter = get_adapter(name, config)
        if isinstance(adapter, InProcessAdapter):
            hooks.append(adapter.make_hook(config, profile_dir(run_dir, name, rank)))
    return hooks


def wrapper_adapter(config: "RunConfig") -> WrapperAdapter | None:
    """The external (argv-wrapping) profiler of a run, or None (config allows at most one)."""
    for name in config.profilers:
        adapter = get_adapter(name, config)
        if isinstance(adapter, WrapperAdapter):
            return adapter
    return None
