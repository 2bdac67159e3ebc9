"""`tinylab hotspots PATH`: the kernel hotspot table of a run or of any supported profiler output."""

from __future__ import annotations

import argparse
import sys

from tinylab.commands._common import add_runs_dir, integer, lab_from, print_json, terminal_width
from tinylab.config import MAX_WORLD
from tinylab.service.kernels import CATEGORIES
from tinylab.runs.record import printable_lines

DEFAULT_TOP = 25  # text output only: --json and --csv give every kernel unless --top is set


def _rank(text: str) -> int | str:
    if text == "all":
        return text
    try:
        return integer(0, MAX_WORLD - 1)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be a rank from 0 to {MAX_WORLD - 1} or 'all', got {text[:40]!r}") from None


def add_arguments(p) -> None:
    p.add_argument(
        "path",
        metavar="PATH",
        help="a run id (or unique prefix, or 'last'), a run folder, or a profiler output file/folder: "
        "rocprofv3 CSV or .db, rocprof-compute workload, rocprof-sys wall_clock, ncu CSV, "
        "nsys stats CSV, PyTorch trace JSON (format detected from the content)",
    )
    p.add_argument("--top", type=integer(1), default=None, metavar="N",
                   help=f"show the N kernels with the most total time (1 or more; default: {DEFAULT_TOP} as text, "
                   "all with --json/--csv)")
    p.add_argument("--category", default=None, metavar="C", help=f"only kernels of category C: {', '.join(CATEGORIES)}")
    p.add_argument("--rank", type=_rank, default=None, metavar="N",
                   help=f"a run of several ranks: rank N's table (0 to {MAX_WORLD - 1}; default: rank 0), or 'all' "
                        "for one row per kernel and rank; ranks are never merged")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object with full kernel names")
    fmt.add_argument("--csv", action="store_true", help="print the normalized table as CSV")
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.render.hotspots import render_text, write_csv

    top = args.top if args.top is not None or args.json or args.csv else DEFAULT_TOP
    source, summary = lab_from(args).hotspots(args.path, args.rank, top, args.category)
    if args.json:
        print_json({"source": source, **summary.to_json()})
    elif args.csv:
        write_csv(summary, sys.stdout)
    else:
        # kernel and file names come from files anyone may write: no escape sequence reaches the terminal
        print(printable_lines(render_text(summary, source, width=terminal_width(160))))
    return 0

