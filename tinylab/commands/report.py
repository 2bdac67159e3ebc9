"""`tinylab report RUN...`: one self-contained markdown or HTML file about one or more runs."""

from __future__ import annotations

import sys
from pathlib import Path

from tinylab.commands._common import add_runs_dir, check_output, lab_from, write_output


def add_arguments(p) -> None:
    p.add_argument("runs", metavar="RUN", nargs="+",
                   help="run ids, unique prefixes, or 'last'; with several, the first is the baseline A")
    p.add_argument("--format", choices=("md", "html"), default=None,
                   help="md (text charts) or html (inline SVG charts); default: from -o's suffix, else md")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="write to FILE instead of stdout")
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.render.report import build_report

    fmt = args.format or ("html" if args.output and Path(args.output).suffix.lower() in (".html", ".htm") else "md")
    runs = args.runs
    if args.output is not None:
        check_output(Path(args.output), "-o")
    lab = lab_from(args)
    chosen = [lab.run(ref) for ref in runs]
    text = build_report(chosen, fmt, advice={run.id: lab.advise(str(run.dir)).items for run in chosen},
                        mask=lab.masked, history=lab.records())  # what an exercise step hides stays hidden
    if args.output is None:
        sys.stdout.write(text)
        return 0
    write_output(Path(args.output), text, "-o")  # written then renamed: a full disk never truncates the old one
    print(f"wrote {args.output} ({fmt}, {len(runs)} run{'s' if len(runs) > 1 else ''})", file=sys.stderr)
    return 0
