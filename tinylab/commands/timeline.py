"""`tinylab timeline RUN`: where each profiled step's time goes (GPU busy/idle, gaps, phases)."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, integer, lab_from, print_json
from tinylab.config import MAX_WORLD
from tinylab.runs.record import printable_lines


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN",
                   help="run id (or unique prefix, or 'last') of a run profiled with --profile pytorch, "
                        "or a PyTorch profiler trace file (.json / .json.gz)")
    p.add_argument("--step", type=integer(0), default=None, metavar="N",
                   help="the ProfilerStep#N to draw (0 or more; default: the step of median wall time)")
    p.add_argument("--rank", type=integer(0, MAX_WORLD - 1), default=None, metavar="N",
                   help=f"a run of several ranks: rank N's trace (0 to {MAX_WORLD - 1}; default: rank 0); ranks are "
                   "never merged")
    p.add_argument("--json", action="store_true", help="every step's numbers, the lanes and the memory series")
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.render.timeline import render

    result = lab_from(args).timeline(args.run, args.step, args.rank)
    if args.json:
        print_json(result.to_json())
    else:
        # kernel, file and device names come from files anyone may write: no escape sequence reaches the terminal
        print(printable_lines(render(result, result.title)))
    return 0
