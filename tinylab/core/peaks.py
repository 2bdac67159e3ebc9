"""Dense peak TFLOP/s of the GPUs tinylab knows, by precision: the denominator of MFU and the
roofline's compute roof, and what the DeepSpeed FLOPS profiler's report is read against.
"""

from __future__ import annotations

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
