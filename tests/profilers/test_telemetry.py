"""GPU telemetry (tinylab/profilers/telemetry.py): sampling through NVML or amdsmi, the run's own
GPU picked by PCI address or visible-device index, and quiet failure when neither works; the
machine's load by processes outside the run (LoadSampler)."""

from __future__ import annotations

import contextlib
import sys
import time
import types
from types import SimpleNamespace

import pytest

from tinylab.core.events import TelemetryEvent
from tinylab.profilers import telemetry
from tinylab.profilers.base import usable_cpus


def fake_pynvml(util=37, used=2**30 * 3, power_mw=215_000, clock=1755, fail_power=False) -> types.ModuleType:
    mod = types.ModuleType("pynvml")
    mod.NVML_CLOCK_SM = 1
    mod.calls = []
    mod.nvmlInit = lambda: mod.calls.append("init")
    mod.nvmlShutdown = lambda: mod.calls.append("shutdown")
    mod.nvmlDeviceGetCount = lambda: 1
    mod.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i)
    mod.nvmlDeviceGetUtilizationRates = lambda h: SimpleNamespace(gpu=util)
    mod.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(used=used)

    def power(h):
        if fail_power:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return power_mw

    mod.nvmlDeviceGetPowerUsage = power
    mod.nvmlDeviceGetClockInfo = lambda h, kind: clock
    return mod


def test_telemetry_samples_through_nvml(monkeypatch):
    mod = fake_pynvml(fail_power=True)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    events = []
    stop = telemetry.start_sampler(events.append, interval_s=0.01)
    assert stop is not None
    deadline = time.monotonic() + 5
    while len(events) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert events[0] == TelemetryEvent(gpu_util_pct=37.0, mem_used_mb=3072.0, power_w=None, sm_clock_mhz=1755.0)
    assert mod.calls[0] == "init" and mod.calls[-1] == "shutdown"
    count = len(events)
    time.sleep(0.05)
    assert len(events) == count  # stopped


def test_telemetry_samples_through_amdsmi(monkeypatch):
    mod = types.ModuleType("amdsmi")
    mod.AmdSmiClkType = SimpleNamespace(GFX="gfx")
    mod.amdsmi_init = lambda: None
    mod.amdsmi_shut_down = lambda: None
    mod.amdsmi_get_processor_handles = lambda: ["gpu0", "gpu1"]
    mod.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 88, "umc_activity": 10}
    mod.amdsmi_get_gpu_vram_usage = lambda h: {"vram_used": 4096, "vram_total": 196592}
    mod.amdsmi_get_power_info = lambda h: {"current_socket_power": "N/A", "average_socket_power": 512}
    mod.amdsmi_get_clock_info = lambda h, kind: {"cur_clk": 2100, "min_clk": 500}  # older amdsmi key
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", mod)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    events = []
    stop = telemetry.start_sampler(events.append, interval_s=10)
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert events[0] == TelemetryEvent(gpu_util_pct=88.0, mem_used_mb=4096.0, power_w=512.0, sm_clock_mhz=2100.0)


def test_telemetry_absent_or_broken_gives_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    assert telemetry.start_sampler(lambda *a, **k: None) is None
    broken = fake_pynvml()
    broken.nvmlInit = lambda: (_ for _ in ()).throw(RuntimeError("driver not loaded"))
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert telemetry.start_sampler(lambda *a, **k: None) is None


def test_telemetry_emit_failure_stops_quietly(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())

    def emit(event):
        raise OSError("events file closed")

    stop = telemetry.start_sampler(emit, interval_s=0.01)
    time.sleep(0.05)
    stop()


