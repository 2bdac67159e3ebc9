"""Live GPU telemetry during a run: utilization, memory, power and SM clock, once a second.

Read through NVML (the `nvidia-ml-py` package, module `pynvml`) or AMD SMI (`amdsmi`, matching the
node's ROCm) when installed, and written as `telemetry` events, for the run's own GPU: found by its
PCI address when torch gives one (tool and runtime may number GPUs differently), else by its index
mapped through the visible-devices variables. Telemetry is a nice-to-have next to training: every
failure (library missing or not matching the driver, no GPU, a query a driver does not support)
degrades to None values or to no sampler at all, and never raises into the trainer.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

Sample = dict[str, float | None]


def start_sampler(emit: Callable[..., Any], index: int = 0, pci_bus_id: str | None = None,
                  interval_s: float = 1.0) -> Callable[[], None] | None:
    """Start a daemon thread emitting `telemetry` events of GPU `index` (as torch numbers it, or at
    `pci_bus_id` when known); return its stop(), or None."""
    try:
        source = _nvml_source(index, pci_bus_id) or _amdsmi_source(index, pci_bus_id)
    except Exception:  # a broken driver stack must not stop a run
        source = None
    if source is None:
        return None
    read, shutdown = source
    stop_event = threading.Event()

    def loop() -> None:
        while True:
            try:
                emit("telemetry", **read())
            except Exception:  # emit after the events file closed, or a driver hiccup: stop quietly
                return
            if stop_event.wait(interval_s):
                return

    thread = threading.Thread(target=loop, name="tinylab-telemetry", daemon=True)
    thread.start()

    def stop() -> None:
        stop_event.set()
        thread.join(timeout=max(2.0, 2 * interval_s))
        try:
            shutdown()
        except Exception:
            pass

    return stop


def _guard(query: Callable[[], Any], scale: float = 1.0) -> float | None:
    try:
        value = query()
    except Exception:
        return None
    try:
        return float(value) * scale
    except (TypeError, ValueError):
        return None


def physical_gpu(index: int, variables: tuple[str, ...]) -> str:
    """The entry for torch's GPU `index` in the first visible-devices variable set (an index or a
    UUID, as the variable gives it); str(index) when none is set."""
    for var in variables:
        entries = [e.strip() for e in os.environ.get(var, "").split(",") if e.strip()]
        if entries:
            return entries[index] if index < len(entries) else entries[-1]
    return str(index)


def _nvml_source(index: int, pci_bus_id: str | None) -> tuple[Callable[[], Sample], Callable[[], None]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        visible = physical_gpu(index, ("CUDA_VISIBLE_DEVICES",))
        if pci_bus_id:
            handle = pynvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode())
        elif visible.startswith("GPU-") or visible.startswith("MIG-"):
            handle = pynvml.nvmlDeviceGetHandleByUUID(visible)
        else:
            if pynvml.nvmlDeviceGetCount() < 1:
                raise LookupError("no NVIDIA GPU")
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible) if visible.isdigit() else 0)
    except Exception:
        pynvml.nvmlShutdown()
        return None

    def read() -> Sample:
        return {
            "gpu_util_pct": _guard(lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            "mem_used_mb": _guard(lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).used, 1 / 2**20),
            "power_w": _guard(lambda: pynvml.nvmlDeviceGetPowerUsage(handle), 1e-3),
            "sm_clock_mhz": _guard(lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        }

    return read, pynvml.nvmlShutdown


def _amdsmi_source(index: int, pci_bus_id: str | None) -> tuple[Callable[[], Sample], Callable[[], None]] | None:
    try:
        import amdsmi  # raises KeyError (not ImportError) when ROCm's libamd_smi.so is missing
    except Exception:
        return None
    try:
        amdsmi.amdsmi_init()
    except Exception:
        return None
    try:
        handle = amd_handle(amdsmi, index, pci_bus_id)
    except Exception:
        amdsmi.amdsmi_shut_down()
        return None

    def power() -> Any:
        info = amdsmi.amdsmi_get_power_info(handle)
        for key in ("current_socket_power", "average_socket_power", "socket_power"):
            value = info.get(key)
            if isinstance(value, (int, float)):
                return value
        return None

    def clock() -> Any:
        info = amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)
        return info.get("clk", info.get("cur_clk"))  # renamed between amdsmi releases

    def read() -> Sample:
        return {
            "gpu_util_pct": _guard(lambda: amdsmi.amdsmi_get_gpu_activity(handle)["gfx_activity"]),
            "mem_used_mb": _guard(lambda: amdsmi.amdsmi_get_gpu_vram_usage(handle)["vram_used"]),
            "power_w": _guard(power),
            "sm_clock_mhz": _guard(clock),
        }

    return read, amdsmi.amdsmi_shut_down


def amd_handle(amdsmi: Any, index: int, pci_bus_id: str | None) -> Any:
    """The AMD SMI handle of torch's GPU `index`: by PCI address when known, else through
    ROCR_VISIBLE_DEVICES then HIP/CUDA_VISIBLE_DEVICES (HIP applies both, in that order)."""
    handles = amdsmi.amdsmi_get_processor_handles()
    if pci_bus_id:
        for handle in handles:
            if str(amdsmi.amdsmi_get_gpu_device_bdf(handle)).lower() == pci_bus_id.lower():
                return handle
    logical = physical_gpu(index, ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"))
    physical = physical_gpu(int(logical) if logical.isdigit() else 0, ("ROCR_VISIBLE_DEVICES",))
    chosen = int(physical) if physical.isdigit() else 0
    if chosen >= len(handles):
        raise LookupError(f"GPU {chosen} not among {len(handles)} AMD SMI devices")
    return handles[chosen]
