"""The trainer's step and phase ranges on a GPU (roctx on ROCm, NVTX on CUDA): do they work, what do
they cost, and does a profiler that records ranges see one per step?

1. Trains each version with the ranges on and off (Trainer.markers), same config, and compares
   the median step time: the ranges must cost next to nothing.
2. If nsys (NVIDIA) or rocprofv3 (AMD) is on PATH, runs `tinylab train --profile <tool>` on a short
   run and counts the recorded "tinylab step N" ranges and the steps the kernel table kept (the
   measured ones: both tools' tables are cut to them, tinylab.core.steps).

Run on a GPU node: python tests/gpu/markers_check.py   (prints a short table last)
"""

from __future__ import annotations

import io
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from tinylab.config import RunConfig
from tinylab.core.eventlog import read_events
from tinylab.training.trainer import Trainer

STEPS, WARMUP = 30, 5


def median_step_ms(version: str, markers: bool, root: Path) -> float:
    run_dir = root / f"{version}-{markers}"
    run_dir.mkdir(parents=True)
    cfg = RunConfig(version=version, device="cuda", num_steps=STEPS, warmup_steps=WARMUP).validate()
    trainer = Trainer(cfg, run_dir, out=io.StringIO())
    try:
        trainer.setup()
        trainer.markers = markers and trainer.markers
        trainer.run()
    finally:
        trainer.close()
    steps = [e["step_ms"] for e in read_events(run_dir / "events.jsonl").of("step") if not e["warmup"]]
    return statistics.median(steps)


def profiled(tool: str, root: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "tinylab", "train", "--profile", tool, "--num-steps", "8",
                           "--warmup-steps", "3", "--runs-dir", str(root / "runs"), "--json"],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return f"failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
    run_dir = Path(json.loads(proc.stdout)["dir"])
    profile = next(e for e in read_events(run_dir / "events.jsonl").of("profile") if e["tool"] == tool)
    if tool == "nsys":  # NVTX ranges are in the report: nsys stats sums them by name
        report = run_dir / profile["artifacts"]["report.nsys-rep"]
        text = subprocess.run(["nsys", "stats", "--report", "nvtx_sum", "--format", "csv", str(report)],
                              capture_output=True, text=True, timeout=600).stdout
    else:
        text = "".join((run_dir / path).read_text() for name, path in profile["artifacts"].items()
                       if name.endswith("_marker_api_trace.csv"))
    ranges = len(set(re.findall(r"tinylab (?:warm-up )?step \d+", text)))
    return f"distinct step ranges recorded: {ranges} of 8; kernel table covers {profile.get('steps')} steps"


def main() -> int:
    if not torch.cuda.is_available():
        print("needs a GPU")
        return 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for version in ("v1", "v3", "v4"):
            # off, on, off, on: the eager versions drift by several % between runs in one process
            times = {False: [], True: []}
            for repeat in range(2):
                for markers in (False, True):
                    times[markers].append(median_step_ms(version, markers, root / str(repeat)))
            off, on = statistics.mean(times[False]), statistics.mean(times[True])
            rows.append((version, times[False], times[True], 100 * (on - off) / off))
        tool = "rocprofv3" if getattr(torch.version, "hip", None) else "nsys"
        seen = profiled(tool, root) if shutil.which(tool) else f"{tool} not on PATH"
    print(f"\nmarkers on {torch.cuda.get_device_name(0)} (torch {torch.__version__}), median of {STEPS - WARMUP} steps")
    print(f"{'version':<8} {'off ms (2 runs)':>16} {'on ms (2 runs)':>16} {'cost':>7}")
    for version, off, on, cost in rows:
        print(f"{version:<8} {off[0]:7.2f} {off[1]:7.2f}  {on[0]:7.2f} {on[1]:7.2f}  {cost:6.1f}%")
    print(f"{tool}: {seen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