def test_amd_telemetry_reads_the_runs_own_gpu(monkeypatch):
    """By PCI address when torch gives one, else torch's index through HIP/CUDA_VISIBLE_DEVICES and
    then ROCR_VISIBLE_DEVICES (the order HIP applies them)."""
    bdf = {"g0": "0000:05:00.0", "g1": "0000:26:00.0", "g2": "0000:46:00.0", "g3": "0000:65:00.0"}
    smi = SimpleNamespace(amdsmi_get_processor_handles=lambda: list(bdf), amdsmi_get_gpu_device_bdf=bdf.get)
    for var in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    assert telemetry.amd_handle(smi, 0, "0000:46:00.0") == "g2"
    assert telemetry.amd_handle(smi, 1, None) == "g1"
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "2,3")
    assert telemetry.amd_handle(smi, 1, None) == "g3"
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "1,2,3")
    assert telemetry.amd_handle(smi, 0, None) == "g2"
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "7")
    with pytest.raises(LookupError):
        telemetry.amd_handle(smi, 0, None)


def test_nvml_telemetry_by_pci_address(monkeypatch):
    mod = fake_pynvml()
    mod.nvmlDeviceGetHandleByPciBusId_v2 = lambda bus: ("gpu", bus)
    mod.nvmlDeviceGetHandleByIndex = lambda i: pytest.fail("the PCI address decides")
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    events = []
    stop = telemetry.start_sampler(events.append, 1, "0000:c1:00.0", interval_s=10)
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert events and events[0].gpu_util_pct == 37.0


def test_nvml_without_the_v2_pci_lookup_still_finds_the_gpu(monkeypatch):
    """The H200 image's nvidia-ml-py has no nvmlDeviceGetHandleByPciBusId_v2: the AttributeError
    left runs with no telemetry (no energy, no GPU load). The older name is tried, then the index."""
    mod = fake_pynvml()
    mod.nvmlDeviceGetHandleByPciBusId = lambda bus: ("gpu", bus)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    assert telemetry._nvml(0, "0000:c1:00.0")[1] == ("gpu", b"0000:c1:00.0")
    del mod.nvmlDeviceGetHandleByPciBusId
    mod.nvmlDeviceGetHandleByIndex = lambda i: ("by-index", i)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert telemetry._nvml(0, "0000:c1:00.0")[1] == ("by-index", 3)


# ------------------------------------------------------------------------------ the machine's load
def test_the_load_sampler_counts_a_cpu_hog_outside_the_run():
    """The machine is shared: others may load it already, so this test makes its own load (a
    process spinning on a CPU, outside the run's process tree) and checks only that it is seen;
    the verdict on quiet and busy figures is tested on recorded samples (tests/test_events.py)."""
    import subprocess

    run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # the run's tree: idle
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        events = []
        sampler = telemetry.LoadSampler(events.append, run.pid, interval_s=0.2).start()
        time.sleep(1.5)
        samples = sampler.stop()
    finally:
        hog.kill()
        run.kill()
    assert len(samples) >= 5 and [e.kind for e in events] == ["load"] * len(samples)
    assert all(s["cpus"] == (usable_cpus() or 1) and s["gpu_others"] is None for s in samples)
    assert sum(s["others_cores"] for s in samples) / len(samples) >= 0.7  # the hog's core (and anyone else's)
    assert sampler.stop() is samples  # stopping twice is harmless


def test_other_processes_on_the_gpu_are_counted_without_the_runs_own():
    listed = {101, 202, 303}
    count = telemetry._others(lambda: listed)
    assert count({101, 5}) == 2  # the run's pid is among them: the others are the rest
    assert count({7, 8}) == 2  # a container's pids are not the driver's: one listed process is the run's
    listed.clear()
    assert count({7}) == 0
    broken = telemetry._others(lambda: (_ for _ in ()).throw(RuntimeError("insufficient permissions")))
    assert broken({7}) is None


def scripted_machine(monkeypatch, **now) -> dict:
    """A psutil whose clock and per-CPU busy seconds (`now["busy"]`, a list) the test sets; the run
    has no process in it, so all the busy time is other processes'."""
    from collections import namedtuple

    times = namedtuple("Times", "user system idle")
    fake = SimpleNamespace(Error=OSError, Process=lambda pid: (_ for _ in ()).throw(OSError("no such process")),
                           cpu_times=lambda percpu=False: [times(b, 0.0, 0.0) for b in now["busy"]] if percpu
                           else times(sum(now["busy"]), 0.0, 0.0))
    monkeypatch.setitem(sys.modules, "psutil", fake)
    monkeypatch.setattr(telemetry, "time", SimpleNamespace(monotonic=lambda: now["t"]))
    return now


