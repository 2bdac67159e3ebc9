"""Every pre-launch check in one place: what would fail is refused before a run folder exists."""

from __future__ import annotations

import pytest
from support.runs import tiny_config

from tinylab.config import ConfigError
from tinylab.core.errors import UserError
from tinylab.service.lab import Lab
from tinylab.service.launch import check_run
from tinylab.service.machine import Machine


def test_a_good_config_passes_and_comes_back_validated():
    cfg = tiny_config()
    assert check_run(cfg, Machine()) is cfg


@pytest.mark.parametrize("overrides, machine, error, message", [
    ({"version": "v2", "cuda_graph": True}, Machine(), ConfigError, "--cuda-graph needs a GPU"),
    ({"device": "cuda"}, Machine(), ConfigError, "no CUDA/ROCm GPU is visible"),
    ({"device": "cuda:3"}, Machine(1, "nvidia"), ConfigError, "this machine has 1 GPU"),
    ({"num_heads": 5}, Machine(), ConfigError, "--num-heads 5 must divide --hidden-dim 64"),
    ({"profilers": ["rocprofv3"]}, Machine(), UserError, "profiler 'rocprofv3' is not available here"),
    # the allocator failed 30-45 s into these, after a size estimate that left out the logits and scores
    ({"seq_len": 16384}, Machine(host_memory_bytes=32 << 30), ConfigError, "of it eager attention's .* scores"),
    ({"vocab_size": 1 << 20, "batch_size": 256}, Machine(host_memory_bytes=32 << 30), ConfigError, "of it the loss.s logits"),
    ({"parallel": "ddp", "nproc_per_node": 256}, Machine(host_memory_bytes=64 << 30, cpus=2), ConfigError,
     "256 starts that many training processes on this machine's 2 CPU cores"),
    ({"parallel": "ddp", "nproc_per_node": 16}, Machine(host_memory_bytes=4 << 30, cpus=64), ConfigError,
     "each of 16 ranks' share of this machine"),
])
def test_what_the_trainer_would_refuse_is_refused_first(tmp_path, overrides, machine, error, message, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no profiler executable anywhere
    lab = Lab(tmp_path / "runs", machine=lambda: machine)
    cfg = tiny_config().__class__(**{**tiny_config().to_dict(), **overrides})
    with pytest.raises(error, match=message):
        lab.launch(cfg)
    assert lab.records() == [] and not (tmp_path / "runs").exists()


def test_the_trainer_applies_the_same_device_rules():
    """RunConfig.check_device is what both the pre-launch check and the trainer call."""
    cfg = tiny_config(version="v2", cuda_graph=True)
    with pytest.raises(ConfigError, match="--cuda-graph needs a GPU"):
        cfg.check_device("cpu")
    assert cfg.check_device("cuda") is cfg
