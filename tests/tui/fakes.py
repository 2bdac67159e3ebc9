"""Fake run folders and doctor report for the lab's tests and benchmarks.

Runs are written exactly as the trainer and supervisor write them (config.json, events.jsonl,
output.log, process.json, profiles/<tool>/kernels.csv), with fixed ids and times, so that
screens built from them are stable enough for snapshots.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from support.paths import FIX
from support.runs import rank_events

from tinylab.config import RunConfig
from tinylab.runs.store import mark_run
from tinylab.service.doctor import DoctorReport

#: The frozen "now" of every test app: a little after the fake runs started.
NOW = 1795662000.0
TINY = dict(device="cpu", hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2, seq_len=16, batch_size=2,
            num_steps=6, warmup_steps=1)

#: name, calls, total_ns, category (as tinylab.analysis.hotspots.categorize names them)
KERNELS = [
    ("ampere_sgemm_128x64_tn", 240, 41_200_000, "gemm"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_nt_align4>(Params)", 120, 22_500_000, "gemm"),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, float>, true>", 48, 9_800_000,
     "attention"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
     960, 7_400_000, "elementwise"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)", 24, 3_100_000,
     "reduction"),
    ("rms_norm_kernel<float>", 408, 2_900_000, "norm"),
    ("triton_poi_fused_mul_silu_0", 192, 2_200_000, "triton"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float> > > >", 96, 1_300_000, "reduction"),
    ("Memcpy DtoD (Device -> Device)", 72, 600_000, "memcpy"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::FillFunctor<float> > >",
     300, 450_000, "elementwise"),
]


#: What the ranks of a run of several add: NCCL's all-reduce of the gradients.
COMM_KERNELS = [("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 48, 8_200_000,
                 "communication")]


def write_kernels(path: Path, kernels: list[tuple[str, int, int, str]], scale: float = 1.0) -> None:
    """A kernels.csv in the normalized columns."""
    total = sum(k[2] for k in kernels) * scale
    lines = ["name,calls,total_ns,avg_ns,min_ns,max_ns,pct,category"]
    for name, calls, t, category in kernels:
        t = t * scale
        avg = t / calls
        lines.append(",".join([json.dumps(name), str(calls), f"{t:.0f}", f"{avg:.1f}", f"{avg * 0.8:.1f}",
                               f"{avg * 1.5:.1f}", f"{100 * t / total:.4f}", category]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_run(
    root: Path,
    run_id: str,
    *,
    version: str = "v1",
    status: str = "finished",
    steps: int = 20,
    step_ms: float = 40.0,
    gpu: bool = True,
    profile: bool = True,
    kernel_scale: float = 1.0,
    alive_pid: int | None = None,
    ranks: int = 1,
    counter_pass: tuple[int, int] | None = None,
    **overrides: Any,
) -> Path:
    """A run folder as the engine leaves it. status: finished, failed, running (needs alive_pid).

    ranks > 1: a DDP run of that many ranks, rank 1 the straggler, each rank profiled apart.
    counter_pass=(k, n): profiled by rocprof-compute and now in its counter pass k of n: pass 1
    wrote the run's steps and summary, passes 2..k announced themselves (tinylab/runs/passes.py).
    """
    started = NOW - 600 + int(run_id[-4:], 16) % 300
    if ranks > 1:
        overrides = {"parallel": "ddp", "nproc_per_node": ranks, **overrides}
    cfg = RunConfig(version=version, **{**TINY, "num_steps": steps, "device": "cuda" if gpu else "cpu",
                                        **overrides})
    if profile:
        cfg.profilers = ["pytorch"]
    if counter_pass:
        cfg.profilers = ["rocprof-compute"]
    cfg = cfg.resolved()
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    mark_run(run_dir)
    (run_dir / "config.json").write_text(cfg.to_json() + "\n", encoding="utf-8")
    if alive_pid is not None:
        import psutil

        proc = {"pid": alive_pid, "pgid": alive_pid, "start_time": psutil.Process(alive_pid).create_time(),
                "launched_at": started, "argv": ["fake"]}
    else:
        proc = {"pid": 2**22 + 17, "pgid": 2**22 + 17, "start_time": started, "launched_at": started,
                "argv": ["fake"]}
    (run_dir / "process.json").write_text(json.dumps(proc), encoding="utf-8")
    events: list[dict[str, Any]] = []
    log: list[str] = ["$ python -m tinylab.training.trainer --config config.json"]
    device_name = "NVIDIA H100 80GB HBM3" if gpu else "x86_64"
    events.append({"event": "start", "time": started + 2, "config": cfg.to_dict(), "device": "cuda:0" if gpu else "cpu",
                   "device_name": device_name, "torch": "2.13.0", "triton": "3.7.1", "python": "3.11.7",
                   "pid": 4242, "params_total": 20, "param_tensors": 20, "model_flops_per_step": 3.6e7})
    log.append(f"tinylab {version} on {device_name} | 187,200 parameters in 20 tensors | batch 2 x seq 16 | fp32")
    pass_event = {"event": "pass", "planned": counter_pass[1], "tool": "rocprof-compute"} if counter_pass else {}
    if counter_pass:
        events.append({**pass_event, "time": started + 2, "pass": 1, "steps": steps})
    done = steps if status == "finished" or counter_pass else min(steps, 4 if status == "failed" else steps // 2)
    for step in range(done):
        ms = step_ms * (1.6 if step == 0 else 1.0 + 0.05 * ((step * 7) % 5 - 2))
        loss = 6.93 - 0.04 * step
        event = {"event": "step", "time": started + 3 + step * ms / 1000, "step": step, "loss": loss,
                 "step_ms": ms, "fwd_ms": ms * 0.3, "bwd_ms": ms * 0.55, "opt_ms": ms * 0.15,
                 "samples_per_s": 2 * ranks / (ms / 1000), "tokens_per_s": 32 * ranks / (ms / 1000),
                 "mem_alloc_mb": 812.0 + step if gpu else None, "mem_peak_mb": 1490.0 + 3 * step if gpu else None,
                 "warmup": step < cfg.warmup_steps}
        events.append(event)
        log.append(f"step {step + 1:4d}/{steps} | loss {loss:8.4f} | {ms:8.2f} ms | "
                   f"{event['samples_per_s']:8.1f} samples/s")
        if gpu:
            events.append({"event": "telemetry", "time": started + 3 + step * 0.5, "gpu_util_pct": 60 + step % 30,
                           "mem_used_mb": 2048 + 10 * step, "power_w": 310 + 5 * (step % 7), "sm_clock_mhz": 1980})
    for rank in range(ranks) if profile and status != "running" else ():
        folder = "profiles/pytorch" + (f"/rank{rank}" if ranks > 1 else "")
        rel = f"{folder}/kernels.csv"
        # each rank of several all-reduces its gradients; rank 1 computes slower (the straggler)
        write_kernels(run_dir / rel, KERNELS + COMM_KERNELS if ranks > 1 else KERNELS,
                      kernel_scale * (1.3 if rank == 1 else 1.0))
        # real traces: an H100 step of a tiny model (GPU runs), a tinylab CPU run with its memory timeline
        artifacts = {"trace.json.gz": f"{folder}/trace.json.gz", "kernels.csv": rel}
        if gpu:
            shutil.copy(FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz", run_dir / artifacts["trace.json.gz"])
        else:
            artifacts["memory_timeline.json.gz"] = f"{folder}/memory_timeline.json.gz"
            for name, rel_path in artifacts.items():
                if name != "kernels.csv":
                    shutil.copy(FIX / "pytorch-profiler/tinylab_cpu_v1_memory" / name, run_dir / rel_path)
        events.append({"event": "profile", "time": started + 5, "tool": "pytorch",
                       "artifacts": artifacts,
                       "kernel_table": rel, "format": "pytorch-trace",
                       "note": "steps 2..4 profiled (wait 1, warm-up 1)" + ("" if gpu else  # as a CPU run's says
                               "; CPU run: no device kernels; table shows operators by self CPU time"),
                       **({"rank": rank} if ranks > 1 else {})})
    if status == "finished" or counter_pass:
        med = step_ms
        events += rank_events(ranks, started + 9, med, gpu) if ranks > 1 else []
        events.append({"event": "summary", "time": started + 9, "samples_per_s": 2 * ranks / (med / 1000),
                       "tokens_per_s": 32 * ranks / (med / 1000), "step_ms_median": med, "step_ms_p10": med * 0.95,
                       "step_ms_p90": med * 1.08, "fwd_ms_median": med * 0.3, "bwd_ms_median": med * 0.55,
                       "opt_ms_median": med * 0.15, "peak_mem_mb": 1550.0 if gpu else None,
                       "initial_loss": 6.93, "final_loss": 6.93 - 0.04 * (steps - 1), "params_trained": 20,
                       "params_total": 20, "model_flops_per_step": 3.6e7, "mfu": 0.031 if gpu else None,
                       "steps": steps, "measured_steps": steps - 1,
                       **({"world_size": ranks, "slowest_rank": 1, "comm_ms": 0.21 * med, "comm_hidden": 0.64}
                          if ranks > 1 else {})})
        log += ["summary (medians after warm-up)", f"  samples/s      {2 * ranks / (med / 1000):,.1f}"]
    for number in range(2, (counter_pass or (1,))[0] + 1):  # each later pass: a start-up and 3 steps
        events.append({**pass_event, "time": started + 10 + 4 * (number - 2), "pass": number, "steps": 3})
        log.append(f"counter pass {number} of {counter_pass[1]} (rocprof-compute runs the program once per group "
                   f"of hardware counters): training 3 steps, events in events.pass{number}.jsonl")
    if status == "finished":  # after the last counter pass
        events.append({"event": "exit", "time": started + 10 + 4 * ((counter_pass or (1,))[0] - 1), "returncode": 0,
                       "signal": None})
    elif status == "failed":
        message = "loss became nan at step 3"
        events.append({"event": "error", "time": started + 8, "type": "FloatingPointError", "message": message,
                       "traceback": "Traceback (most recent call last):\n  File \"tinylab/training/trainer.py\", line 286, "
                                    "in _record_step\n    raise FloatingPointError(...)\n"
                                    f"FloatingPointError: {message}\n"})
        events.append({"event": "exit", "time": started + 9, "returncode": 1, "signal": None})
        log.append(f"error: FloatingPointError: {message}")
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    (run_dir / "output.log").write_text("\n".join(log) + "\n", encoding="utf-8")
    return run_dir


def make_store(root: Path) -> Path:
    """Three runs: v1 and v2 finished and profiled on a (fake) H100, and a failed v3."""
    make_run(root, "20261126-020000-a1a1", version="v1", step_ms=42.0)
    make_run(root, "20261126-021000-b2b2", version="v2", step_ms=27.0, kernel_scale=0.62)
    make_run(root, "20261126-022000-c3c3", version="v3", status="failed", profile=False)
    return root


def fake_doctor() -> DoctorReport:
    def missing(reason: str, fix: str, kind: str = "wrapper") -> dict[str, Any]:
        return {"available": False, "reason": reason, "version": None, "kind": kind, "description": "", "fix": fix}

    return DoctorReport.from_json({
        "os": {"system": "Linux", "release": "6.8.0", "machine": "x86_64"},
        "python": {"version": "3.11.7", "executable": "/opt/venv/bin/python"},
        "gpu": None,
        "packages": {"torch": "2.13.0+cpu", "triton": "3.7.1", "deepspeed": None, "textual": "8.2.8",
                     "pandas": "3.1.1"},
        "profilers": {
            "pytorch": {"available": True, "reason": None, "version": "2.13.0+cpu", "kind": "in-process",
                        "description": "", "fix": None},
            "deepspeed": missing("deepspeed is not installed", "pip install -e '.[deepspeed]'", "in-process"),
            "rocprofv3": missing("rocprofv3 not found on PATH", "install ROCm >= 6.2; needs an AMD GPU"),
            "rocprof-sys": missing("rocprof-sys-run not found on PATH", "install ROCm >= 6.3 with rocprofiler-systems"),
            "rocprof-compute": missing("rocprof-compute not found on PATH", "install ROCm >= 6.3 with rocprofiler-compute"),
            "ncu": missing("ncu not found on PATH", "install Nsight Compute; needs an NVIDIA GPU"),
            "nsys": missing("nsys not found on PATH", "install Nsight Systems; needs an NVIDIA GPU"),
            "proton": {**missing("triton 3.7.1 found, but no GPU is visible", "proton comes with triton and needs a GPU",
                                 "in-process"), "version": "3.7.1",
                       "backends": ["cupti (auto on NVIDIA)", "roctracer (auto on AMD)", "instrumentation"]},
        },
    })
