"""Validate and launch a run: every pre-launch check in one place, for the CLI, the lab and exercises.

What the trainer would refuse is refused here first, with the trainer's own rules (RunConfig's
validate and check_device), so a learner never waits for a run that was bound to fail.
"""

from __future__ import annotations

import importlib.util
from typing import Callable

from tinylab.config import ConfigError, RunConfig
from tinylab.core.errors import UserError
from tinylab.profilers.registry import get_adapter
from tinylab.service.machine import Machine


#: What a rank's process takes before any tensor of the model (Python, torch, gloo): ~400 MB measured
#: on a CPU; a lower bound, so that nothing that fits is refused.
RANK_PROCESS_BYTES = 256 << 20

#: name -> why that profiler cannot run here (None: it can), with the fix when there is one.
ProfilerCheck = Callable[[str], "str | None"]


def check_run(cfg: RunConfig, machine: Machine, profiler_problem: ProfilerCheck | None = None,
              tool_checks: bool = True) -> RunConfig:
    """The config as it will run, or ConfigError/UserError (one line) naming what is wrong.

    `profiler_problem` says why a profiler cannot run (default: ask the tool itself; the lab
    answers from its doctor report, which it already has, so its form can check on every key).
    `tool_checks`: also ask each profiler whether its installed release can do what the config asks
    (a rocprofv3 output format, say); it may run the tool, so the lab's form leaves it to launch.
    """
    cfg.validate()
    device_type = machine.device_type(cfg.device)
    cfg.check_device(device_type)
    if device_type == "cuda" and cfg.nproc_per_node > machine.gpus:
        raise ConfigError(f"--nproc-per-node {cfg.nproc_per_node} wants a GPU a rank, and this node has {machine.gpus}: "
                          f"use --nproc-per-node {machine.gpus} or fewer (or --device cpu: gloo ranks on the CPU)")
    if device_type == "cpu" and machine.cpus and cfg.nproc_per_node > machine.cpus:
        raise ConfigError(f"--nproc-per-node {cfg.nproc_per_node} starts that many training processes on this machine's "
                          f"{machine.cpus} CPU cores: use --nproc-per-node {machine.cpus} or fewer")
    memory = machine.memory_bytes(device_type)
    if device_type == "cpu" and memory and cfg.nproc_per_node > 1:  # the ranks share the host's memory
        memory = max(0, memory // cfg.nproc_per_node - RANK_PROCESS_BYTES) or 1
        cfg.check_fits(memory, f"each of {cfg.nproc_per_node} ranks' share of this machine (less its Python and torch)")
    else:
        cfg.check_fits(memory, "the GPU" if device_type == "cuda" else "this machine")
    if cfg.parallel in ("zero1", "zero2") and importlib.util.find_spec("deepspeed") is None:
        raise UserError(f"--parallel {cfg.parallel} runs DeepSpeed, which is not installed: pip install deepspeed "
                        "(or use --parallel ddp or fsdp)")
    for name in cfg.profilers:
        problem = (profiler_problem or probe_profiler)(name)
        if problem:
            raise UserError(f"profiler {name!r} is not available here: {problem}")
        if tool_checks:
            get_adapter(name, cfg).check(cfg)
    return cfg


def probe_profiler(name: str) -> str | None:
    """Ask the tool (its executable, its package, a GPU of its vendor): why it cannot run, or None."""
    adapter = get_adapter(name)
    avail = adapter.available()
    if avail.available:
        return None
    return f"{avail.reason}; {adapter.fix}" if adapter.fix else avail.reason
