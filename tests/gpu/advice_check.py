"""The advisor on a GPU, one call (docs/advice.md): the try-it loop and the GPU-only faults.

1. v1 fp32 at the workshop's size, profiled: the advisor calls it launch-bound, with a bound;
2. that item tried as run B (Lab.try_advice: v2 with its fusions, torch.compile and a CUDA graph,
   the same sizes and seed): B's speedup over A meets or stays under the bound (the verdict holds);
3. each fault (missing-init, detached-backward, unsynced-timing, naive-triton-swiglu, non-contiguous)
   triggers its rule; the clean v1 no correctness rule. The faults whose rules read counts run
   together; those whose rules judge timings (their @scope's `timed`) run alone, as does
4. v4 bf16, profiled: no launch-bound item. A run that shares the GPU is busy, and a timing rule is
   withheld there unless its effect is far outside the contention (docs/advice.md).
Prints a short table last, naming the card. Run from the repo root with the repo importable by the
runs' children (about 5 minutes on an H100):
    PYTHONPATH=$PWD python3 tests/gpu/advice_check.py
Writes $OUT/advice_check.json (every run's advice as `tinylab advise --json` prints it, and the verdict);
tests/gpu/results/h200-advice-check.json is one, from an H200 (151 s with the timing faults run alone, all checks passed, 2026-12-02);
h100-advice-check.json an older one from an H100, whose unsynced-timing run was still v1 at the
workshop size, which does not show the fault.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from tinylab.analysis.advice import CORRECTNESS, SCOPES
from tinylab.config import RunConfig
from tinylab.runs.store import TERMINAL
from tinylab.service.lab import Lab

STEPS = dict(num_steps=20, warmup_steps=5, device=os.environ.get("ADVICE_CHECK_DEVICE", "cuda"))
#: ADVICE_CHECK_DEVICE=cpu ADVICE_CHECK_SIZES=tiny: the script's own smoke test on a CPU (its checks fail there)
if os.environ.get("ADVICE_CHECK_SIZES") == "tiny":
    STEPS.update(hidden_dim=32, num_layers=1, num_heads=2, num_kv_heads=1, seq_len=8, batch_size=1, num_steps=4,
                 warmup_steps=1)
PROFILED = dict(profilers=["pytorch"], profile_steps=3)
FAULTS = {  # fault -> (its version and settings, the rule it must trigger)
    "missing-init": (dict(version="v1"), "bad-init"),
    "detached-backward": (dict(version="v3"), "untrained-parameters"),
    # where the GPU, not the host, sets the pace (the lesson's size): a launch-bound step's host timers
    # take as long as its kernels (H100, v1 at the workshop size: phases 35.35 of a 35.70 ms step)
    "unsynced-timing": (dict(version="v3", batch_size=64, seq_len=256), "unsynced-timers"),
    "naive-triton-swiglu": (dict(version="v3", **PROFILED), "slow-custom-kernel"),
    "non-contiguous": (dict(version="v3", **PROFILED), "layout-copies"),
}
#: The faults whose rules read no timing: they may share the GPU.
TOGETHER = [fault for fault, (_, rule) in FAULTS.items() if SCOPES[rule].timed is None]


def wait(lab: Lab, run_id: str, deadline: float) -> str:
    run = lab.run(run_id)
    while (status := run.status()) not in TERMINAL and time.monotonic() < deadline:
        time.sleep(1.0)
    return status


def tail(lab: Lab, run_id: str) -> str:
    try:
        return lab.run(run_id).output_log.read_text(errors="replace")[-1500:]
    except OSError:
        return "(no output.log)"


def main() -> int:
    import torch

    card = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    out = Path(os.environ.get("OUT", "gpu_out"))
    out.mkdir(parents=True, exist_ok=True)
    store = Path("/tmp/advice_runs")
    shutil.rmtree(store, ignore_errors=True)
    lab = Lab(store)
    end = time.monotonic() + 470  # inside the call's limit, with time left for the table and the copies
    doc: dict = {"card": card, "runs": {}}
    rows: list[tuple[str, str, str, str]] = []
    failures = 0

    def advise(name: str, run_id: str) -> list:
        items = lab.advise(run_id).items
        doc["runs"][name] = {"id": run_id, "status": lab.run(run_id).status(), "advice": [i.to_json() for i in items]}
        return items

    # 1-2: v1 fp32, then its launch-bound item tried as B, alone on the GPU (their times are compared)
    a = lab.launch(RunConfig(version="v1", label="advice A v1 fp32", **STEPS, **PROFILED))
    status = wait(lab, a.id, end)
    if status != "finished":
        print(f"v1 A {status}:\n{tail(lab, a.id)}")
        return 1
    items = advise("v1-fp32", a.id)
    launch = next((i for i in items if i.rule == "launch-bound"), None)
    clean_errors = sorted({i.rule for i in items} & set(CORRECTNESS))
    failures += launch is None or bool(clean_errors)
    rows.append(("v1 fp32 (A)", "launch-bound", launch.measured.text if launch else "NOT FIRED",
                 f"bound {launch.impact.bound:.2f}x ({launch.impact.confidence})" if launch else "-"))
    rows.append(("v1 fp32 clean", "no correctness rule", ", ".join(clean_errors) or "none", "ok" if not clean_errors
                 else "FAIL"))
    if launch is not None:
        b, _ = lab.try_advice(a.id, "launch-bound")
        status = wait(lab, b.id, end)
        verdict = lab.advice_verdict(a.id, b.id)
        doc["verdict"] = verdict
        advise("v2+compile+graph (B)", b.id)
        v = next((v for v in verdict["verdicts"] if v["rule"] == "launch-bound"), None)
        sa, sb = lab.record(a.id).summary, lab.record(b.id).summary
        speedup = sa.step_ms_median / sb.step_ms_median if sa and sb and sb.step_ms_median else None
        within = speedup is not None and speedup <= launch.impact.bound
        failures += not within or v is None or not v["held"]
        rows.append(("v2+compile+graph (B)", f"{status}, held={v['held'] if v else None}",
                     f"step {sa.step_ms_median:.2f} -> {sb.step_ms_median:.2f} ms = {speedup:.2f}x" if speedup
                     else tail(lab, b.id)[-200:], f"<= {launch.impact.bound:.2f}x: {'yes' if within else 'NO'}"))

    def check_fault(fault: str, run_id: str) -> int:
        rule = FAULTS[fault][1]
        status = wait(lab, run_id, end)
        item = next((i for i in advise(fault, run_id) if i.rule == rule), None) if status == "finished" else None
        rows.append((fault, rule, item.measured.text if item else f"NOT FIRED ({status})",
                     (f"bound {item.impact.bound:.2f}x" if item.impact.bound else item.severity) if item else "FAIL"))
        if item is None:
            print(f"--- {fault}: {[i['rule'] for i in doc['runs'].get(fault, {}).get('advice', [])]}\n"
                  f"{tail(lab, run_id)}")
        return int(item is None)

    def launch_fault(fault: str) -> str:
        return lab.launch(RunConfig(**{**STEPS, **FAULTS[fault][0]}, fault=fault, label=f"advice fault {fault}")).id

    # 3: the faults whose rules read counts, together (sharing the GPU changes no count)
    launched = {fault: launch_fault(fault) for fault in TOGETHER}
    failures += sum(check_fault(fault, run_id) for fault, run_id in launched.items())
    # 4: v4 bf16 and the faults whose rules judge timings, one at a time, alone on the GPU
    v4 = lab.launch(RunConfig(version="v4", precision="bf16", label="advice v4 bf16", **STEPS, **PROFILED))
    status = wait(lab, v4.id, end)
    rules = [i.rule for i in advise("v4-bf16", v4.id)] if status == "finished" else None
    failures += rules is None or "launch-bound" in rules
    rows.append(("v4 bf16", "no launch-bound", status if rules is None else ", ".join(rules) or "no item",
                 "ok" if rules is not None and "launch-bound" not in rules else "FAIL"))
    for fault in (f for f in FAULTS if f not in TOGETHER):
        failures += check_fault(fault, launch_fault(fault))
    (out / "advice_check.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    print(f"\nadvisor on {card} ({torch.__version__}); {'all checks passed' if not failures else f'{failures} FAILED'}")
    for case, rule, measured, verdict in rows:
        print(f"{case:<22} {rule:<24} {verdict}\n    {measured}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
