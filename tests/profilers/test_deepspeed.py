"""The DeepSpeed adapter (tinylab/profilers/deepspeed.py): its hook profiles one forward and writes
its FLOPs and MFU, a missing deepspeed is a user error, and its availability probe is truthful and
never imports from the caller's folder."""

from __future__ import annotations

import importlib.util
import json
import sys
from types import SimpleNamespace

import pytest
import torch
from support.foreign import plant
from support.training import mlp, train

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.profilers import deepspeed
from tinylab.profilers.registry import get_adapter, inprocess_hooks

HAS_DEEPSPEED = importlib.util.find_spec("deepspeed") is not None


def test_the_probe_never_imports_from_the_callers_folder(tmp_path, monkeypatch):
    """`python -c "import deepspeed"` imported a deepspeed.py (or torch.py) from the folder
    `tinylab doctor` was started in."""
    if importlib.util.find_spec("deepspeed") is None:
        pytest.skip("deepspeed is not installed: the probe starts no child")
    sentinel = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    found = deepspeed.DeepSpeedAdapter().available()
    assert not sentinel.exists(), sentinel.read_text()
    assert found.reason is None or "import deepspeed failed" in found.reason


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
