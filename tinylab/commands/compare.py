"""`tinylab compare A B`: two runs side by side, with B/A ratios, config notes and a kernel diff."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, lab_from, print_json, terminal_width


def add_arguments(p) -> None:
    p.add_argument("a", metavar="A", help="baseline run: id, unique prefix, or 'last'")
    p.add_argument("b", metavar="B", help="run compared with A: id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args) -> int:
    from tinylab.render.advice import verdict_lines
    from tinylab.render.compare import format_compare

    lab = lab_from(args)
    result = lab.compare(args.a, args.b)
    advice = lab.advice_verdict(args.a, args.b)  # A's advice checked against B
    if args.json:
        print_json({**result.to_json(), "advice": advice})
    else:
        width = terminal_width(200)
        print(format_compare(result, width=width))
        print("\nadvice (A's advice checked against B)\n" + "\n".join(verdict_lines(advice, min(width, 100))))
    return 0
