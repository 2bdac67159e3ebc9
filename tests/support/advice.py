"""A run for the advisor's tests: finished, tiny, v1 on a CPU, under the missing-init fault, written
by hand (its first loss 40, 6x ln(1000)), so that its one advice item, bad-init, can be tried."""

from __future__ import annotations

from pathlib import Path

from support.runs import make_run

from tinylab.runs.store import Run

A = "20260101-000000-aaaa"


def bad_init_run(root: Path, run_id: str = A, **config) -> Run:
    start = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64", "config": {}}
    steps = [{"event": "step", "step": i, "loss": 40.0 - 4 * i, "step_ms": 10.0 + i % 2, "warmup": i < 2}
             for i in range(8)]
    summary = {"event": "summary", "time": 2.0, "step_ms_median": 10.5, "step_ms_p10": 10.0, "step_ms_p90": 11.0,
               "initial_loss": 40.0, "final_loss": 12.0, "params_trained": 20, "params_total": 20, "measured_steps": 6}
    return make_run(root, run_id, [start, *steps, summary, {"event": "exit", "time": 3.0, "returncode": 0}],
                    **{"fault": "missing-init", **config})
