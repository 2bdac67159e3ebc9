"""`tinylab follow RUN`: stream a run's output from its files until it ends."""

from __future__ import annotations

import sys

from tinylab.commands._common import add_runs_dir, lab_from
from tinylab.service.runs import EXIT_CODES, watch
from tinylab.runs.record import printable


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--tail", action="store_true", help="start at the end of the log instead of the beginning")


def run(args) -> int:
    run = lab_from(args).run(args.run)
    print(f"following run {run.id} ({_shown(run, run.status())}), Ctrl-C stops following (the run keeps going)",
          file=sys.stderr)
    status, said = "running", None
    try:
        for status in watch(run, sys.stdout, from_start=not args.tail):
            if status == "queued" and said != status:
                job = run.job
                print(f"queued as Slurm job {job.id if job else '?'}: it starts when Slurm gives it its nodes",
                      file=sys.stderr, flush=True)
            elif said == "queued" and status == "running":
                print("Slurm started the job", file=sys.stderr, flush=True)
            said = status
    except KeyboardInterrupt:
        print(f"\nstopped following; run {run.id} keeps going", file=sys.stderr)
        return 0
    print(f"run {run.id} {_shown(run, status)}", file=sys.stderr)
    return EXIT_CODES[status]


def _shown(run, status: str) -> str:
    """The status as `runs` and `show` name it: a run whose config or events cannot be read is damaged."""
    problem = run.damage()
    return f"damaged ({status}): {printable(problem)}" if problem else status
