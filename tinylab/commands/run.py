"""`tinylab run`: like `train`, plus --detach to return the run id at once."""

from __future__ import annotations

import sys

from tinylab.commands._common import add_runs_dir, lab_from, print_json
from tinylab.commands.train import configure, launch_and_follow
from tinylab.commands.runflags import add_run_arguments


def add_arguments(p) -> None:
    add_run_arguments(p)
    add_runs_dir(p)
    p.add_argument("--detach", action="store_true", help="start the run and print its id; do not follow")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(args) -> int:
    if not args.detach:
        return launch_and_follow(args, cancel_on_interrupt=False)
    lab = lab_from(args, launches=True)
    cfg, sizes = configure(lab, args)
    run = lab.launch(cfg)
    print(sizes, file=sys.stderr)
    if args.json:
        print_json({"id": run.id, "dir": str(run.dir), "status": run.status()})
    else:
        print(run.id)
    return 0
