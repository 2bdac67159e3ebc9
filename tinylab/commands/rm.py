"""`tinylab rm RUN...`: delete runs; a running one only with --force (which cancels it first)."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, lab_from


def add_arguments(p) -> None:
    p.add_argument("runs", metavar="RUN", nargs="+", help="run ids, unique prefixes, or 'last'")
    add_runs_dir(p)
    p.add_argument("--force", action="store_true", help="cancel and delete runs that are still running")


def run(args) -> int:
    for run_id in lab_from(args).remove(args.runs, force=args.force):  # all refs are checked first
        print(f"removed {run_id}")
    return 0
