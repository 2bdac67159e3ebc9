"""`tinylab runs`: the run store as a table (or JSON), newest first as in the lab's Runs screen,
each run by the short id the lab shows (every command accepts it; --json has both)."""

from __future__ import annotations

import sys
import time

from tinylab.commands._common import add_runs_dir, lab_from, print_json, terminal_width
from tinylab.runs.record import short_id
from tinylab.service.runs import STATUSES


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--status", default=None, choices=(*STATUSES, "damaged"),
                   help="only runs with this status (damaged: config.json or events.jsonl unreadable)")


def run(args) -> int:
    lab = lab_from(args)
    rows = [r.row() for r in reversed(lab.records())]
    if args.status == "damaged":
        rows = [r for r in rows if r["problem"]]
    elif args.status:
        rows = [r for r in rows if r["status"] == args.status]
    if (note := lab.store.unreadable_note()) is not None:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no {args.status + ' ' if args.status else ''}runs in {lab.store.root}")
        return 0
    width = terminal_width(200)
    peak = width >= 100  # the peak-memory column only where there is room for it
    header = f"{'ID':<14} {'STARTED':<11} {'STATUS':<9} {'VER':<3} {'SAMPLES/S':>9}" + (f" {'PEAK MB':>8}" if peak else "")
    print(header + "  CONFIG")
    room = max(20, width - len(header) - 3)
    for r in rows:
        started = time.strftime("%m-%d %H:%M", time.localtime(r["started"])) if r["started"] else "-"
        sps = f"{r['samples_per_s']:,.1f}" if r["samples_per_s"] else "-"
        mem = f" {r['peak_mem_mb']:>8,.0f}" if peak and r["peak_mem_mb"] else (f" {'-':>8}" if peak else "")
        label = f"  [{r['label']}]" if r["label"] else ""
        status, config = ("damaged", f"! {r['problem']}") if r["problem"] else (r["status"], r["config"] + label)
        if r["busy"] and status == "finished":  # `show RUN` says why; its timings are the machine's
            status = "busy"
        config = config if len(config) <= room else config[: room - 1] + "…"
        print(f"{short_id(r['id']):<14} {started:<11} {status:<9} {r['version'] or '?':<3} {sps:>9}{mem}  {config}")
    return 0

