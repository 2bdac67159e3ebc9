"""What a quiet machine's runs and a loaded machine's runs record, for the thresholds of a busy
machine (tinylab/core/events.py, BUSY_*; docs/performance.md, "A busy machine").

Trains each case through `tinylab train` (the launcher, the supervisor and the load sampler as a
learner gets them), then prints its step spread, the load it recorded and the verdict. Loads are
made here: `cpuN` starts N processes spinning on the CPU, `gpu` one that multiplies matrices on
GPU 0 all along. Usage (repo root; a GPU machine for the cuda cases):
    python3 tests/gpu/busy_machine.py cpu:v1 cpu:v1:cpu16 cuda:v4 cuda:v1:gpu
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from tinylab.runs.store import RunStore

SPIN = "while True: pass"
GPU_SPIN = ("import torch; a = torch.randn(8192, 8192, device='cuda')\n"
            "while True: a = (a @ a).clamp_(-1, 1)")


def main() -> int:
    store = RunStore(tempfile.mkdtemp(prefix="busy-"))
    print(f"{'case':<18} {'p10':>8} {'median':>8} {'p90':>8} {'spread':>7} {'others':>7} {'spare':>5} "
          f"{'gpu':>5}  busy")
    for spec in sys.argv[1:]:
        device, version, *load = spec.split(":")
        hogs = start_load(load[0] if load else "")
        try:
            preset = ["--preset", "cpu"] if device == "cpu" else []
            proc = subprocess.run([sys.executable, "-m", "tinylab", "train", "--device", device, "--version", version,
                                   *preset, "--num-steps", "60", "--runs-dir", str(store.root)],
                                  capture_output=True, text=True)
        finally:
            for hog in hogs:
                hog.kill()
        if proc.returncode:
            print(f"{spec:<18} failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        record = store.resolve("last").record()
        s = record.summary
        print(f"{spec:<18} {s.step_ms_p10:8.2f} {s.step_ms_median:8.2f} {s.step_ms_p90:8.2f} {s.spread:7.1%} "
              f"{fmt(s.others_cpu_cores, '.2f'):>7} {fmt(s.spare_cpu_cores, '.0f'):>5} {fmt(s.others_gpu_share, '.0%'):>5}"
              f"  {record.busy or '-'}")
    print(f"cpus {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}")
    return 0


def start_load(load: str) -> list[subprocess.Popen]:
    if load.startswith("cpu"):
        procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(int(load[3:] or 1))]
    elif load == "gpu":
        procs = [subprocess.Popen([sys.executable, "-c", GPU_SPIN])]
        time.sleep(8)  # its CUDA context and first products
    else:
        return []
    time.sleep(1)
    return procs


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


if __name__ == "__main__":
    raise SystemExit(main())
