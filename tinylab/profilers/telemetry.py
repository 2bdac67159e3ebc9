"""Live GPU telemetry during a run (utilization, memory, power and SM clock, once a second), and
the machine's load by other processes (LoadSampler: their CPU time, and their use of the run's GPU).

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
import time
from typing import Any, Callable

from tinylab.core.events import LoadEvent, TelemetryEvent
from tinylab.profilers.base import usable_cpus

Sample = dict[str, float | None]


def start_sampler(emit: Callable[[TelemetryEvent], Any], index: int = 0, pci_bus_id: str | None = None,
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
                emit(TelemetryEvent(**read()))
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


def _nvml(index: int, pci_bus_id: str | None) -> tuple[Any, Any] | None:
    """(pynvml, the handle of torch's GPU `index`), NVML initialized; None without NVML or that GPU."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        handle = _nvml_by_pci(pynvml, pci_bus_id) if pci_bus_id else None
        if handle is None:
            visible = physical_gpu(index, ("CUDA_VISIBLE_DEVICES",))
            if visible.startswith("GPU-") or visible.startswith("MIG-"):
                handle = pynvml.nvmlDeviceGetHandleByUUID(visible)
            else:
                if pynvml.nvmlDeviceGetCount() < 1:
                    raise LookupError("no NVIDIA GPU")
                handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible) if visible.isdigit() else 0)
    except Exception:
        pynvml.nvmlShutdown()
        return None
    return pynvml, handle


def _nvml_by_pci(pynvml: Any, pci_bus_id: str) -> Any:
    """The handle at a PCI address, or None: nvidia-ml-py releases differ in the name of that
    lookup (`..._v2` is missing from some; the H200 image's raised AttributeError, which left the
    run with no telemetry, no energy and no GPU load), and a driver may not know torch's form of
    the address; then the visible-devices index is the way."""
    for name in ("nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"):
        lookup = getattr(pynvml, name, None)
        if lookup is None:
            continue
        try:
            return lookup(pci_bus_id.encode())
        except Exception:
            continue
    return None


