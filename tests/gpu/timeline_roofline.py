"""Profiled runs of v1..v4 (fp32 and bf16, seq 128, the default model) with the PyTorch profiler,
then `tinylab timeline` and `tinylab roofline` of each; checks that every roofline point lies at
or under its roof (else it must be flagged) and prints a short table last.

Run from the repo root on an H200 (about 4 minutes; the first roofline measures the ceilings):
    python3 tests/gpu/timeline_roofline.py
Writes under $OUT (default ./gpu_out): timeline_roofline.txt (every command's text output),
timeline.json and roofline.json (run -> --json result), and the v1/v4 fp32 traces with their
memory timelines (v1_trace.json.gz, v1_memory_timeline.json.gz, v4_...): real GPU traces with
ProfilerStep windows, to be added as fixtures under tests/fixtures/pytorch-profiler/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

CASES = [("v1", "fp32"), ("v2", "fp32"), ("v3", "fp32"), ("v4", "fp32"), ("v1", "bf16"), ("v2", "bf16"),
         ("v3", "bf16"), ("v4", "bf16")]
MEMORY = {("v1", "fp32"), ("v4", "fp32")}  # memory timelines cost shapes and stacks: two runs only
TOLERANCE = 1.05  # tinylab.analysis.roofline.ROOF_TOLERANCE


def tinylab(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def main() -> int:
    out = Path(os.environ.get("OUT", "gpu_out"))
    out.mkdir(parents=True, exist_ok=True)
    runs = out.resolve().parent / "timeline_runs"
    shutil.rmtree(runs, ignore_errors=True)
    text, timelines, rooflines, table, failures = [], {}, {}, [], 0
    for version, precision in CASES:
        name = f"{version}-{precision}"
        env = {"TINYLAB_PROFILE_MEMORY": "1"} if (version, precision) in MEMORY else {}
        res = tinylab("train", "--version", version, "--precision", precision, "--num-steps", "20",
                      "--profile", "pytorch", "--label", name, "--runs-dir", str(runs), "--json", env=env)
        if res.returncode != 0:
            text.append(f"== {name}: train failed\n{res.stderr[-2000:]}")
            table.append((name, None, None, None, None, "train failed"))
            failures += 1
            continue
        done = json.loads(res.stdout)
        step_ms, run_dir = (done.get("summary") or {}).get("step_ms_median"), Path(done["dir"])
        for command, store in (("timeline", timelines), ("roofline", rooflines)):
            res = tinylab(command, done["id"], "--runs-dir", str(runs))
            text.append(f"== tinylab {command} {name}\n{res.stdout}{res.stderr}")
            res = tinylab(command, done["id"], "--runs-dir", str(runs), "--json")
            store[name] = json.loads(res.stdout) if res.returncode == 0 else {"error": res.stderr.strip()}
        roof = rooflines[name]
        worst = max((p["pct_of_roof"] for p in roof.get("points", [])), default=None)
        above = worst is not None and worst > 100 * TOLERANCE
        failures += above or "error" in roof or "error" in timelines[name]
        tl = timelines[name]
        shown = next((s for s in tl.get("steps", []) if s["step"] == tl.get("shown_step")), {})
        table.append((name, step_ms, shown.get("idle_pct"), shown.get("kernels"), worst,
                      f"{len(roof.get('flagged', []))} flagged" + (" POINT ABOVE ROOF" if above else "")))
        if (version, precision) in MEMORY:
            for artifact in ("trace.json.gz", "memory_timeline.json.gz"):
                src = run_dir / "profiles" / "pytorch" / artifact
                if src.is_file():
                    shutil.copy(src, out / f"{version}_{artifact}")
    (out / "timeline_roofline.txt").write_text("\n".join(text), encoding="utf-8")
    (out / "timeline.json").write_text(json.dumps(timelines, indent=1, default=str), encoding="utf-8")
    (out / "roofline.json").write_text(json.dumps(rooflines, indent=1, default=str), encoding="utf-8")
    for name in ("v1-fp32", "v4-fp32"):
        print(next((t for t in text if t.startswith(f"== tinylab timeline {name}")), ""))
    print(f"{'run':<9} {'step ms':>8} {'GPU idle':>9} {'kernels':>8} {'max %roof':>10}  roofline")
    for name, step_ms, idle, kernels, worst, verdict in table:
        cells = [f"{step_ms:8.2f}" if step_ms else f"{'-':>8}", f"{idle:8.0f}%" if idle is not None else f"{'-':>9}",
                 f"{kernels:>8}" if kernels is not None else f"{'-':>8}", f"{worst:9.1f}%" if worst else f"{'-':>10}"]
        print(f"{name:<9} {' '.join(cells)}  {verdict}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
