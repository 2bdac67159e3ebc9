"""`tinylab runs`: the run store as a table (or JSON)."""

from __future__ import annotations

import time

from tinylab.commands._common import add_runs_dir, lab_from, print_json
from tinylab.runs.store import STATUSES


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--status", default=None, choices=(*STATUSES, "damaged"),
                   help="only runs with this status (damaged: config.json or events.jsonl unreadable)")


def run(args) -> int:
    lab = lab_from(args)
    rows = [r.row() for r in lab.records()]
    if args.status == "damaged":
        rows = [r for r in rows if r["problem"]]
    elif args.status:
        rows = [r for r in rows if r["status"] == args.status]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no runs in {lab.store.root}")
        return 0
    header = f"{'ID':<22} {'STARTED':<16} {'STATUS':<10} {'VER':<4} {'SAMPLES/S':>10} {'PEAK MB':>9}  CONFIG"
    print(header)
    for r in rows:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started"])) if r["started"] else "-"
        sps = f"{r['samples_per_s']:,.1f}" if r["samples_per_s"] else "-"
        mem = f"{r['peak_mem_mb']:,.0f}" if r["peak_mem_mb"] else "-"
        label = f"  [{r['label']}]" if r["label"] else ""
        status, config = ("damaged", f"! {r['problem']}") if r["problem"] else (r["status"], r["config"])
        print(f"{r['id']:<22} {started:<16} {status:<10} {r['version'] or '?':<4} {sps:>10} {mem:>9}  {config}{label}")
    return 0