def _nvml_source(index: int, pci_bus_id: str | None) -> tuple[Callable[[], Sample], Callable[[], None]] | None:
    found = _nvml(index, pci_bus_id)
    if found is None:
        return None
    pynvml, handle = found

    def read() -> Sample:
        return {
            "gpu_util_pct": _guard(lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            "mem_used_mb": _guard(lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).used, 1 / 2**20),
            "power_w": _guard(lambda: pynvml.nvmlDeviceGetPowerUsage(handle), 1e-3),
            "sm_clock_mhz": _guard(lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        }

    return read, pynvml.nvmlShutdown


def _amdsmi(index: int, pci_bus_id: str | None) -> tuple[Any, Any] | None:
    """(amdsmi, the handle of torch's GPU `index`), AMD SMI initialized; None without it or that GPU."""
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
    return amdsmi, handle


def _amdsmi_source(index: int, pci_bus_id: str | None) -> tuple[Callable[[], Sample], Callable[[], None]] | None:
    found = _amdsmi(index, pci_bus_id)
    if found is None:
        return None
    amdsmi, handle = found

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


# ----------------------------------------------------------------------------- the machine's load
#: How often LoadSampler looks at the machine: a CPU tour run lasts seconds, so it samples twice a second.
LOAD_INTERVAL_S = 0.5
#: The shortest window a load sample covers: the kernel counts CPU time in ticks of 10 ms, so over a
#: shorter window a tick or two of the run's own threads read as other processes' cores.
LOAD_MIN_WINDOW_S = 0.2


class LoadSampler:
    """Other processes' use of the machine while a run trains, as `load` events and in memory.

    The run is the process tree under `root` (the run's supervisor: the trainer, its profiler
    wrapper, torchrun and every rank are in it). Each sample gives the CPU time every process
    outside that tree used since the last one on the CPUs the run may use, in cores' worth (their
    busy time, steal time included, less the tree's own: a job pinned to 4 cores of a node is not
    busy because the other 60 are), and, with NVML or AMD SMI, how many other processes use the
    run's GPU. Nothing here raises into the trainer: a probe that fails gives None.
    """

    def __init__(self, emit: Callable[[LoadEvent], Any], root: int, gpu: tuple[int, str | None] | None = None,
                 interval_s: float = LOAD_INTERVAL_S) -> None:
        import psutil

        self.psutil, self.emit, self.root, self.interval_s = psutil, emit, root, interval_s
        self.samples: list[dict[str, Any]] = []
        self.cpus = usable_cpus() or 1
        self._cores = _own_cores(len(psutil.cpu_times(percpu=True)))
        self._gpu = _gpu_users(*gpu) if gpu is not None else None
        self._stop = threading.Event()
        self._then: tuple[float, float, dict[int, float]] | None = None
        self._thread = threading.Thread(target=self._loop, name="tinylab-load", daemon=True)

    def start(self) -> "LoadSampler":
        """Sample from now (the first step): the set-up before it, and what else ran then, is not the run's load."""
        self._then = self._read()
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        """The samples taken, a last one for the time since the one before (idempotent)."""
        if not self._stop.is_set():
            self._stop.set()
            if self._then is not None:
                self._thread.join(timeout=5)
                self._sample()
            if self._gpu is not None:
                self._gpu[1]()
        return self.samples

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self._sample():
                return

    def _read(self) -> tuple[float, float, dict[int, float]]:
        """(wall clock, the busy CPU seconds of the CPUs the run may use, each tree process's CPU seconds)."""
        if self._cores is None:
            busy = _busy_seconds(self.psutil.cpu_times())
        else:
            per_cpu = self.psutil.cpu_times(percpu=True)
            busy = sum(_busy_seconds(per_cpu[i]) for i in self._cores)
        return time.monotonic(), busy, self._tree_times()

    def _tree_times(self) -> dict[int, float]:
        try:
            root = self.psutil.Process(self.root)
            procs = [root, *root.children(recursive=True)]
        except (self.psutil.Error, OSError):
            procs = []
        out = {}
        for proc in procs:
            try:
                t = proc.cpu_times()  # a reaped child's time moves into its parent's children_*
                out[proc.pid] = t.user + t.system + t.children_user + t.children_system
            except (self.psutil.Error, OSError):
                continue
        return out

    def _sample(self) -> bool:
        try:
            now = self._read()
            (t0, busy0, own0), (t1, busy1, own1) = self._then, now
            if t1 - t0 < LOAD_MIN_WINDOW_S:  # too short to read: the next sample covers it (stop's has none)
                return True
            self._then = now
            own = sum(max(0.0, cpu - own0.get(pid, 0.0)) for pid, cpu in own1.items())
            sample = {"others_cores": round(max(0.0, busy1 - busy0 - own) / (t1 - t0), 3), "cpus": self.cpus,
                      "gpu_others": self._gpu[0](set(own1)) if self._gpu is not None else None}
            self.samples.append(sample)
            self.emit(LoadEvent(**sample))
            return True
        except Exception:  # the events file closed under it, or a probe broke: stop quietly
            return False


def _busy_seconds(times: Any) -> float:
    """A psutil cpu_times tuple's busy seconds: all but idle and I/O wait (guest time is counted in user already)."""
    return sum(times) - sum(getattr(times, name, 0.0) for name in ("idle", "iowait", "guest", "guest_nice"))


def _own_cores(listed: int) -> list[int] | None:
    """The CPUs this process may run on, as indices into psutil's per-CPU times, or None for the
    whole machine: when its affinity is every CPU, or the per-CPU list (online CPUs only) does not
    number them all, so that an index would name the wrong one."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if listed != os.cpu_count() or len(cores) == listed or cores[-1] >= listed:
        return None
    return cores


def _gpu_users(index: int, pci_bus_id: str | None) -> tuple[Callable[[set[int]], int | None], Callable[[], None]] | None:
    """(how many processes outside `own` pids use the GPU, shutdown), or None without NVML or AMD SMI.

    In a container the driver may report host pids, none of which is the run's: then one of the
    processes it lists is taken to be the run's own."""
    found = _nvml(index, pci_bus_id)
    if found is not None:
        pynvml, handle = found

        def listed() -> set[int]:
            return {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}

        return _others(listed), pynvml.nvmlShutdown
    found = _amdsmi(index, pci_bus_id)
    if found is not None:
        amdsmi, handle = found

        def listed() -> set[int]:
            procs = amdsmi.amdsmi_get_gpu_process_list(handle)
            return {p["pid"] if isinstance(p, dict) else amdsmi.amdsmi_get_gpu_process_info(handle, p)["pid"]
                    for p in procs}

        return _others(listed), amdsmi.amdsmi_shut_down
    return None


def _others(listed: Callable[[], set[int]]) -> Callable[[set[int]], int | None]:
    def count(own: set[int]) -> int | None:
        try:
            pids = listed()
        except Exception:  # a driver that will not list other users' processes
            return None
        return len(pids - own) if pids & own else max(0, len(pids) - 1)

    return count
