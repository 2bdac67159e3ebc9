"""The adapters by name: the registry line (ADAPTERS), which adapter a run's profiler names, and the
hooks and wrapper a run needs.

ADAPTERS is read when asked, never copied at import: tinylab.config builds RunConfig from it
(config_class), and the faces' lists (tinylab.service.profilers) and the environment defaults read
it, so a tool added to it is everywhere at once (docs/profilers.md).
"""

from __future__ import annotations

from pathlib import Path

from tinylab.core.errors import UserError
from tinylab.profilers.base import (
    Config,
    InProcessAdapter,
    InProcessHook,
    ProfilerAdapter,
    Setting,
    Viewer,
    WrapperAdapter,
    profile_dir,
)
from tinylab.profilers.deepspeed import DeepSpeedAdapter
from tinylab.profilers.ncu import NcuAdapter
from tinylab.profilers.nsys import NsysAdapter
from tinylab.profilers.proton import ProtonAdapter
from tinylab.profilers.pytorch import PyTorchAdapter
from tinylab.profilers.rocprof_compute import RocprofComputeAdapter
from tinylab.profilers.rocprof_sys import RocprofSysAdapter
from tinylab.profilers.rocprofv3 import Rocprofv3Adapter

#: Every profiler, in the order the CLI, the Lab and the doctor list them.
ADAPTERS: tuple[type[ProfilerAdapter], ...] = (
    PyTorchAdapter,
    DeepSpeedAdapter,
    Rocprofv3Adapter,
    RocprofSysAdapter,
    RocprofComputeAdapter,
    NcuAdapter,
    NsysAdapter,
    ProtonAdapter,
)


def names() -> tuple[str, ...]:
    return tuple(a.name for a in ADAPTERS)


def settings() -> tuple[Setting, ...]:
    """Every tool's settings, tool by tool."""
    return tuple(s for a in ADAPTERS for s in a.settings)


def viewers() -> tuple[Viewer, ...]:
    """Every tool's artifact viewers, tool by tool: an artifact takes the first whose suffix its
    name ends with, whichever tool wrote it (a file is what its name says)."""
    return tuple(v for a in ADAPTERS for v in a.viewers)


def adapter_class(name: str | None) -> type[ProfilerAdapter] | None:
    """The adapter class called `name` (None for a name no adapter has: a table read from a file)."""
    return next((a for a in ADAPTERS if a.name == name), None)


def get_adapter(name: str, config: Config | None = None) -> ProfilerAdapter:
    """A fresh adapter called `name`, set up for `config`'s profiler settings when one is given."""
    adapter = adapter_class(name)
    if adapter is None:
        raise UserError(f"unknown profiler {name!r}: choose from {', '.join(names())}")
    return adapter.from_config(config)


def all_adapters() -> list[ProfilerAdapter]:
    return [a.from_config(None) for a in ADAPTERS]


def inprocess_hooks(config: Config, run_dir: Path, rank: int | None = None) -> list[InProcessHook]:
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


def wrapper_adapter(config: Config) -> WrapperAdapter | None:
    """The external (argv-wrapping) profiler of a run, or None (config allows at most one)."""
    for name in config.profilers:
        adapter = get_adapter(name, config)
        if isinstance(adapter, WrapperAdapter):
            return adapter
    return None
