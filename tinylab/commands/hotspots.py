"""`tinylab hotspots PATH`: the kernel hotspot table of a run or of any supported profiler output."""

from __future__ import annotations

import argparse
import sys

from tinylab.commands._common import add_runs_dir, lab_from, print_json, terminal_width
from tinylab.service.kernels import CATEGORIES
from tinylab.runs.record import printable_lines

DEFAULT_TOP = 25  # text output only: --json and --csv give every kernel unless --top is set


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def _rank(text: str) -> int | str:
    if text == "all":
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a rank (0, 1, ...) or 'all', got {text!r}")
    return value


def add_arguments(p) -> None:
    p.add_argument(
        "path",
        metavar="PATH",
        help="a run id (or unique prefix, or 'last'), a run folder, or a profiler output file/folder: "
        "rocprofv3 CSV or .db, rocprof-compute workload, rocprof-sys wall_clock, ncu CSV, "
        "nsys stats CSV, PyTorch trace JSON (format detected from the content)",
    )
    p.add_argument("--top", type=_positive, default=None, metavar="N",
                   help=f"show the N kernels with the most total time (default: {DEFAULT_TOP} as text, all with --json/--csv)")
    p.add_argument("--category", default=None, metavar="C", help=f"only kernels of category C: {', '.join(CATEGORIES)}")
    p.add_argument("--rank", type=_rank, default=None, metavar="N",
                   help="a run of several ranks: rank N's table (default: rank 0), or 'all' for one row per "
                        "kernel and rank; ranks are never merged")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object with full kernel names")
    fmt.add_argument("--csv", action="store_true", help="print the normalized table as CSV")
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.render.hotspots import render_text, write_csv

    top = args.top if args.top is not None or args.json or args.csv else DEFAULT_TOP
    summary = lab_from(args).hotspots(args.path, args.rank, top, args.category)
    if args.json:
        print_json({"source": args.path, **summary.to_json()})
    elif args.csv:
        write_csv(summary, sys.stdout)
    else:
        # kernel and file names come from files anyone may write: no escape sequence reaches the terminal
        print(printable_lines(render_text(summary, args.path, width=terminal_width(160))))
    return 0

