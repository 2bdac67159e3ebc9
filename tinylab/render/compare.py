"""An A/B comparison (tinylab.analysis.compare.Comparison) as text: the metric rows, the noise
note, the scaling block and the kernel diff that every face shows alike (the CLI, the report and
the lab), and the terminal view of `tinylab compare`.
"""

from __future__ import annotations

from typing import Any, Callable

from tinylab.analysis.compare import HEADLINE, METRICS, TIMED, Comparison

from tinylab.analysis.hotspots_result import KernelDiff
from tinylab.core.names import short_name
from tinylab.render.hotspots import format_ns
from tinylab.runs.record import printable
from tinylab.core.text import wrap_words

_FORMATS = {f.key: f.fmt for f in METRICS}


def format_value(key: str, value: float | None) -> str:
    return "-" if value is None else format(value, _FORMATS.get(key, ".4g"))


def shows_unit(label: str, unit: str) -> bool:
    """Whether a metric's unit is written beside its label: not a fraction, nor a unit the label
    already says ("samples/s")."""
    return bool(unit) and unit != "fraction" and unit not in label


def metric_label(label: str, unit: str) -> str:
    """"step median (ms)", but "samples/s" alone: a unit the label already says is noise."""
    return label + (f" ({unit})" if shows_unit(label, unit) else "")


def metric_rows(result: Comparison, b: str = "B") -> list[list[str]]:
    """[label (unit), A, B, B/A, verdict] per metric, as text; the report's tables use them too.
    A timed row's B/A carries its interval (`0.80x [0.62–1.03]`) and names a side only when the
    interval does; the arrow is the direction of B's number against A's; `b` names run B (C, D...
    in reports)."""
    rows = []
    for m in result.metrics:
        ratio = ratio_text(m.ratio)
        if m.interval is not None:
            ratio = f"{ratio} [{m.interval.low:.2f}–{m.interval.high:.2f}]"
        if m.better:
            verdict = f"{'▲' if m.ratio > 1 else '▼'} {b if m.better == 'b' else 'A'} better"
        elif m.not_sure:
            verdict = "? not sure"
        elif m.ratio is not None and m.key in TIMED and m.interval is None:
            verdict = ""  # a side without the figure's spread: no verdict
        elif m.ratio is not None:
            verdict = "= same"
        else:
            verdict = ""
        rows.append([metric_label(m.label, m.unit), format_value(m.key, m.a), format_value(m.key, m.b), ratio, verdict])
    return rows


def ratio_text(ratio: float | None) -> str:
    """B/A as people read it, always with its x: 0.94x, 12.5x, 340x."""
    if ratio is None:
        return "-"
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x" if ratio < 100 else f"{ratio:,.0f}x"


def noise_note(result: Comparison) -> str | None:
    """How sure the timed rows are: the runs pooled, where the run-to-run spread came from, and for
    a verdict that is not sure, what would settle it (`--repeat N`)."""
    intervals = [m.interval for m in result.metrics if m.interval is not None]
    if not intervals:
        return None
    (name_a, name_b), (na, nb) = result.names, intervals[0].runs
    runs = f"{na} run{'s' * (na > 1)} of {name_a}, {nb} of {name_b}"
    line = (f"timed rows: B/A [95% interval; 99% for the p90 and the phases] over {runs}; run-to-run spread from "
            f"{result.noise.variation.source}")
    head = result.row(HEADLINE)
    unsure = head.interval if head is not None and head.not_sure else next(
        (i for i in intervals if not i.sure and i.settle), None)
    if unsure is not None and unsure.settle:
        line += f"; not sure: {unsure.settle} (docs/statistics.md)"
    return line


