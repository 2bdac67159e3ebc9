"""The PyTorch profiler's hook (tinylab/profilers/pytorch.py): its schedule after the warm-up, its
trace and operator tables on a CPU, and the memory timeline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.training import mlp, train

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.config import RunConfig
from tinylab.core.window import GRAPH_WARMUP_ITERS, profile_schedule
from tinylab.profilers.base import write_kernel_table
from tinylab.profilers.registry import inprocess_hooks
from tinylab.profilers.pytorch import OPERATOR_COLUMNS


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


def test_a_graphed_ddp_rank_is_recorded_after_its_longer_warm_up(tmp_path):
    """One graphed DDP rank trains 11 eager steps before its capture (the trainer reads the same
    RunConfig.graph_warmup_iters): its replays start at step 12."""
    graphed = RunConfig(version="v4", num_steps=20, warmup_steps=2, cuda_graph=True, parallel="ddp",
                        profilers=["pytorch"])
    assert graphed.graph_warmup_iters == 11
    (hook,) = inprocess_hooks(graphed, tmp_path)
    assert hook.schedule == (11, 1, 3) and hook.clean_from == 12


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


def test_pytorch_hook_memory_timeline_opt_in(tmp_path):
    cfg = RunConfig(num_steps=3, warmup_steps=0, profile_steps=1, profilers=["pytorch"], profile_memory=True)
    (hook,) = inprocess_hooks(cfg, tmp_path)
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
