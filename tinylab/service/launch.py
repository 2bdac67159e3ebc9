"""Validate and launch a run: every pre-launch check in one place, for the CLI, the lab and exercises.

What the trainer would refuse is refused here first, with the trainer's own rules (RunConfig's
validate and check_device), so a learner never waits for a run that was bound to fail.
"""

from __future__ import annotations

from tinylab.config import RunConfig
from tinylab.errors import UserError
from tinylab.profilers import get_adapter
from tinylab.runs.launcher import launch
from tinylab.runs.store import Run, RunStore
from tinylab.service.machine import Machine


def check_run(cfg: RunConfig, machine: Machine) -> RunConfig:
    """The config as it will run, or ConfigError/UserError (one line) naming what is wrong."""
    cfg.validate()
    device_type = machine.device_type(cfg.device)
    cfg.check_device(device_type)
    cfg.check_fits(machine.memory_bytes(device_type), "the GPU" if device_type == "cuda" else "this machine")
    check_profilers(cfg)
    return cfg


def check_profilers(cfg: RunConfig) -> None:
    """A missing profiler, or a flag or output format its release lacks, is a one-line error
    before the run starts, not a failed run."""
    if not cfg.profilers:
        return
    for name in cfg.profilers:
        adapter = get_adapter(name)
        avail = adapter.available()
        if not avail.available:
            fix = f"; {adapter.fix}" if adapter.fix else ""
            raise UserError(f"profiler {name!r} is not available here: {avail.reason}{fix}")
        adapter.check(cfg)


def launch_run(store: RunStore, cfg: RunConfig, machine: Machine) -> Run:
    """Check, then start the run detached; returns at once."""
    return launch(store, check_run(cfg, machine))
