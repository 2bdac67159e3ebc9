"""The advisor's test data: Facts of the real traces of tests/fixtures (an eager H100 step, a graphed
H100 v4 step with its run's step events, a 2-rank CPU DDP run) and summaries written by hand, for
the rules' unit tests; and a finished run folder, tiny, v1 on a CPU, under the missing-init fault,
written by hand (its first loss 40, 6x ln(1000)), so that its one advice item, bad-init, can be tried."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

from support.paths import FIX
from support.runs import make_run

from tinylab.analysis.advice import Facts
from tinylab.analysis.timeline import analyze, trainer_timing
from tinylab.core.events import RankEvent, StepEvent, Summary
from tinylab.runs.store import Run

PT = FIX / "pytorch-profiler"
H100_EAGER = PT / "cuda_h100" / "torchprof_trace.json.gz"  # a tiny LLaMA's eager step: 95% idle, 2 µs kernels
H100_V4 = PT / "tinylab_h100_v4_graph"  # v4 fp32, the workshop's size, one graph replay a step
DDP2 = PT / "tinylab_cpu_ddp2"  # v1 under DDP on 2 CPU ranks, gloo
H100 = "NVIDIA H100 80GB HBM3"


def summary(**fields) -> Summary:
    base = dict(step_ms_median=10.0, step_ms_p10=9.8, step_ms_p90=10.2, initial_loss=6.9, final_loss=6.5,
                params_trained=74, params_total=74, measured_steps=20, steps=25)
    return Summary(**{**base, **fields})


def config(**fields) -> dict:
    base = dict(version="v1", vocab_size=1000, hidden_dim=512, num_layers=8, num_heads=8, num_kv_heads=4,
                batch_size=8, seq_len=128, num_steps=25, warmup_steps=5, precision="fp32", tf32=False, device="cuda",
                qkv_fusion=False, sdpa=False, swiglu_fusion=False, torch_compile=False, cuda_graph=False,
                recompute_ffn=False, profilers=["pytorch"], profile_steps=3)
    return {**base, **fields}


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def v4_graph_facts(**fields) -> Facts:
    """The H100 v4 fp32 graphed run: its trace, its step events, a summary made from them."""
    steps = jsonl(H100_V4 / "steps.jsonl")
    analyzed = analyze(H100_V4 / "trace.json.gz")
    timeline = dataclasses.replace(analyzed, ranks=(), timed=trainer_timing(steps, analyzed)).to_json()
    measured = sorted(e["step_ms"] for e in steps if not e["warmup"])
    s = summary(step_ms_median=statistics.median(measured), step_ms_p10=measured[len(measured) // 10],
                step_ms_p90=measured[len(measured) * 9 // 10], measured_steps=len(measured), steps=len(steps),
                peak_mem_mb=960.0)
    base = dict(source="v4", config=config(version="v4", cuda_graph=True, num_steps=20), status="finished",
                device="cuda:0", device_name=H100, device_memory_mb=81_559.0, summary=s,
                steps=tuple(StepEvent.from_event(e) for e in steps), timeline=timeline, trace="trace.json.gz")
    return Facts(**{**base, **fields})


def eager_facts(**fields) -> Facts:
    """The eager H100 trace as a v1 fp32 run's profile (its one window, 17 ms, is the step)."""
    timeline = analyze(H100_EAGER).to_json()
    wall = timeline["steps"][0]["wall_ms"]
    base = dict(source="v1", config=config(), status="finished", device="cuda:0", device_name=H100,
                summary=summary(step_ms_median=wall, step_ms_p10=0.97 * wall, step_ms_p90=1.03 * wall),
                timeline=timeline, trace="torchprof_trace.json.gz")
    return Facts(**{**base, **fields})


def ddp2_facts(**fields) -> Facts:
    s = Summary.from_event(jsonl(DDP2 / "summary.jsonl")[0])
    ranks = tuple(RankEvent.from_event(e) for e in jsonl(DDP2 / "rank_events.jsonl"))
    base = dict(source="ddp2", config=config(parallel="ddp", nproc_per_node=2, device="cpu", hidden_dim=64,
                                              num_layers=1, num_kv_heads=2, seq_len=32, batch_size=2),
                status="finished", device="cpu", device_name="x86_64", summary=s, ranks=ranks)
    return Facts(**{**base, **fields})


A = "20260101-000000-aaaa"


def bad_init_run(root: Path, run_id: str = A, **config) -> Run:
    start = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64", "config": {}}
    steps = [{"event": "step", "step": i, "loss": 40.0 - 4 * i, "step_ms": 10.0 + i % 2, "warmup": i < 2}
             for i in range(8)]
    summary = {"event": "summary", "time": 2.0, "step_ms_median": 10.5, "step_ms_p10": 10.0, "step_ms_p90": 11.0,
               "initial_loss": 40.0, "final_loss": 12.0, "params_trained": 20, "params_total": 20, "measured_steps": 6}
    return make_run(root, run_id, [start, *steps, summary, {"event": "exit", "time": 3.0, "returncode": 0}],
                    **{"fault": "missing-init", **config})