def kernel_sections(diff: KernelDiff, name: Callable[[str], str] = str,
                    b: str = "B") -> list[tuple[str, list[str], list[list[str]]]]:
    """The kernel diff as (title, header, rows) tables, the same three in every output format."""
    def listed(items) -> list[list[str]]:
        return [[name(k.name), format_ns(k.total_ns), str(k.calls)] for k in items]

    changed = [[name(k.name), format_ns(k.a_total_ns), format_ns(k.b_total_ns), ratio_text(k.ratio),
                f"{k.a_calls} -> {k.b_calls}"] for k in diff.changed]
    return [
        ("in both, biggest changes in total time", ["kernel", "A", b, f"{b}/A", f"calls A -> {b}"], changed),
        (f"only in {b} (appeared)", ["kernel", "total", "calls"], listed(diff.appeared)),
        ("only in A (gone)", ["kernel", "total", "calls"], listed(diff.disappeared)),
    ]


def scaling_rows(result: Comparison, b: str = "B") -> tuple[list[str], list[list[str]], str] | None:
    """The scaling block as (header, a row a run, the efficiency line); None for runs of one world
    size. Every face (compare, the report, the lab) shows it so."""
    sc = result.scaling
    if sc is None:
        return None
    names = {"a": "A", "b": b}

    def num(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    rows = [[names[side], str(s.world_size), num(s.samples_per_s, ",.1f"), num(s.samples_per_s_per_rank, ",.1f"),
             num(s.comm_ms, ".2f"), num(s.comm_hidden, ".0%")] for side, s in (("a", sc.a), ("b", sc.b))]
    base = names[sc.baseline]
    other = names["b" if sc.baseline == "a" else "a"]
    if sc.efficiency is None:
        line = "scaling efficiency: - (both runs need a summary with samples/s)"
    else:
        line = (f"scaling efficiency {sc.efficiency:.0%} ({other}'s samples/s per rank / {base}'s); "
                f"{other} is {sc.speedup:.2f}x as fast as {base}, ideally {sc.ideal_speedup:.2f}x")
    return ["run", "ranks", "samples/s", "per rank", "collectives ms", "hidden"], rows, line


def format_compare(result: Comparison, name_width: int = 60, width: int = 200) -> str:
    """The terminal view: who is who, the metric table, config differences, notes, kernel diff;
    its sentences wrapped at spaces to `width` columns."""
    lines = []
    for side, s in (("A", result.a), ("B", result.b)):
        label = f"  [{s.label}]" if s.label else ""
        status = f"{s.status} (damaged)" if s.problem else s.status
        lines += wrap_words(printable(f"{s.id}  {s.version or '?'}  {status}  {s.key_config}{label}"),
                            width, f"{side}  ", "    ")
    lines.append("")
    lines += text_table(["metric", "A", "B", "B/A", ""], metric_rows(result), right=(1, 2, 3))
    if noise_note(result):
        lines += wrap_words(f"({noise_note(result)})", width, "  ", "   ")
    scaled = scaling_rows(result)
    if scaled:
        header, rows, line = scaled
        lines += ["", "scaling (samples/s of the whole run, and per rank: one GPU each)"]
        lines += text_table(header, rows, right=(1, 2, 3, 4, 5))
        lines += wrap_words(line, width, "  ", "  ")
    if result.config_diff:
        lines += ["", "config differences"]
        lines += text_table(["key", "A", "B", ""], [[d.key, show_value(d.a), show_value(d.b),
                                                 "under test" if d.under_test else "NOT under test"]
                                                for d in result.config_diff])
    if result.notes:
        lines += ["", "notes"] + [line for n in result.notes for line in wrap_words(printable(n), width, "  - ", "    ")]
    diff = result.kernel_diff
    if diff is not None:
        lines += ["", "kernel diff (B vs A)"]
        for title, header, rows in kernel_sections(diff, lambda n: _cut(short_name(n), name_width)):
            lines.append(f"  {title}")
            lines += ["  " + line for line in text_table(header, rows, right=(1, 2, 3))] if rows else ["    (none)"]
    return "\n".join(printable(line) for line in lines)  # labels, notes, errors: from the runs' files


def show_value(value: Any) -> str:
    """A config value as text: lists joined, nothing as "-"."""
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None or value == "" else str(value)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def text_table(header: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> list[str]:
    """Columns padded to their widest cell (`right`: right-aligned), each line indented two spaces."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header)] + [line(r) for r in rows]
