"""Live GPU telemetry during a run: utilization, memory, power and SM clock, once a second.

Read through NVML (the `nvidia-ml-py` package, module `pynvml`) or AMD SMI (`amdsmi`) when
installed, and written as `telemetry` events. Telemetry is a nice-to-have next to training:
every failure (library missing, no GPU, a query a driver does not support) degrades to None
values or to no sampler at all, and never raises into the trainer.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

Sample = dict[str, float | None]


def start_sampler(emit: Callable[..., Any], interval_s: float = 1.0) -> Callable[[], None] | None:
    """Start a daemon thread emitting `telemetry` events; return its stop(), or None."""
    try:
        source = _nvml_source() or _amdsmi_source()
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


def _visible_index() -> str:
    """First entry of CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES: the GPU the trainer uses."""
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        value = os.environ.get(var, "").split(",")[0].strip()
        if value:
            return value
    return "0"


def _nvml_source() -> tuple[Callable[[], Sample], Callable[[], None]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        visible = _visible_index()
        if visible.startswith("GPU-") or visible.startswith("MIG-"):
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


def _amdsmi_source() -> tuple[Callable[[], Sample], Callable[[], None]] | None:
    try:
        import amdsmi
    except ImportError:
        return None
    try:
        amdsmi.amdsmi_init()
    except Exception:
        return None
    try:
        handles = amdsmi.amdsmi_get_processor_handles()
        visible = _visible_index()
        handle = handles[int(visible) if visible.isdigit() and int(visible) < len(handles) else 0]
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
