"""tinylab/config/flops.py: the analytic FLOP count behind MFU and the roofline, checked against what
torch's FlopCounterMode counts on the real v1 model, and the peak-rate lookup by device name."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from models import build_model
from tinylab.config import RunConfig
from tinylab.config.flops import mfu, training_flops_per_step
from tinylab.core.peaks import device_peak_tflops


def counted_flops(cfg: RunConfig) -> tuple[int, int]:
    """FLOPs torch counts in v1's forward, and in forward + backward, on one batch."""
    torch.manual_seed(0)
    model = build_model(cfg)
    idx = torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len))
    with FlopCounterMode(display=False) as fwd:
        model(idx, idx)
    with FlopCounterMode(display=False) as both:
        model(idx, idx).backward()
    return fwd.get_total_flops(), both.get_total_flops()


@pytest.mark.parametrize("kw", [
    dict(hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=4, seq_len=32, batch_size=3),
    dict(hidden_dim=96, num_layers=3, num_heads=6, num_kv_heads=2, seq_len=24, batch_size=2),  # GQA
])
def test_the_count_is_torchs_matmul_count_with_causal_attention(kw):
    cfg = RunConfig(version="v1", vocab_size=256, **kw).validate()
    fwd, both = counted_flops(cfg)
    assert both == 3 * fwd  # every matmul's backward is two matmuls of its size
    # v1's eager attention multiplies the full S x S scores; tinylab counts the causal half it needs
    b, s, h, hd, layers = cfg.batch_size, cfg.seq_len, cfg.num_heads, cfg.head_dim, cfg.num_layers
    full = layers * 2 * 2 * b * h * s * s * hd
    causal = layers * 2 * 2 * b * h * s * (s + 1) / 2 * hd
    assert training_flops_per_step(cfg) == pytest.approx(both - 3 * (full - causal), rel=1e-12)


@pytest.mark.parametrize(("name", "precision", "tf32", "peak"), [
    ("NVIDIA H100 PCIe", "fp32", False, 51.2),  # before the plain "H100"
    ("NVIDIA H100 80GB HBM3", "bf16", False, 989.4),
    ("NVIDIA H100 80GB HBM3", "fp32", True, 494.7),
    ("AMD Instinct MI300X", "fp16", False, 1307.4),
    ("AMD Instinct MI250X / MI250", "fp32", True, 47.9),  # no TF32 on CDNA2: the fp32 rate
])
def test_the_peak_rate_comes_from_the_device_name(name, precision, tf32, peak):
    assert device_peak_tflops(name, precision, tf32) == peak


def test_an_unknown_device_has_no_peak_and_no_mfu():
    cfg = RunConfig(version="v1", hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=4, seq_len=32).validate()
    assert device_peak_tflops("Intel Xeon", "fp32") is None
    assert device_peak_tflops(None, "fp32") is None
    assert mfu(cfg, 10.0, "Intel Xeon") is None
    assert mfu(cfg, None, "NVIDIA H100 80GB HBM3") is None


def test_mfu_is_the_step_rate_over_the_peak():
    cfg = RunConfig(version="v1", precision="bf16", hidden_dim=64, num_layers=2, num_heads=4,
                    num_kv_heads=4, seq_len=32).validate()
    got = mfu(cfg, 2.0, "NVIDIA H100 80GB HBM3")
    assert got == pytest.approx(training_flops_per_step(cfg) / 2e-3 / 989.4e12)
