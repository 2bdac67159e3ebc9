"""Analytic FLOP counts, for MFU and the roofline (the devices' peak rates are tinylab/core/peaks.py).

Kept torch-free: the TUI and `compare` use it on stored configs. Counts are for the matmuls
(2 FLOPs per multiply-add); attention counts only the causal half it must compute, so MFU is
not flattered by work a causal kernel skips. Backward is twice the forward.
"""

from __future__ import annotations

from tinylab.config import RunConfig
from tinylab.core.peaks import device_peak_tflops

def forward_flops_per_token(cfg: RunConfig) -> float:
    d, hd = cfg.hidden_dim, cfg.head_dim
    q_dim, kv_dim = cfg.num_heads * hd, cfg.num_kv_heads * hd
    avg_keys = (cfg.seq_len + 1) / 2  # causal: token t attends to t+1 keys
    per_layer = (
        2 * d * (q_dim + 2 * kv_dim)  # q, k, v projections
        + 2 * q_dim * d  # output projection
        + 3 * 2 * d * cfg.ffn_dim  # gate, up, down
        + 2 * 2 * cfg.num_heads * hd * avg_keys  # scores and weighted values
    )
    return cfg.num_layers * per_layer + 2 * d * cfg.vocab_size  # + tied output projection


def training_flops_per_step(cfg: RunConfig) -> float:
    """Forward + backward (2x forward) FLOPs of one optimizer step."""
    return 3 * forward_flops_per_token(cfg) * cfg.batch_size * cfg.seq_len


def mfu(cfg: RunConfig, step_ms: float | None, device_name: str | None) -> float | None:
    peak = device_peak_tflops(device_name, cfg.precision, cfg.tf32)
    if not peak or not step_ms:
        return None
    return training_flops_per_step(cfg) / (step_ms / 1e3) / (peak * 1e12)
