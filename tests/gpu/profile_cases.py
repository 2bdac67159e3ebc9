"""Profile training steps of chosen cases on the GPU with the lab's own PyTorch-profiler hook.

Prints, per case, the kernel time per step, the kernel count and the top kernels, from the
normalized kernel table the hook writes. Usage (repo root, GPU machine):
    python3 tests/gpu/profile_cases.py v4:bf16 v2+compile+graph:bf16 [--seq-len 128] [--top 15]
"""

import argparse
import io
import sys
import tempfile
from pathlib import Path

import pandas as pd

from tinylab.training import bench
from tinylab.config import RunConfig
from tinylab.training.trainer import run_training


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+", help="CASE:PRECISION, e.g. v4:bf16")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    for spec in args.cases:
        name, precision = spec.split(":")
        case = bench.make_case(name, precision, args.seq_len, RunConfig(num_steps=20, profilers=["pytorch"],
                                                                        profile_steps=args.steps))
        with tempfile.TemporaryDirectory() as tmp:
            summary = run_training(case.config, Path(tmp), out=io.StringIO())
            table = pd.read_csv(Path(tmp) / "profiles" / "pytorch" / "kernels.csv")
        per_step_us = table["total_ns"].sum() / 1e3 / args.steps
        print(f"\n== {spec} seq {args.seq_len}: {summary['step_ms_median']:.3f} ms/step median, "
              f"kernel time {per_step_us:.0f} us/step, {int(table['calls'].sum()) // args.steps} kernels/step")
        cats = table.groupby("category")["total_ns"].sum().sort_values(ascending=False) / 1e3 / args.steps
        print("   by category (us/step): " + ", ".join(f"{k} {v:.0f}" for k, v in cats.items()))
        for _, r in table.head(args.top).iterrows():
            print(f"   {r['total_ns'] / 1e3 / args.steps:8.1f} us {int(r['calls']) // args.steps:4d}x "
                  f"{r['category']:<11} {str(r['name'])[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
