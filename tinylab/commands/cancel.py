"""`tinylab cancel RUN`: stop a run and its whole process group, or a Slurm run's job (scancel)."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, lab_from
from tinylab.core.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)


def run(args) -> int:
    lab = lab_from(args)
    run = lab.run(args.run)
    if not lab.cancel(run):  # the run resolved above, never its id looked up again
        raise UserError(f"run {run.id} is not running (status: {run.status()})")
    job = run.job
    print(f"run {run.id} {run.status()}" + (f" (scancel of Slurm job {job.id})" if job else ""))
    return 0
