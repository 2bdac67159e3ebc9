"""Benchmark: a store holding a 400 MB events.jsonl (1.23 M steps), as a forgotten long run leaves it.

`tinylab runs`, `show`, `follow` and `report` are timed as a user runs them (their own process),
with the peak memory of that process. Usage: python tests/runs/bench_store.py [--mb 400]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.runs import make_run  # noqa: E402


def build(root: Path, megabytes: int) -> str:
    run = make_run(root, "20261126-000000-b100", [])
    step = {"event": "step", "time": 1.0, "step": 0, "loss": 5.123456, "step_ms": 12.345678, "fwd_ms": 4.1,
            "bwd_ms": 6.2, "opt_ms": 2.0, "samples_per_s": 648.1, "tokens_per_s": 20739.2, "mem_alloc_mb": None,
            "mem_peak_mb": None, "warmup": False}
    with open(run.dir / "events.jsonl", "w") as fh:
        fh.write(json.dumps({"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64",
                             "config": json.loads((run.dir / "config.json").read_text())}) + "\n")
        i, size = 0, 0
        while size < megabytes << 20:
            step["step"] = i
            line = json.dumps(step) + "\n"
            fh.write(line)
            size += len(line)
            i += 1
        fh.write(json.dumps({"event": "summary", "time": 2.0, "samples_per_s": 648.1, "steps": i}) + "\n")
        fh.write(json.dumps({"event": "exit", "time": 3.0, "returncode": 0, "signal": None}) + "\n")
    print(f"built {size / 2**20:,.0f} MB, {i:,} steps", file=sys.stderr)
    return run.id


def timed(*args: str) -> tuple[float, float]:
    """(seconds, peak MB) of one tinylab command in its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        run_id = build(root, args.mb)
        rows = []
        for name, command in (("runs", ["runs"]), ("runs --json", ["runs", "--json"]), ("show", ["show", run_id]),
                              ("follow", ["follow", "--tail", run_id]), ("report md", ["report", run_id])):
            seconds, peak = timed(*command, "--runs-dir", str(root))
            rows.append((name, seconds, peak))
    print(f"{'command':<14} {'seconds':>8} {'peak MB (max so far)':>21}")
    for name, seconds, peak in rows:
        print(f"{name:<14} {seconds:>8.2f} {peak:>21,.0f}")


if __name__ == "__main__":
    main()
