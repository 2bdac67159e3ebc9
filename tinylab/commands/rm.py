"""`tinylab rm RUN...`: delete runs; a running one only with --force (which cancels it first)."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, store_from

HELP = "delete runs from the run store"


def add_arguments(p) -> None:
    p.add_argument("runs", metavar="RUN", nargs="+", help="run ids, unique prefixes, or 'last'")
    add_runs_dir(p)
    p.add_argument("--force", action="store_true", help="cancel and delete runs that are still running")


def run(args) -> int:
    from tinylab.runs.launcher import cancel

    store = store_from(args)
    runs = [store.resolve(ref) for ref in args.runs]  # all refs are checked before anything is deleted
    for run in runs:
        if args.force:
            cancel(run)
        store.remove(run, force=args.force)
        print(f"removed {run.id}")
    return 0
