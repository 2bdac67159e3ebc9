"""Verdicts you can trust, on a GPU (docs/statistics.md): what `compare` says of pairs whose truth is known.

1. eager v2 bf16, the same config and seed twice: no verdict on samples/s or the step median;
2. that pair repeated twice more, interleaved (compare --repeat 2: tinylab.service.repeat): 3 runs a
   side pooled, still no winner;
3. v2 with twice the layers against the first run: A better (B does twice the work);
4. the same config twice while another process multiplies bf16 matrices on the GPU in bursts: no
   verdict, whatever the contention did to either run;
5. v4 (CUDA graph) twice: no winner (graphed runs barely move: the interval may say "same");
and every run's energy a sample (NVML's power over its timed steps) beside its samples/s: the power it
implies (J/sample x samples/s) must sit under the card's limit. Prints a short table last, naming
the card. Run from the repo root with the repo importable by the runs' children:
    PYTHONPATH=$PWD python3 tests/gpu/verdicts_check.py
Writes $OUT/verdicts_check.json (every comparison as `compare --json` prints it); results/h200-verdicts-check.json
and .log are one, from an H200 (2026-12-02, 144 s, 16 of 16 checks passed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tinylab.config import RunConfig
from tinylab.runs.store import TERMINAL
from tinylab.service.lab import Lab
from tinylab.service.repeat import Repeat, RepeatDone

BASE = dict(version="v2", precision="bf16", num_steps=30, warmup_steps=5, device="cuda", seed=1)
#: A process multiplying bf16 matrices on GPU 0 in bursts (half a second on, half off), for 120 s at most.
BURSTS = ("import time, torch\na = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)\n"
          "end = time.monotonic() + 120\n"
          "while time.monotonic() < end:\n"
          "    t = time.monotonic()\n"
          "    while time.monotonic() < t + 0.5: a = (a @ a).clamp_(-1, 1)\n"
          "    torch.cuda.synchronize(); time.sleep(0.5)\n")
#: The H200's board power limit (W): no run may imply more.
POWER_LIMIT_W = 700.0


def wait(lab: Lab, run_id: str, deadline: float) -> str:
    run = lab.run(run_id)
    while (status := run.status()) not in TERMINAL and time.monotonic() < deadline:
        time.sleep(0.5)
    return status


def launch(lab: Lab, deadline: float, label: str, **changes) -> str:
    run = lab.launch(RunConfig(**{**BASE, **changes}, label=label))
    status = wait(lab, run.id, deadline)
    if status != "finished":
        print(f"{label}: {status}\n{run.output_log.read_text(errors='replace')[-1500:]}")
    return run.id


def main() -> int:
    import torch

    card = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    out = Path(os.environ.get("OUT", "gpu_out"))
    out.mkdir(parents=True, exist_ok=True)
    store = Path("/tmp/verdict_runs")
    shutil.rmtree(store, ignore_errors=True)
    lab = Lab(store)
    end = time.monotonic() + 400
    doc: dict = {"card": card, "cases": {}}
    rows: list[tuple[str, ...]] = []
    failures = 0

    def judge(name: str, result, want: tuple[str | None, ...]) -> None:
        nonlocal failures
        doc["cases"][name] = result.to_json()
        sps, med = result.row("samples_per_s"), result.row("step_ms_median")
        ok = sps.better in want and med.better in want
        failures += not ok
        busy = ",".join(n for n, s in zip(result.names, (result.a, result.b)) if s.busy) or "-"
        rows.append((name, f"{sps.a:,.1f}", f"{sps.b:,.1f}", sps.interval.text() if sps.interval else "-",
                     str(sps.better), f"{sps.interval.runs[0]}+{sps.interval.runs[1]}" if sps.interval else "-",
                     busy, "ok" if ok else "FAIL"))

    a = launch(lab, end, "v2 A")
    b = launch(lab, end, "v2 A again")
    judge("v2 = v2 (one pair)", lab.compare(a, b), (None,))
    done = None
    for event in Repeat(lab, a, b, 2).run():
        if isinstance(event, RepeatDone):
            done = event
        else:
            print(event.line(), flush=True)
    judge("v2 = v2 (--repeat 2)", done.comparison, (None,))
    deeper = launch(lab, end, "v2 twice the layers", num_layers=2 * RunConfig().num_layers)
    judge("v2 vs 2x layers", lab.compare(a, deeper), ("a",))
    hog = subprocess.Popen([sys.executable, "-c", BURSTS])
    try:
        time.sleep(5)  # the hog's CUDA context and first bursts
        c = launch(lab, end, "v2 beside bursts")
        d = launch(lab, end, "v2 beside bursts again")
    finally:
        hog.kill()
        hog.wait(timeout=30)
    judge("v2 = v2 (GPU bursts)", lab.compare(c, d), (None,))
    e = launch(lab, end, "v4 graph", version="v4")
    f = launch(lab, end, "v4 graph again", version="v4")
    judge("v4 = v4 (graph)", lab.compare(e, f), (None,))

    energy = []
    for record in (r for r in lab.records() if r.summary is not None):
        s = record.summary
        watts = s.energy_j_per_sample * s.samples_per_s if s.energy_j_per_sample and s.samples_per_s else None
        ok = watts is not None and 0 < watts <= POWER_LIMIT_W
        failures += not ok
        energy.append((record.label, f"{s.samples_per_s:,.1f}", f"{s.energy_j_per_sample:.4g}"
                       if s.energy_j_per_sample else "-", f"{watts:.0f}" if watts else "-", "ok" if ok else "FAIL"))
    (out / "verdicts_check.json").write_text(json.dumps(doc, indent=1, default=str))
    print(f"\nenergy on {card} (J/sample x samples/s = the mean power of the timed steps)")
    print(f"{'run':<28} {'samples/s':>10} {'J/sample':>9} {'W':>5}  check")
    for row in energy:
        print(f"{row[0]:<28} {row[1]:>10} {row[2]:>9} {row[3]:>5}  {row[4]}")
    print(f"\nverdicts on {card}, bf16, 30 steps, one seed")
    print(f"{'case':<22} {'A sps':>9} {'B sps':>9} {'B/A [95%]':>22} {'better':>6} {'runs':>5} {'busy':>5}  check")
    for row in rows:
        print(f"{row[0]:<22} {row[1]:>9} {row[2]:>9} {row[3]:>22} {row[4]:>6} {row[5]:>5} {row[6]:>5}  {row[7]}")
    print(f"\n{len(rows) + len(energy) - failures} of {len(rows) + len(energy)} checks passed on {card}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
