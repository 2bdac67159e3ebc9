"""`tinylab show RUN`: everything known about one run."""

from __future__ import annotations

import time

from tinylab.commands._common import add_runs_dir, lab_from, print_json
from tinylab.events import SUMMARY_FIELDS, TAIL_BYTES
from tinylab.runs.record import printable


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    r = lab_from(args).record(args.run)
    if args.json:
        print_json(r.to_json())
        return 0
    say(f"run      {r.id}")
    say(f"status   {r.status}")
    say(f"folder   {r.dir}")
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "-"
    say(f"started  {started}   pid {r.pid or '-'}   device {r.device_name or '-'} ({r.device or '-'})")
    cfg = r.config
    say("config   " + "  ".join(printable(f"{k}={v}") for k, v in sorted(cfg.items()) if v not in (None, "", [])))
    if r.last_step:
        total = cfg.get("num_steps")
        total = total if isinstance(total, int) and not isinstance(total, bool) else "?"  # a damaged config
        loss = r.last_step.loss if r.last_step.loss is not None else "-"
        say(f"progress step {r.last_step.step + 1}/{total}  loss {loss}")
    if r.summary:
        say("summary")
        for f in SUMMARY_FIELDS:
            if f.shown:
                say(f"  {f.key:<16} {_fmt(r.summary.get(f.key))}")
    for prof in r.profiles:
        say(f"profile  {prof.tool}: kernel table {prof.kernel_table or '-'}" + (f"  ({prof.note})" if prof.note else ""))
        for name, path in prof.artifacts.items():
            say(f"  {name:<16} {r.dir}/{path}")
    if r.status == "cancelled":  # its error event is the interrupt itself, not a failure
        say(f"cancelled after {r.steps_done} step{'s' if r.steps_done != 1 else ''}"
            + (f" ({r.error.message})" if r.error else ""))
    elif r.error:
        say(f"error    {printable(str(r.error.type))}: {printable(str(r.error.message))}")
        if r.error.traceback:
            say("  " + r.error.traceback.rstrip().replace("\n", "\n  "))
    if r.exit and r.status != "cancelled":
        say(f"exit     code {r.exit.returncode}" + (f" ({r.exit.signal})" if r.exit.signal else ""))
    if r.corrupt_lines:
        say(f"warning  events.jsonl has {len(r.corrupt_lines)} unreadable line(s): {list(r.corrupt_lines[:5])}")
    if r.skipped_bytes:
        say(f"note     events.jsonl is large: read its start and its last {TAIL_BYTES >> 20} MiB "
            f"({r.skipped_bytes / 2**20:,.0f} MiB in between not read)"
            + (f"; {r.corrupt_unnumbered} unreadable line(s) there" if r.corrupt_unnumbered else ""))
    if r.problem:
        say(f"damaged  {r.problem}")
    return 0


def say(text: str) -> None:
    """Print text that quotes a run's files: its line breaks kept, every other control character
    (escape sequences that would clear the screen or retitle the terminal) shown as '?'."""
    print("\n".join(printable(line) for line in text.split("\n")))


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.4f}" if abs(v) < 100 else f"{v:,.1f}"
    return str(v)
