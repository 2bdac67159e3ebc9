"""`tinylab cancel RUN`: stop a run and its whole process group."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, store_from
from tinylab.errors import UserError

HELP = "cancel a running run (SIGINT, then SIGTERM, then SIGKILL)"


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.runs.launcher import cancel

    run = store_from(args).resolve(args.run)
    if not cancel(run):
        raise UserError(f"run {run.id} is not running (status: {run.status()})")
    print(f"run {run.id} {run.status()}")
    return 0
