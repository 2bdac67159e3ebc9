"""`tinylab run`: like `train`, plus --detach to return the run id at once."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, require_device, store_from
from tinylab.commands.train import launch_and_follow
from tinylab.runflags import add_run_arguments, config_from_args

HELP = "launch a run and follow it, or --detach and return its id"


def add_arguments(p) -> None:
    add_run_arguments(p)
    add_runs_dir(p)
    p.add_argument("--detach", action="store_true", help="start the run and print its id; do not follow")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(args) -> int:
    if not args.detach:
        return launch_and_follow(args, cancel_on_interrupt=False)
    from tinylab.runs.launcher import launch

    cfg = config_from_args(args)
    require_device(cfg)
    run = launch(store_from(args), cfg)
    if args.json:
        from tinylab.commands._common import print_json

        print_json({"id": run.id, "dir": str(run.dir), "status": run.status()})
    else:
        print(run.id)
    return 0
