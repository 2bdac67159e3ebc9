"""`tinylab show RUN`: everything known about one run."""

from __future__ import annotations

import time

from tinylab.commands._common import add_runs_dir, lab_from, print_json, terminal_width
from tinylab.core.eventlog import TAIL_BYTES
from tinylab.core.events import FIELD_BY_KEY, SUMMARY_FIELDS
from tinylab.runs.record import printable, short_id
from tinylab.core.text import wrap_items, wrap_words


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id (the short one `tinylab runs` and the lab show, or the full one), a unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    r = lab_from(args).record(args.run)
    if args.json:
        print_json(r.to_json())
        return 0
    width = terminal_width(200)

    def field(name: str, text: str) -> None:
        """`name` and its text, wrapped at spaces to the terminal, continuations under the text."""
        say("\n".join(wrap_words(printable(text), width, f"{name:<9}", " " * 9)))  # a newline of a file shows as ?

    field("run", f"{short_id(r.id)}  ({r.id})" if short_id(r.id) != r.id else r.id)
    field("status", r.status)
    field("folder", str(r.dir))
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "-"
    field("started", f"{started}   pid {r.pid or '-'}   device {r.device_name or '-'} ({r.device or '-'})")
    if r.job:
        submitted = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.job.submitted)) if r.job.submitted else "-"
        field("slurm", f"job {r.job.id}" + (f" ({r.job.state})" if r.job.state else "")
              + f"   submitted {submitted} from {r.job.host or '-'}   script {r.job.script or '-'}")
    # broken between settings, never inside one: `label=exercise performance-debugging step 1` split
    pairs = [printable(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")
             for k, v in sorted(r.shown_config.items()) if v not in (None, "", [])]
    say("\n".join(wrap_items(pairs, width, f"{'config':<9}", " " * 9)))
    if r.last_step:
        total = r.settings.num_steps if r.settings else "?"  # a damaged config
        loss = "-" if r.last_step.loss is None else format(r.last_step.loss, FIELD_BY_KEY["final_loss"].fmt)
        field("progress", f"step {r.last_step.step + 1}/{total}  loss {loss}")
    if r.summary:
        from tinylab.render.compare import shows_unit

        say("summary")
        for f in SUMMARY_FIELDS:
            if f.shown:
                unit = f" {f.unit}" if shows_unit(f.label, f.unit) and r.summary.get(f.key) is not None else ""
                print(f"  {f.label:<18} {r.summary.text(f.key)}{unit}")
        if r.busy:
            field("busy", f"the machine was busy: {r.busy}; these timings measure the contention, not the code")
    if r.ranks:
        _print_ranks(r)
    for prof in r.profiles:
        rank = f" rank {prof.rank}" if prof.rank is not None else ""
        field("profile", f"{prof.tool}{rank}: kernel table {prof.kernel_table or '-'}" + (f"  ({prof.note})" if prof.note else ""))
        for name, path in prof.artifacts.items():
            say(f"  {name:<24} {path}")
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


def _print_ranks(r) -> None:
    from tinylab.render.compare import text_table
    from tinylab.render.ranks import numeric_columns, rank_table, sync_line, under_engine

    say(f"ranks    {r.world_size}{under_engine(r)}  " + (sync_line(r) or ""))
    header, rows = rank_table(r)
    say("\n".join(text_table(header, rows, right=numeric_columns())))


def say(text: str) -> None:
    """Print text that quotes a run's files: its line breaks kept, every other control character
    (escape sequences that would clear the screen or retitle the terminal) shown as '?'."""
    print("\n".join(printable(line) for line in text.split("\n")))
