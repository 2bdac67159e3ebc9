"""A real million-event trace, made on the GPU, through the trace reader of this tree and of an
older one (issue 30): the same output, and the time and peak memory of each on two cores.

1. v1 fp32 at the workshop's size, the PyTorch profiler on --profile-steps steps (about 4,500
   events a step: 220 steps make a million), with tinylab's ProfilerStep ranges;
2. `tinylab hotspots --top 5`, `hotspots --json`, `timeline` and `timeline --json` of its trace,
   with this tree and with OLD (an older checkout, PYTHONPATH), each pinned to two cores
   (`taskset -c 0,1`, as the 2-core development machine), --repeat times, alternating: the median
   wall time, and the peak memory (VmHWM) of each; the outputs of the two trees must be the same.
Prints a short table last, naming the card and the CPU. Run from the repo root, OLD a folder that
holds an older checkout's `tinylab/` package (e.g. `git worktree add /tmp/old COMMIT`; for a
machine that gets only this tree, a copy inside it that git ignores, e.g. `.ab_old/`):
    OLD=/tmp/old python3 tests/gpu/ingest_check.py [--profile-steps 220] [--repeat 3]
Writes $OUT/ingest_check.json (every figure, and the diff of any output that differs).
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "perf"))

from bench_ingest import WRAPPER, run  # noqa: E402

COMMANDS = (("hotspots", "--top", "5"), ("hotspots", "--json"), ("timeline",), ("timeline", "--json"))
PINNED = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []


def cpu_name() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile-steps", type=int, default=220)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    old = Path(os.environ.get("OLD", ".ab_old")).resolve()
    if not (old / "tinylab" / "cli.py").is_file():
        print(f"OLD={old}: no older tinylab tree there")
        return 2
    import torch

    card = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    out = Path(os.environ.get("OUT", "gpu_out"))
    out.mkdir(parents=True, exist_ok=True)
    runs = Path("/tmp/ingest_runs")
    shutil.rmtree(runs, ignore_errors=True)
    steps = args.profile_steps + 8
    train = subprocess.run([sys.executable, "-m", "tinylab", "train", "--version", "v1", "--num-steps", str(steps),
                            "--profile", "pytorch", "--profile-steps", str(args.profile_steps), "--label", "ingest",
                            "--runs-dir", str(runs), "--json"], capture_output=True, text=True, timeout=420)
    if train.returncode != 0:
        print(f"train failed:\n{train.stderr[-2000:]}")
        return 1
    run_dir = Path(json.loads(train.stdout)["dir"])
    traces = sorted(run_dir.rglob("*trace*.json*"), key=lambda p: p.stat().st_size)
    if not traces:
        print(f"no trace under {run_dir}: {sorted(p.name for p in run_dir.rglob('*'))}")
        return 1
    trace = traces[-1]
    import msgspec

    with gzip.open(trace) if trace.suffix == ".gz" else open(trace, "rb") as fh:
        raw = fh.read()
    events = len(msgspec.json.decode(raw, type=dict)["traceEvents"])
    doc: dict = {"card": card, "cpu": cpu_name(), "pinned": " ".join(PINNED) or "not pinned (no taskset)",
                 "trace": {"file": trace.name, "gz_mb": trace.stat().st_size / 2**20, "json_mb": len(raw) / 2**20,
                           "events": events}, "commands": {}}
    del raw
    rows, failures = [], 0
    for command in COMMANDS:
        argv = [*command[:1], str(trace), *command[1:]]
        seen: dict[str, list] = {"old": [], "new": []}
        texts: dict[str, str] = {}
        for _ in range(args.repeat):
            for side, tree in (("old", old), ("new", ROOT)):
                wall, cpu, peak, code, stdout, stderr = run(argv, script=WRAPPER, tree=tree, prefix=PINNED)
                seen[side].append((wall, cpu, peak, code))
                texts[side] = stdout + stderr
        same = texts["old"] == texts["new"]
        failures += not same or any(c for side in seen.values() for *_, c in side)
        figures = {side: {"wall_s": statistics.median(w for w, *_ in v), "cpu_s": statistics.median(c for _, c, *_ in v),
                          "peak_mb": max(p for _, _, p, _ in v), "codes": sorted({c for *_, c in v})}
                   for side, v in seen.items()}
        doc["commands"][" ".join(command)] = {**figures, "same_output": same, "diff": None if same else "".join(
            difflib.unified_diff(texts["old"].splitlines(True), texts["new"].splitlines(True), "old", "new"))[:4000]}
        rows.append((" ".join(command), figures["old"], figures["new"], same))
    (out / "ingest_check.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    t = doc["trace"]
    print(f"\ntrace of v1 fp32 on {card}: {t['events']:,} events, {t['gz_mb']:.1f} MB gz, {t['json_mb']:.0f} MB JSON; "
          f"{doc['cpu']}, {doc['pinned']}; median of {args.repeat}; "
          f"{'all outputs the same' if not failures else f'{failures} FAILED'}")
    print(f"{'command':<18} {'old wall s':>10} {'new wall s':>10} {'old MB':>7} {'new MB':>7}  same")
    for name, o, n, same in rows:
        print(f"{name:<18} {o['wall_s']:>10.2f} {n['wall_s']:>10.2f} {o['peak_mb']:>7.0f} {n['peak_mb']:>7.0f}  "
              f"{'yes' if same else 'NO'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
