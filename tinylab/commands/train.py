"""`tinylab train`: launch one run, stream its progress, print its summary; Ctrl-C cancels it."""

from __future__ import annotations

import sys

from tinylab.commands._common import (
    add_runs_dir,
    print_json,
    require_device,
    store_from,
)
from tinylab.runflags import add_run_arguments, config_from_args

HELP = "train one model version in a child process and print its summary"


def add_arguments(p) -> None:
    add_run_arguments(p)
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout (progress goes to stderr)")


def run(args) -> int:
    return launch_and_follow(args, cancel_on_interrupt=True)


def launch_and_follow(args, cancel_on_interrupt: bool) -> int:
    from tinylab.runs.follow import EXIT_CODES, follow
    from tinylab.runs.launcher import cancel, launch

    cfg = config_from_args(args)
    require_device(cfg)
    run = launch(store_from(args), cfg)
    log = sys.stderr if args.json else sys.stdout
    print(f"run {run.id}  ({run.dir})", file=log, flush=True)
    try:
        status = follow(run, out=log)
    except KeyboardInterrupt:
        if not cancel_on_interrupt:
            print(f"\nstopped following; run {run.id} keeps going: tinylab follow {run.id}", file=sys.stderr)
            return 0
        print(f"\ncancelling run {run.id} ...", file=sys.stderr, flush=True)
        cancel(run)
        status = run.status()
    info = run.info()
    if args.json:
        print_json({"id": run.id, "dir": str(run.dir), "status": status, "summary": info["summary"],
                    "error": info["error"]})
    print(f"run {run.id} {status}  ({run.dir})", file=log, flush=True)
    if status == "failed" and info["error"]:
        err = info["error"]
        print(f"error: {err.get('type')}: {err.get('message')}", file=sys.stderr)
    return EXIT_CODES[status]
