"""Hand-written run folders and scenarios for the exercise tests, and where the repository is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: A scenario ("faults") whose one step hides its fault from the learner (the performance-debugging
#: way): write it as <exercises root>/faults.toml; its run is labelled "exercise faults step 1".
HIDES_ITS_FAULT = '''\
id = "faults"
title = "Find the fault"
level = "beginner"
minutes = 5
summary = "One fault, hidden."

[[steps]]
title = "Which one?"
text = "Find it."
preset = { fault = "missing-init" }
hidden = ["fault"]
baseline = { }
checks = [{ name = "high", expr = "initial_loss > 1", description = "high" }]
'''


def check_steps(root: Path, steps: list[tuple[str, int]], at_once: bool = True) -> dict[tuple[str, int], dict]:
    """`tinylab exercises check SCENARIO --step N --device cpu` for every step, all at once (their
    torch imports overlap) or, for steps that compare timings across their runs, one after the
    other; each with its own store and progress file under `root`:
    {(scenario, number): {"rc", "stdout", "stderr", "runs"}}."""
    from tinylab import exercises as ex
    from tinylab.runs.store import RunStore

    procs = {}
    for scenario, number in steps:
        key = f"{scenario}-{number}"
        env = {**os.environ, ex.PROGRESS_ENV: str(root / f"{key}.json")}
        args = ["check", scenario, "--step", str(number), "--device", "cpu", "--runs-dir", str(root / key)]
        procs[(scenario, number)] = subprocess.Popen([sys.executable, "-m", "tinylab", "exercises", *args], cwd=REPO,
                                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not at_once:
            procs[(scenario, number)].wait(timeout=600)
    out = {}
    for (scenario, number), proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        out[(scenario, number)] = {"rc": proc.returncode, "stdout": stdout, "stderr": stderr,
                                   "runs": RunStore(root / f"{scenario}-{number}").list()}
    return out

SUMMARY = {
    "samples_per_s": 100.0, "tokens_per_s": 12800.0, "step_ms_median": 80.0, "step_ms_p10": 78.0,
    "step_ms_p90": 85.0, "fwd_ms_median": 25.0, "bwd_ms_median": 50.0, "opt_ms_median": 5.0,
    "peak_mem_mb": None, "initial_loss": 6.95, "final_loss": 5.1, "params_trained": 74, "params_total": 74,
    "model_flops_per_step": 2e11, "mfu": None, "steps": 20, "measured_steps": 15,
}  # fmt: skip


def make_run(root: Path, name: str = "run", *, summary: dict | None = None, config: dict | None = None,
             device: str = "cpu", kernels: list[dict] | None = None, error: dict | None = None,
             with_summary: bool = True):
    """A finished run folder written by hand: config.json and events.jsonl (and a kernel table)."""
    from tinylab.config import RunConfig
    from tinylab.runs.store import Run

    run_dir = root / name
    run_dir.mkdir(parents=True)
    cfg = RunConfig(**(config or {})).resolved().to_dict()
    (run_dir / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    events = [{"event": "start", "time": 1.0, "config": cfg, "device": device, "device_name": "test",
               "params_total": 74, "param_elements": 31977984}]
    if kernels is not None:
        import pandas as pd

        from tinylab.profilers.base import CollectResult, write_kernel_table

        fields = write_kernel_table(run_dir, "pytorch", CollectResult(table=pd.DataFrame(kernels)))
        events.append({"event": "profile", "time": 2.0, **fields})
    if error is not None:
        events.append({"event": "error", "time": 3.0, **error})
    elif with_summary:
        events.append({"event": "summary", "time": 3.0, **{**SUMMARY, **(summary or {})}})
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return Run(run_dir)
