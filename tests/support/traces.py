"""Hand-made PyTorch profiler (Kineto) traces with known answers, and the real traces the step
anatomy is checked on (tests/analysis/test_timeline.py; its text: tests/render/test_timeline.py)."""

from __future__ import annotations

import gzip
import json

from support.paths import FIX

H100 = FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"
CPU_RUN = FIX / "pytorch-profiler" / "tinylab_cpu_v1_memory"
V4_GRAPH = FIX / "pytorch-profiler" / "tinylab_h100_v4_graph"
DDP2 = FIX / "pytorch-profiler" / "tinylab_cpu_ddp2"


def host(name, ts, dur, cat="user_annotation", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def kernel(name, ts, dur, corr, stream=7, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr}}


def launch(ts, corr):
    return host("cudaLaunchKernel", ts, 2, cat="cuda_runtime", correlation=corr)


def two_step_trace() -> dict:
    """Step 5 [0, 100) µs: forward [0, 40), backward [40, 80), optimizer [80, 95).
    GPU: k1 [10, 20) and k2 [15, 30) on two streams overlap (union [10, 30)), a copy [50, 55),
    k3 launched at 81 in the optimizer runs [90, 110): past the window, so 10 µs of it count in
    step 5 and 10 µs in step 6. Step 6 [100, 200): k4 [150, 160), launched at 120 in its forward."""
    return {"baseTimeNanoseconds": 1_000_000, "traceEvents": [
        host("ProfilerStep#5", 0, 100), host("forward", 0, 40), host("backward", 40, 40), host("optimizer", 80, 15),
        host("ProfilerStep#6", 100, 100), host("forward", 100, 50),
        launch(5, 1), launch(12, 2), launch(45, 3), launch(81, 4), launch(120, 5),
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel", 10, 10, 1),
        kernel("_attn_fwd_kernel", 15, 15, 2, stream=8),
        kernel("Memcpy DtoD (Device -> Device)", 50, 5, 3, cat="gpu_memcpy"),
        kernel("_adamw_kernel", 90, 20, 4),
        kernel("_rmsnorm_fwd_kernel", 150, 10, 5),
    ]}


def write(tmp_path, doc, name="trace.json.gz"):
    path = tmp_path / name
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return path


def gpu_copy(name, ts, dur, stream=7):
    """Kineto's copy of a host range on the GPU timeline (as on an H100, torch 2.11: pid = device)."""
    return {"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream}}
