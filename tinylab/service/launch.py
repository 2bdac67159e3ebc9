"""Validate and launch a run: every pre-launch check in one place, for the CLI, the lab and exercises.

What the trainer would refuse is refused here first, with the trainer's own rules (RunConfig's
validate and check_device), so a learner never waits for a run that was bound to fail.
"""

from __future__ import annotations

from typing import Callable

from tinylab.config import RunConfig
from tinylab.errors import UserError
from tinylab.profilers import get_adapter
from tinylab.runs.launcher import launch
from tinylab.runs.store import Run, RunStore
from tinylab.service.machine import Machine


#: name -> why that profiler cannot run here (None: it can), with the fix when there is one.
ProfilerCheck = Callable[[str], "str | None"]


def check_run(cfg: RunConfig, machine: Machine, profiler_problem: ProfilerCheck | None = None) -> RunConfig:
    """The config as it will run, or ConfigError/UserError (one line) naming what is wrong.

    `profiler_problem` says why a profiler cannot run (default: ask the tool itself; the lab
    answers from its doctor report, which it already has, so its form can check on every key).
    """
    cfg.validate()
    device_type = machine.device_type(cfg.device)
    cfg.check_device(device_type)
    cfg.check_fits(machine.memory_bytes(device_type), "the GPU" if device_type == "cuda" else "this machine")
    for name in cfg.profilers:
        problem = (profiler_problem or probe_profiler)(name)
        if problem:
            raise UserError(f"profiler {name!r} is not available here: {problem}")
    return cfg


def probe_profiler(name: str) -> str | None:
    """Ask the tool (its executable, its package, a GPU of its vendor): why it cannot run, or None."""
    adapter = get_adapter(name)
    avail = adapter.available()
    if avail.available:
        return None
    return f"{avail.reason}; {adapter.fix}" if adapter.fix else avail.reason


def launch_run(store: RunStore, cfg: RunConfig, machine: Machine) -> Run:
    """Check, then start the run detached; returns at once."""
    return launch(store, check_run(cfg, machine))
