"""Analytic FLOP counts and device peak rates, for MFU and the roofline.

Kept torch-free: the TUI and `compare` use it on stored configs. Counts are for the matmuls
(2 FLOPs per multiply-add); attention counts only the causal half it must compute, so MFU is
not flattered by work a causal kernel skips. Backward is twice the forward.
"""

from __future__ import annotations

from tinylab.config import RunConfig

#: Dense peak TFLOP/s by device-name substring (vendor datasheets, no sparsity).
#: Order matters: the first match wins, so more specific names come first.
DEVICE_PEAKS_TFLOPS: list[tuple[str, dict[str, float]]] = [
    ("H100 PCIe", {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0}),
    ("H100", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}),
    ("H200", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}),
    ("GH200", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}),
    ("A100", {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}),
    ("L40S", {"fp32": 91.6, "tf32": 183.0, "bf16": 362.0, "fp16": 362.0}),
    ("MI325X", {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4}),
    ("MI300X", {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4}),
    ("MI300A", {"fp32": 122.6, "tf32": 490.3, "bf16": 980.6, "fp16": 980.6}),
    ("MI250X", {"fp32": 47.9, "tf32": 47.9, "bf16": 383.0, "fp16": 383.0}),
    ("MI250", {"fp32": 45.3, "tf32": 45.3, "bf16": 362.1, "fp16": 362.1}),
    ("MI210", {"fp32": 22.6, "tf32": 22.6, "bf16": 181.0, "fp16": 181.0}),
]


def device_peak_tflops(device_name: str | None, precision: str, tf32: bool = False) -> float | None:
    """Peak dense rate for this device and precision, or None when the device is unknown."""
    if not device_name:
        return None
    key = "tf32" if precision == "fp32" and tf32 else precision
    for pattern, peaks in DEVICE_PEAKS_TFLOPS:
        if pattern.lower() in device_name.lower():
            return peaks.get(key)
    return None


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
