"""`tinylab roofline RUN`: the run's step and kernels against this device's measured ceilings."""

from __future__ import annotations

from pathlib import Path

from tinylab.commands._common import add_runs_dir, lab_from, print_json
from tinylab.runs.record import printable_lines


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--ceilings", type=Path, default=None,
                   help="a `tinylab bench --roofline --out FILE` JSON to take the ceilings from "
                        "(default: measure them now on this GPU, cached in the runs dir)")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    from tinylab.render.roofline import render

    plot = lab_from(args).roofline(args.run, ceilings_file=args.ceilings)  # measures on this GPU if it must
    if args.json:
        print_json(plot.result.to_json())
        return 0
    print(printable_lines(render(plot.result, plot.title)))  # kernel and device names from the run's files
    if not plot.has_table:
        print("no kernel table: profile the run (--profile pytorch, ncu, rocprofv3 ...) to place its kernels")
    return 0
