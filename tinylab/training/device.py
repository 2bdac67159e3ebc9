"""The trainer's device: which one a run asks for, its name, how a step is timed on it, whether it
can mark ranges for a profiler, and where telemetry finds its GPU.

Timing is honest by construction: on a GPU each phase is bracketed by CUDA events and the step
ends with a synchronize, so fwd + bwd + opt add up to the step; on CPU the work is synchronous
and a host clock suffices. The `unsynced-timing` fault is the one deliberate exception.
"""

from __future__ import annotations

import platform
import time
from typing import Any

from tinylab.config import ConfigError


def resolve_device(torch, requested: str):
    """The torch device for a run's --device: a GPU asked for but not visible is the user's to fix."""
    has_cuda = torch.cuda.is_available()
    if requested == "auto":
        return torch.device("cuda" if has_cuda else "cpu")
    if requested.startswith("cuda") and not has_cuda:
        raise ConfigError(f"--device {requested} requested but no CUDA/ROCm GPU is visible to torch")
    return torch.device(requested)


def device_name(torch, device) -> str:
    """What the start event and the printout call the device; the peak rates (MFU) are looked up by it."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine() or "cpu"


class PhaseTimer:
    """Host clock at phase boundaries; correct where device work is synchronous (CPU)."""

    def __init__(self, sync=None):
        self._sync = sync

    def start(self) -> None:
        self._marks = {"start": time.perf_counter()}

    def mark(self, name: str) -> None:
        self._marks[name] = time.perf_counter()

    def finish(self) -> dict[str, float | None]:
        if self._sync is not None:  # unsynced-timing: phases above were read before this sync
            self._sync()
        end = time.perf_counter()
        m = self._marks
        return {
            "step_ms": (end - m["start"]) * 1e3,
            "fwd_ms": (m["fwd"] - m["start"]) * 1e3,
            "bwd_ms": (m["bwd"] - m["fwd"]) * 1e3,
            "opt_ms": (m["opt"] - m["bwd"]) * 1e3,
        }


class CudaEventTimer:
    """CUDA events at phase boundaries, one synchronize per step: exact and cheap."""

    def __init__(self, torch):
        self.torch = torch
        self._events: dict[str, Any] = {}

    def start(self) -> None:
        self._events = {}
        self.mark("start")

    def mark(self, name: str) -> None:
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        self._events[name] = ev

    def finish(self) -> dict[str, float | None]:
        e = self._events
        e["opt" if "opt" in e else "end"].synchronize()
        if "fwd" not in e:  # a graph replay cannot be split into phases
            return {"step_ms": e["start"].elapsed_time(e["end"]), "fwd_ms": None, "bwd_ms": None, "opt_ms": None}
        return {
            "step_ms": e["start"].elapsed_time(e["opt"]),
            "fwd_ms": e["start"].elapsed_time(e["fwd"]),
            "bwd_ms": e["fwd"].elapsed_time(e["bwd"]),
            "opt_ms": e["bwd"].elapsed_time(e["opt"]),
        }


def step_timer(torch, device, fault: str | None) -> PhaseTimer | CudaEventTimer:
    """How a step is timed on this device (a host clock read before the device is done, under the
    `unsynced-timing` fault)."""
    if device.type != "cuda":
        return PhaseTimer()
    return PhaseTimer(torch.cuda.synchronize) if fault == "unsynced-timing" else CudaEventTimer(torch)


def markers_work(torch) -> bool:
    """Whether this torch build can mark ranges (roctx on ROCm, NVTX on CUDA)."""
    try:
        torch.cuda.nvtx.range_push("tinylab")
        torch.cuda.nvtx.range_pop()
    except (RuntimeError, AttributeError):
        return False
    return True


def gpu_index(torch, device) -> int:
    """torch's number of the run's GPU (a bare `cuda` device means the current one)."""
    return device.index if device.index is not None else torch.cuda.current_device()


def pci_bus_id(torch, device) -> str | None:
    """The GPU's PCI address ("0000:c1:00.0"), so telemetry reads this GPU whatever the numbering."""
    props = torch.cuda.get_device_properties(device)
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    return f"{getattr(props, 'pci_domain_id', 0):04x}:{bus:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
