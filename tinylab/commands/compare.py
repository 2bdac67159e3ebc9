"""`tinylab compare A B`: two runs side by side, with B/A ratios, config notes and a kernel diff;
`--repeat N|auto` runs each side's config again, interleaved, and compares every run pooled."""

from __future__ import annotations

import argparse
import sys

from tinylab.commands._common import add_runs_dir, integer, lab_from, print_json, terminal_width


def repeat_count(text: str) -> int | str:
    """`--repeat`'s argparse type: a positive integer, or "auto"."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer or 'auto', got {text!r}")
    return value


def add_arguments(p) -> None:
    from tinylab.service.repeat import DEFAULT_MAX_RUNS, MIN_RUNS

    p.add_argument("a", metavar="A", help="baseline run: id, unique prefix, or 'last'")
    p.add_argument("b", metavar="B", help="run compared with A: id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--repeat", type=repeat_count, default=None, metavar="N|auto",
                   help="run each side's config N more times (same seed), interleaved (B A A B ...), one run at "
                        "a time, and compare all of them pooled; auto: pairs at a time until the samples/s "
                        "99%% interval excludes 1 or lies inside ±5%% (docs/statistics.md), or --max-runs is spent")
    p.add_argument("--max-runs", type=integer(MIN_RUNS), default=None, metavar="N",
                   help=f"with --repeat auto: at most N runs a side in all, the two given included "
                        f"(default {DEFAULT_MAX_RUNS})")


def run(args) -> int:
    from tinylab.core.errors import UserError

    if args.max_runs is not None and args.repeat != "auto":
        raise UserError("--max-runs is the budget of --repeat auto: add --repeat auto (or drop --max-runs)")
    lab = lab_from(args)
    if args.repeat is not None:
        lab.check_pair(args.a, args.b)  # before the repeats, not after them
        return _repeat(lab, args)
    _show(lab, lab.compare(args.a, args.b), args)
    return 0


def _repeat(lab, args) -> int:
    """Launch the repeats with a line per run (on stderr under --json), then the pooled comparison;
    Ctrl-C cancels the run in flight and shows what was pooled so far (exit 130)."""
    from tinylab.service.repeat import DEFAULT_MAX_RUNS, Repeat, RepeatDone, RepeatEnded

    auto = args.repeat == "auto"
    job = Repeat(lab, args.a, args.b, None if auto else args.repeat, args.max_runs or DEFAULT_MAX_RUNS)  # checks first
    log = sys.stderr if args.json else sys.stdout
    until = "until the verdict is settled, " if auto else ""
    print(f"repeating A ({job.runs['a'].id}) and B ({job.runs['b'].id}) interleaved, {until}at most "
          f"{job.planned} runs ({' '.join(s.upper() for s in job.order[:4])}{' ...' * (job.planned > 4)}), "
          "one at a time; Ctrl-C stops", file=log, flush=True)
    done, code = None, 0
    try:
        for event in job.run():
            if isinstance(event, RepeatDone):
                done = event
            elif isinstance(event, RepeatEnded):
                print(event.line(), file=log, flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cancelling the run in flight ...", file=sys.stderr, flush=True)
        job.cancel()
        done, code = job.finish(f"interrupted after {len(job.launched)} of {job.planned} runs"), 130
    print(done.ended, file=log, flush=True)
    _show(lab, done.comparison, args, {"repeat": done.to_json()})
    return code


def _show(lab, result, args, extra: dict | None = None) -> None:
    from tinylab.render.advice import verdict_lines
    from tinylab.render.compare import format_compare

    advice = lab.advice_verdict(args.a, args.b, result.noise.variation)  # A's advice checked against B
    if args.json:
        print_json({**result.to_json(), "advice": advice, **(extra or {})})
    else:
        width = terminal_width(200)
        print(format_compare(result, width=width))
        print("\nadvice (A's advice checked against B)\n" + "\n".join(verdict_lines(advice, min(width, 100))))
