"""In-process profilers (PyTorch, DeepSpeed), telemetry, and profiled runs end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from support import samples
from support.paths import BIN

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.cli import main
from tinylab.config import GRAPH_WARMUP_ITERS, RunConfig
from tinylab.errors import UserError
from tinylab.profilers import (
    get_adapter,
    inprocess_hooks,
    telemetry,
    write_kernel_table,
)
from tinylab.profilers.pytorch import OPERATOR_COLUMNS, profile_schedule

REPO = Path(__file__).resolve().parents[2]
HAS_DEEPSPEED = importlib.util.find_spec("deepspeed") is not None


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def train(hooks, model, steps: int, forward_end: bool = True) -> None:
    """The trainer's hook protocol (tinylab/trainer.py) around a tiny training loop."""
    opt = torch.optim.AdamW(model.parameters())
    for h in hooks:
        h.on_train_start(model, torch.device("cpu"))
    for step in range(steps):
        for h in hooks:
            h.on_step_start(step)
        loss = model(torch.randn(8, 16)).pow(2).mean()
        if forward_end:
            for h in hooks:
                h.on_forward_end(step)
        loss.backward()
        opt.step()
        opt.zero_grad()
        for h in hooks:
            h.on_step_end(step)


@pytest.mark.parametrize("num_steps,profile_steps,warmup_steps,graph,expected", [
    # eager: from step 2 or the run's first measured step, whichever is later
    (50, 3, 0, False, (1, 1, 3)), (50, 3, 5, False, (4, 1, 3)), (5, 10, 0, False, (1, 1, 3)),
    (4, 3, 1, False, (1, 1, 2)), (2, 3, 0, False, (0, 1, 1)), (1, 3, 0, False, (0, 0, 1)),
    # graphed: steps 0..2 warm up eagerly, step 3's window holds the capture; replays from step 4
    (50, 3, 0, True, (3, 1, 3)), (50, 3, 5, True, (4, 1, 3)), (6, 3, 1, True, (3, 1, 2)),
    (4, 3, 1, True, (2, 1, 1)),  # too short: its last step, capture included (the hook says so)
])
def test_profile_schedule_starts_after_warm_up(num_steps, profile_steps, warmup_steps, graph, expected):
    wait, warmup, active = profile_schedule(num_steps, profile_steps, warmup_steps, graph)
    assert (wait, warmup, active) == expected and wait + warmup + active <= num_steps
    if graph and num_steps > GRAPH_WARMUP_ITERS + 1:
        assert wait + warmup > GRAPH_WARMUP_ITERS  # the first recorded step is a replay


def test_pytorch_hook_schedules_from_the_config_as_it_runs(tmp_path):
    """The trainer resolves cuda_graph on the device before it makes the hooks: a graphed v4 run
    records replays (from step 4, after 3 eager warm-up steps and the capture), an eager one from step 2."""
    graphed = RunConfig(version="v4", num_steps=20, warmup_steps=2, cuda_graph=True, profilers=["pytorch"])
    (hook,) = inprocess_hooks(graphed, tmp_path)
    assert hook.schedule == (3, 1, 3)
    (hook,) = inprocess_hooks(RunConfig(version="v4", num_steps=20, warmup_steps=2, cuda_graph=False,
                                        profilers=["pytorch"]), tmp_path)
    assert hook.schedule == (1, 1, 3)


