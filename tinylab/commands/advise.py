"""`tinylab advise RUN|PATH`: what to try next, from the run's own numbers (docs/advice.md).

Each item says what it found (condition, measured against a threshold), what fixing it can gain at
most (from the run's measured shares, judged against the run's own noise), the change that fixes
it in this lab, the exercise step that teaches it, and the evidence it read. `--try RULE` launches
that item's action as run B; `tinylab compare A B` then says whether the advice held.
"""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir, lab_from, print_json, terminal_width


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN|PATH",
                   help="run id (or unique prefix, 'last', folder), or a PyTorch profiler trace file "
                        "(.json / .json.gz)")
    p.add_argument("--json", action="store_true",
                   help="a JSON list of items, each with exactly: rule, severity, condition, measured, threshold, "
                        "impact, action, lesson, evidence")
    p.add_argument("--kernels", nargs="?", const=True, default=False, metavar="TARGET",
                   help="also compile the run's Triton kernels (v3/v4) for its card, or for TARGET (sm_80, sm_90, "
                        "gfx90a, gfx942, gfx950), and advise on spills and occupancy (a first compile takes minutes)")
    p.add_argument("--try", dest="try_rule", default=None, metavar="RULE",
                   help="launch the item RULE's action as run B (same sizes, seed and profilers) and return; "
                        "`tinylab compare RUN B` says whether the advice held once B has ended")
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.render.advice import text

    lab = lab_from(args)
    if args.try_rule:
        b, item = lab.try_advice(args.run, args.try_rule)
        a = lab.run(args.run).id
        print(f"launched run {b.id} to try {item.rule} on run {a}: {item.action.text}")
        print(f"predicted: {item.impact.text}")
        print(f"when it ends: tinylab compare {a} {b.id}   (follow it: tinylab follow {b.id})")
        return 0
    advised = lab.advise(args.run, kernels=args.kernels)
    if args.json:
        print_json(advised.to_json())
    else:
        print(text(advised.source, advised.title, advised.items, advised.notes, width=min(terminal_width(100), 100)))
    return 0
