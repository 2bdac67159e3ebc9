"""`tinylab doctor`: the environment and, for every profiler, whether it works here and why not."""

from __future__ import annotations

from tinylab.commands._common import print_json
from tinylab.service.doctor import collect_doctor, render_text


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args) -> int:
    report = collect_doctor()
    if args.json:
        print_json(report.to_json())
    else:
        print(render_text(report))
    return 0