def test_the_load_sampler_counts_from_the_first_step_and_reads_no_window_too_short(monkeypatch):
    """What ran while the trainer set up (its imports, the model's build, the lab that launched it)
    is not the run's load: the first sample starts at start(). A window shorter than
    LOAD_MIN_WINDOW_S is a tick or two of CPU time: it is left to the next sample, and the last
    one of stop() is dropped."""
    now = scripted_machine(monkeypatch, t=100.0, busy=[0.0])
    sampler = telemetry.LoadSampler(lambda event: None, 1, interval_s=3600)
    now.update(t=105.0, busy=[10.0])  # set-up: two cores busy for 5 s
    sampler.start()
    now.update(t=105.1, busy=[10.05])
    assert sampler._sample() and sampler.samples == []  # 0.1 s: too short to read
    now.update(t=106.0, busy=[10.3])
    assert sampler._sample()
    now.update(t=106.1, busy=[10.4])
    assert sampler.stop() == [{"others_cores": 0.3, "cpus": usable_cpus() or 1, "gpu_others": None}]


def test_a_pinned_run_counts_the_load_on_its_own_cores_only(monkeypatch):
    """A job pinned to some cores of a node (Slurm, taskset) is not busy because the other cores are."""
    now = scripted_machine(monkeypatch, t=0.0, busy=[0.0, 0.0, 0.0, 0.0])
    monkeypatch.setattr(telemetry.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(telemetry.os, "sched_getaffinity", lambda pid: {2, 3}, raising=False)
    sampler = telemetry.LoadSampler(lambda event: None, 1, interval_s=3600).start()
    now.update(t=1.0, busy=[1.0, 1.0, 0.25, 0.0])  # the other jobs' cores full, a quarter of one of the run's
    assert [s["others_cores"] for s in sampler.stop()] == [0.25] and sampler.cpus == 2
    assert telemetry._own_cores(4) == [2, 3]
    assert telemetry._own_cores(3) is None  # an offline CPU: psutil's list would not be numbered by CPU
    monkeypatch.setattr(telemetry.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert telemetry._own_cores(4) is None  # every CPU: the machine's total


def test_the_runs_grandchildren_are_its_own_load_not_others():
    """torchrun's ranks are the supervisor's grandchildren: a process spinning two levels under
    the run's root is the run's own CPU time. Two samplers watch the same window, one rooted at
    that tree and one at an idle process beside it: whatever else loads the machine meets both, and
    they differ by the spinning process's own CPU time (however much of a core it got)."""
    import subprocess

    import psutil

    def under(code: str) -> str:  # a process that runs `code` as its child
        return f"import subprocess, sys; subprocess.run([sys.executable, '-c', {code!r}])"

    spin = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass"  # 20 s at most
    tree = subprocess.Popen([sys.executable, "-c", under(under(spin))])  # the run's root, the spinner two under it
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        deadline = time.monotonic() + 10
        while not (spinning := [p for p in psutil.Process(tree.pid).children(recursive=True) if p.ppid() != tree.pid]):
            assert time.monotonic() < deadline, "the spinning grandchild never started"
            time.sleep(0.05)
        own, beside = (telemetry.LoadSampler(lambda e: None, root.pid, interval_s=0.25).start()
                       for root in (tree, idle))
        t0, cpu0 = time.monotonic(), sum(spinning[0].cpu_times()[:2])
        time.sleep(1.5)
        spun = (sum(spinning[0].cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
        mean = [sum(s["others_cores"] for s in samples) / len(samples) for samples in (own.stop(), beside.stop())]
    finally:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(tree.pid).children(recursive=True):
                child.kill()
        tree.kill()
        idle.kill()
    assert mean[1] - mean[0] == pytest.approx(spun, abs=0.2), (
        f"others' cores rooted at the spinning tree {mean[0]:.2f}, beside it {mean[1]:.2f}; it spun {spun:.2f}")
    assert spun > 0.1  # it ran at all: the difference is its