@pytest.mark.parametrize("steps", [1, 4])
def test_pytorch_hook_on_cpu(tmp_path, steps):
    cfg = RunConfig(num_steps=steps, warmup_steps=0, profile_steps=2, profilers=["pytorch"])
    (hook,) = inprocess_hooks(cfg, tmp_path)
    train([hook], mlp(), steps)
    result = hook.on_train_end()
    out = tmp_path / "profiles" / "pytorch"
    assert set(result.artifacts) == {"trace.json.gz", "operators.csv", "operators.txt"}
    assert (out / "trace.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (out / "operators.csv").read_text().splitlines()[0].split(",") == OPERATOR_COLUMNS
    assert result.format == "pytorch-operators"
    assert "CPU run: no device kernels; table shows operators by self CPU time" in result.note
    names = set(result.table["name"])
    assert "aten::addmm" in names and not any(n.startswith("ProfilerStep") for n in names)
    trace, fmt = load_kernel_table(out / "trace.json.gz")  # the trace alone gives the same operators
    assert fmt == "pytorch-trace" and "aten::addmm" in set(trace["name"])
    event = write_kernel_table(tmp_path, "pytorch", result)
    assert event["kernel_table"] == "profiles/pytorch/kernels.csv"


def test_pytorch_hook_memory_timeline_opt_in(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYLAB_PROFILE_MEMORY", "1")
    (hook,) = inprocess_hooks(RunConfig(num_steps=3, warmup_steps=0, profile_steps=1, profilers=["pytorch"]), tmp_path)
    assert hook.memory
    train([hook], mlp(), 3)
    result = hook.on_train_end()
    assert "memory_timeline.json.gz" in result.artifacts, result.note


class FakeProfiler:
    """What _on_trace_ready calls on torch's profiler; records the memory timeline's device."""

    class Averages(list):
        def table(self, **_):
            return ""

    def __init__(self):
        self.memory_device = None

    def export_chrome_trace(self, path):
        Path(path).write_bytes(b"")

    def key_averages(self):
        return self.Averages()

    def export_memory_timeline(self, path, device):
        self.memory_device = device


@pytest.mark.parametrize(("device", "expected"), [("cuda", "cuda:3"), ("cuda:1", "cuda:1"), ("cpu", "cpu")])
def test_memory_timeline_names_the_device_with_its_index(tmp_path, monkeypatch, device, expected):
    """torch's export_memory_timeline matches the device string: `cuda` gave an empty timeline on
    an H100 (0 points) where `cuda:0` gave 82; a device without an index takes the current one."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    (hook,) = inprocess_hooks(RunConfig(num_steps=3, warmup_steps=0, profilers=["pytorch"]), tmp_path)
    hook.memory, hook.device = True, torch.device(device)
    hook.out_dir.mkdir(parents=True)
    prof = FakeProfiler()
    hook._on_trace_ready(prof)
    assert prof.memory_device == expected and not hook.notes


@pytest.mark.skipif(not HAS_DEEPSPEED, reason="deepspeed is not installed")
def test_deepspeed_profiles_exactly_one_forward(tmp_path):
    cfg = RunConfig(num_steps=4, warmup_steps=2, profilers=["deepspeed"])
    (hook,) = inprocess_hooks(cfg, tmp_path)
    train([hook], mlp(), 4)
    result = hook.on_train_end()
    out = tmp_path / "profiles" / "deepspeed"
    flops = json.loads((out / "flops.json").read_text())
    # Linear(16,32): 2*8*16*32; ReLU: 8*32; Linear(32,4): 2*8*32*4 (bias not counted) = one forward, batch 8
    assert (flops["flops"], flops["macs"], flops["params"]) == (2 * 8 * 16 * 32 + 8 * 32 + 2 * 8 * 32 * 4, 5120, 676)
    assert flops["step"] == 2 and flops["fwd_latency_s"] > 0
    assert flops["achieved_tflops"] == pytest.approx(flops["flops"] / flops["fwd_latency_s"] / 1e12)
    assert flops["peak_tflops"] is None and flops["mfu"] is None and flops["device"] == "cpu"
    assert flops["note"].startswith("forward only; work inside Triton kernels is not counted")
    assert [m["module"] for m in flops["modules"]] == ["Sequential", "0", "1", "2"]
    assert flops["modules"][1]["flops"] == 2 * 8 * 16 * 32
    assert (out / "flops_profile.txt").read_text().count("DeepSpeed Flops Profiler") == 1
    assert (out / "modules.csv").read_text().startswith("module,type,depth,params,macs,flops,latency_s")
    assert result.table is None and result.format == "deepspeed-flops" and "GFLOP forward" in result.note


@pytest.mark.skipif(not HAS_DEEPSPEED, reason="deepspeed is not installed")
def test_deepspeed_mfu_on_a_known_gpu_and_graph_mode(tmp_path, monkeypatch):
    from tinylab.profilers import deepspeed as ds

    monkeypatch.setattr(ds, "_device_name", lambda device: "NVIDIA H100 80GB HBM3")
    cfg = RunConfig(version="v3", num_steps=2, warmup_steps=0, precision="bf16", profilers=["deepspeed"])
    hook = get_adapter("deepspeed").make_hook(cfg, tmp_path)
    hook.on_train_start(mlp(), SimpleNamespace(type="cuda"))
    hook.on_step_start(0)
    hook.model(torch.randn(8, 16))
    hook.on_step_end(0)  # CUDA-graph mode: no on_forward_end
    hook.on_train_end()
    flops = json.loads((tmp_path / "flops.json").read_text())
    assert flops["peak_tflops"] == 989.4 and flops["mfu"] == pytest.approx(flops["achieved_tflops"] / 989.4)
    assert "v3 runs RMSNorm/RoPE/SwiGLU/attention in Triton kernels" in flops["note"]
    assert "stopped at the step end" in flops["note"]


def test_deepspeed_missing_is_a_user_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "deepspeed", None)  # import deepspeed -> ImportError
    monkeypatch.setitem(sys.modules, "deepspeed.profiling.flops_profiler", None)
    with pytest.raises(UserError, match="profiler deepspeed cannot load: .*fix: pip install deepspeed"):
        inprocess_hooks(RunConfig(profilers=["deepspeed"]), tmp_path)


def test_deepspeed_availability_is_truthful():
    status = get_adapter("deepspeed").available()
    if HAS_DEEPSPEED:
        from importlib.metadata import version

        assert status.available and status.version == version("deepspeed")
    else:
        assert status == type(status)(False, "deepspeed is not installed", None)


# ----------------------------------------------------------------------------- telemetry
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
    stop = telemetry.start_sampler(lambda kind, **f: events.append((kind, f)), interval_s=0.01)
    assert stop is not None
    deadline = time.monotonic() + 5
    while len(events) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert events[0] == ("telemetry", {"gpu_util_pct": 37.0, "mem_used_mb": 3072.0, "power_w": None, "sm_clock_mhz": 1755.0})
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
    stop = telemetry.start_sampler(lambda kind, **f: events.append(f), interval_s=10)
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert events[0] == {"gpu_util_pct": 88.0, "mem_used_mb": 4096.0, "power_w": 512.0, "sm_clock_mhz": 2100.0}


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

    def emit(kind, **fields):
        raise OSError("events file closed")

    stop = telemetry.start_sampler(emit, interval_s=0.01)
    time.sleep(0.05)
    stop()


# ----------------------------------------------------------------------------- end to end
TINY = ["--device", "cpu", "--hidden-dim", "32", "--num-layers", "1", "--num-heads", "2", "--num-kv-heads", "2",
        "--seq-len", "16", "--batch-size", "2", "--num-steps", "3", "--warmup-steps", "1", "--vocab-size", "64"]


def tinylab(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True, timeout=180,
                          cwd=REPO, env={**os.environ, **(env or {})})


def test_profiled_run_stores_its_kernel_tables(tmp_path, capsys):
    """`tinylab train --profile pytorch --profile rocprofv3` (the stand-in, wrapping the real
    trainer): each tool's table lands in profiles/<tool>/kernels.csv with a profile event, and
    `tinylab hotspots <run>` reads the newest one (the wrapper's, collected after the trainer exits)."""
    env = {"PATH": str(BIN) + os.pathsep + os.environ["PATH"], "TINYLAB_GPU_VENDORS": "amd"}
    runs = str(tmp_path / "runs")
    proc = tinylab("train", *TINY, "--profile", "pytorch", "--profile", "rocprofv3", "--runs-dir", runs, "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    profiles = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if '"profile"' in line]
    assert [(p["tool"], p["kernel_table"], p["format"]) for p in profiles] == [
        ("pytorch", "profiles/pytorch/kernels.csv", "pytorch-operators"),
        ("rocprofv3", "profiles/rocprofv3/kernels.csv", "rocprofv3-kernel-stats"),
    ]
    assert "CPU run" in profiles[0]["note"] and "trace.json.gz" in profiles[0]["artifacts"]
    assert main(["hotspots", "last", "--runs-dir", runs, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == "last" and data["format"] == "rocprofv3-kernel-stats"
    truncated = samples.expected_from_dispatches(
        samples.rocm7_dispatches(samples.FIXTURES / "rocprofv3/rocm7-docs-data/kernel_trace_truncated.csv"))
    assert {k["name"]: k["calls"] for k in data["kernels"]} == {k: v[0] for k, v in truncated.items()}


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
    stop = telemetry.start_sampler(lambda kind, **f: events.append(f), 1, "0000:c1:00.0", interval_s=10)
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert events and events[0]["gpu_util_pct"] == 37.0
