"""`tinylab bench`: versions x precisions x sequence lengths on this device, one table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tinylab.commands._common import check_output, integer, number
from tinylab.commands.runflags import add_run_arguments, config_from_args
from tinylab.service.bench import DEFAULT_CASES, run_bench  # torch when a bench runs, not on import


def _csv(kind):
    """An argparse type: a comma-separated list (argparse turns ArgumentTypeError into its usage error)."""
    def parse(text: str):
        try:
            return [kind(x) for x in text.split(",") if x]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind.__name__}, got {text!r}") from None

    return parse


def add_arguments(p) -> None:
    p.add_argument("--cases", type=_csv(str), default=list(DEFAULT_CASES),
                   help="comma-separated cases: a version plus +toggles, e.g. v1,v2,v3,v4,v4+sdpa,v2+compile+graph "
                        f"(default: {','.join(DEFAULT_CASES)})")
    p.add_argument("--precisions", type=_csv(str), default=["fp32"], help="comma-separated: fp32,bf16,fp16")
    p.add_argument("--seq-lens", type=_csv(int), default=None, help="comma-separated (default: --seq-len)")
    p.add_argument("--repeats", type=integer(1, 100), default=2,
                   help="rounds over all cases, interleaved ABBA: forward on even rounds, backward on odd ones, so "
                        "a load that comes and goes lands on every case alike. Each case's figure is the geometric "
                        "mean of its repeats with a 95%% interval across them (one repeat leans on an assumed "
                        "run-to-run spread alone; 2, one A B B A cycle, cancels a steady drift; more narrow the "
                        "intervals; from 1 to 100, default %(default)s)")
    p.add_argument("--kernels", action="store_true", help="also run the Triton kernel micro-benchmarks")
    p.add_argument("--roofline", action="store_true",
                   help="also measure copy bandwidth, GEMM rates and each case's GEMM floor (floor%%: the step's "
                        "GEMMs replayed in a CUDA graph, as a share of the step time)")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON to this file")
    p.add_argument("--baseline", type=Path, default=None,
                   help="a saved bench JSON from the same card; a case the load sampler saw busy in every repeat "
                        "(here or there) is not checked against it, and the bench says so")
    p.add_argument("--max-regression", type=number(0, 1000), default=5.0, metavar="PCT",
                   help="with --baseline: fail when a case is more than PCT%% slower (>= 0 and <= 1000; "
                        "default %(default)s)")
    add_run_arguments(p, with_version=False)
    p.set_defaults(num_steps=30)


def run(args) -> int:
    if args.out is not None:
        check_output(args.out, "--out")
    base = config_from_args(args, "cpu" if args.device == "cpu" else "cuda")  # a case sets its version
    result = run_bench(base, args.cases, args.precisions, args.seq_lens or [base.seq_len], args.repeats,
                       kernels=args.kernels, roofline=args.roofline, baseline=args.baseline,
                       max_regression=args.max_regression, out=args.out, log=lambda s: print(s, flush=True))
    env = result.environment
    print()
    print(f"{env['device']} | torch {env['torch']} | triton {env['triton']} | {env['date']} | "
          f"batch {base.batch_size}, hidden {base.hidden_dim}, {base.num_layers} layers, {base.num_steps} steps x {args.repeats}")
    print(f"geometric means over the {args.repeats} repeats [95% interval]; vs v1: samples/s ratio [its interval]")
    print(result.table)
    if result.kernels_table is not None:
        print(f"\nkernels (forward+backward; liger-kernel {env['liger_kernel'] or 'not installed'}):")
        print(result.kernels_table)
    for line in result.skipped:
        print(f"SKIPPED {line}", file=sys.stderr)
    for line in result.problems:
        print(f"REGRESSION {line}", file=sys.stderr)
    return 1 if result.problems or result.failed else 0
