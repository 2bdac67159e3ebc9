"""`tinylab compare A B`: two runs side by side, with B/A ratios, config notes and a kernel diff."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, print_json, store_from

HELP = "compare two runs side by side (A/B), with kernel diff"


def add_arguments(p) -> None:
    p.add_argument("a", metavar="A", help="baseline run: id, unique prefix, or 'last'")
    p.add_argument("b", metavar="B", help="run compared with A: id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args) -> int:
    from tinylab.analysis.compare import compare_runs, format_compare

    store = store_from(args)
    result = compare_runs(store.resolve(args.a), store.resolve(args.b))
    if args.json:
        print_json(result)
    else:
        print(format_compare(result))
    return 0
