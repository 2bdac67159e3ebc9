"""Self-contained reports of runs: markdown (text charts) or HTML (inline SVG charts, inline CSS).

A report is something people attach to a ticket or mail from a GPU node with no browser and no
network, so it embeds everything: no scripts, no external stylesheets, fonts or images. Both
formats are rendered from the same collected data, so they always show the same numbers.
"""

from __future__ import annotations

import html
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tinylab import __version__
from tinylab.analysis.compare import METRICS, Comparison, compare_runs, load_kernels, machine_variation
from tinylab.analysis.hotspots_result import HotspotSummary
from tinylab.core.errors import UserError
from tinylab.core.eventlog import EVENTS_FILE, sample_steps
from tinylab.core.events import FIELD_BY_KEY, Summary, number
from tinylab.render.compare import kernel_sections, metric_label, metric_rows, scaling_rows, show_value
from tinylab.render.hotspots import format_ns
from tinylab.render.ranks import numeric_columns, rank_table, ranks_caption
from tinylab.runs.record import RunRecord, printable
from tinylab.runs.store import Run

FORMATS = ("md", "html")
TOP_KERNELS = 10
#: (step field, chart title, unit); memory uses the per-step peak, which only GPUs report.
CHARTS = (
    ("loss", "loss", ""),
    ("samples_per_s", "throughput", "samples/s"),
    ("mem_peak_mb", "peak memory per step", "MB"),
)
#: The largest value a chart draws: a damaged step's 1e308 made the axis span overflow to infinity
#: (plotext raised OverflowError); no loss, throughput or memory comes near it.
CHART_RANGE = 1e150
#: Series colours of the SVG charts (A, B, C, ...), chosen to stay apart for colour-blind readers.
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00")
#: Their line patterns: solid, then dashes, so that two runs that drew the same line both show.
DASHES = ("", "7 4", "2 3", "9 3 2 3")


@dataclass
class Series:
    label: str
    xs: list[float]
    ys: list[float]


@dataclass
class Chart:
    title: str
    unit: str
    series: list[Series]
    warmup_until: int = 0  # steps 1..warmup_until are warm-up (excluded from the medians)
    empty_reason: str = ""

    @property
    def empty(self) -> bool:
        return not any(s.xs for s in self.series)


@dataclass
class RunData:
    """What one run's report section shows, collected once for either output format."""

    record: RunRecord
    charts: list[Chart]
    kernels: HotspotSummary | None = None
    notes: list[str] = field(default_factory=list)
    advice: list[Any] | None = None  # tinylab.analysis.advice.Advice items, when the caller gave them


def build_report(runs: list[Run], fmt: str = "md", advice: dict[str, list[Any]] | None = None,
                 mask: Callable[[RunRecord], RunRecord] = lambda record: record,
                 history: Sequence[RunRecord] = ()) -> str:
    """`advice`: each run's advice items by run id (a section a run; none without). `mask`: how the
    learner may see a record (tinylab.service.lab.Lab.masked hides what an exercise step keeps for
    the learner to find). `history`: the store's records, whose repeated configs give the machine's
    run-to-run spread that the comparisons' intervals start from (none: assumed)."""
    if fmt not in FORMATS:
        raise UserError(f"unknown report format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if not runs:
        raise UserError("a report needs at least one run")
    data = [collect(run, mask) for run in runs]
    for d in data:
        d.advice = (advice or {}).get(d.record.id)
    variation = machine_variation(history, data[0].record, leave_out=[d.record.id for d in data])
    comparisons = [compare_runs(data[0].record, other.record, ("A", _letter(i)), variation=variation)
                   for i, other in enumerate(data[1:], 1)]
    overlays = _overlay_charts(data) if len(runs) > 1 else []
    render = _markdown if fmt == "md" else _html
    return _clean(render(data, comparisons, overlays))


def _clean(text: str) -> str:
    """A report quotes run files (labels, config values, errors, tracebacks) and is often read with
    `cat` or `less -R`: line breaks stay, every other control character (an escape sequence that
    clears the screen or retitles the terminal) becomes '?', wherever it came from."""
    return "\n".join(printable(line) for line in text.split("\n"))


def collect(run: Run, mask: Callable[[RunRecord], RunRecord]) -> RunData:
    record = mask(run.record())
    steps = sample_steps(run.dir / EVENTS_FILE)  # a bounded sample of every step, for the charts
    warmup = max((e.step + 1 for e in steps if e.warmup), default=0)
    charts = []
    for key, title, unit in CHARTS:
        points = [(e.step + 1, number(getattr(e, key))) for e in steps]
        points = [(x, y) for x, y in points if y is not None and abs(y) <= CHART_RANGE]
        reason = "no steps recorded" if not steps else (
            "not recorded: device memory is tracked on GPUs only" if key == "mem_peak_mb" else "not recorded")
        charts.append(Chart(title, unit, [Series(record.id, [p[0] for p in points], [p[1] for p in points])],
                            warmup, reason))
    data = RunData(record, charts)
    loaded = load_kernels(record, data.notes, f"run {run.id}")
    if loaded is not None:
        from tinylab.analysis.hotspots import summarize

        table, kernel_format = loaded
        data.kernels = summarize(table, TOP_KERNELS, None, fmt=kernel_format)
        if table.attrs.get("ranks"):  # ranks are never merged: say whose table this is
            data.notes.append(f"the top kernels of rank {table.attrs['rank']} of {len(table.attrs['ranks'])} ranks "
                              f"(`tinylab hotspots {run.id} --rank N` for another, `--rank all` for every rank)")
    return data


def _overlay_charts(data: list[RunData]) -> list[Chart]:
    """Each chart with every run on it, labelled A, B, C... as in the comparison tables."""
    overlays = []
    for i, (_, title, unit) in enumerate(CHARTS):
        series = [Series(f"{_letter(j)} {d.record.id}", d.charts[i].series[0].xs, d.charts[i].series[0].ys)
                  for j, d in enumerate(data)]
        overlays.append(Chart(title, unit, series, 0, data[0].charts[i].empty_reason))
    return overlays


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"#{i + 1}"


# ------------------------------------------------------------------------------ shared rows
def _header_rows(record: RunRecord) -> list[list[str]]:
    start = record.start
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started)) if record.started else "-"
    rows = [
        ["status", record.status],
        ["version", str(record.version or "?")],
        ["config", record.key_config],
        ["label", record.label or "-"],
        ["device", f"{record.device_name or '-'} ({record.device or '-'})"],
        ["started", started],
        ["steps", f"{record.steps_done} of {record.settings.num_steps if record.settings else '?'}"],
        ["torch / triton", f"{(start.torch if start else None) or '-'} / {(start.triton if start else None) or '-'}"],
        ["folder", str(Path(record.dir).resolve())],
    ]
    if record.exit:
        sig = record.exit.signal
        rows.append(["exit code", f"{record.exit.returncode}" + (f" ({sig})" if sig else "")])
    if record.corrupt_lines:
        rows.append(["unreadable event lines", ", ".join(map(str, record.corrupt_lines[:10]))])
    if record.problem:
        rows.append(["damaged", record.problem])
    return rows


def _summary_rows(summary: Summary) -> list[list[str]]:
    """The compared metrics, with the initial loss beside the final one."""
    rows = []
    for f in METRICS:
        if f.key == "final_loss":
            rows.append([FIELD_BY_KEY["initial_loss"].label, summary.text("initial_loss")])
        rows.append([metric_label(f.label, f.unit), summary.text(f.key)])
    if summary.params_trained is not None and summary.params_total is not None:
        rows.append(["trained parameter tensors", f"{summary.params_trained:.0f} of {summary.params_total:.0f}"])
    return rows


def _kernel_table_rows(kernels: HotspotSummary, name: Callable[[str], str] = str) -> list[list[str]]:
    return [[str(i), name(k.name), format_ns(k.total_ns), f"{k.pct:.1f}%" if k.pct is not None else "-",
             str(k.calls), format_ns(k.avg_ns), k.category] for i, k in enumerate(kernels.kernels, 1)]


KERNEL_HEADER = ["#", "kernel", "total", "share", "calls", "avg", "category"]
METRIC_HEADER = ["metric", "A", "B", "B/A", ""]


def _config_rows(cfg: dict[str, Any]) -> list[list[str]]:
    """The run's config.json as it is (it may be damaged): keys and values printable."""
    return [[printable(str(key)), printable(show_value(value))] for key, value in sorted(cfg.items())]


def _not_finished(record: RunRecord) -> str:
    if record.status == "running":
        return "The run is still running: no summary yet; the charts show the steps so far."
    return f"No summary: the run is {record.status}."


def _chart_caption(chart: Chart) -> str:
    if chart.warmup_until:
        return f"steps 1-{chart.warmup_until} are warm-up, left out of the medians"
    return ""


# ------------------------------------------------------------------------------ markdown
def _markdown(data: list[RunData], comparisons: list[Comparison], overlays: list[Chart]) -> str:
    out = [f"# tinylab report: {len(data)} run{'s' if len(data) > 1 else ''}", "",
           f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')} by tinylab {__version__}.", ""]
    for d in data:
        r = d.record
        out += [f"## Run {_md_text(r.id)} ({_md_text(r.version or '?')}, {r.status})", ""]
        out += _md_table(["", ""], _header_rows(r)) + [""]
        out += ["### Summary", ""]
        out += (_md_table(["metric", "value"], _summary_rows(r.summary)) if r.summary
                else [_not_finished(r)]) + [""]
        if r.ranks:
            out += ["### Ranks", "", _md_text(ranks_caption(r, sentences=True)), ""]
            out += _md_table(*rank_table(r)) + [""]
        if r.error:
            err = r.error
            out += ["### Error", "", f"**{_md_text(err.type)}**: {_md_text(err.message)}", ""]
            if err.traceback:
                out += _md_fence(err.traceback.rstrip()) + [""]
        out += ["### Charts", ""]
        for chart in d.charts:
            out += _md_chart(chart)
        out += _md_kernels(d)
        if d.advice is not None:
            out += ["### Advice", ""] + _advice_md(d.advice)
        out += ["### Config", ""] + _md_table(["key", "value"], _config_rows(r.shown_config)) + [""]
    if comparisons:
        out += ["## Comparison", ""]
        for chart in overlays:
            out += _md_chart(chart)
        for i, result in enumerate(comparisons, 1):
            out += _md_comparison(result, _letter(i))
    return "\n".join(out).rstrip() + "\n"


def _md_chart(chart: Chart, width: int = 76, height: int = 16) -> list[str]:
    heading = f"**{chart.title}**" + (f" ({chart.unit})" if chart.unit else "")
    if chart.empty:
        return [heading + f": {chart.empty_reason}.", ""]
    import plotext as plt

    plt.clear_figure()
    overlay = len(chart.series) > 1
    for s in chart.series:
        if s.xs:  # colours are stripped below, so overlaid series are told apart by their letter
            plt.plot(s.xs, s.ys, label=s.label if overlay else None, marker=s.label[0] if overlay else None)
    plt.plotsize(width, height)
    plt.theme("clear")
    plt.xlabel("step")
    text = plt.uncolorize(plt.build()).rstrip()
    plt.clear_figure()
    caption = _chart_caption(chart)
    return [heading, "", "```text", text, "```", *([f"_{caption}_", ""] if caption else [""])]


def _md_kernels(d: RunData) -> list[str]:
    if d.kernels is None and not d.notes:
        return []
    out = ["### Top kernels", ""]
    if d.kernels is not None:
        k = d.kernels
        out += [f"{k.kernel_count} {k.rows} from {_md_text(k.format)}"
                + (f"; note: {_md_text(k.note)}" if k.note else ""), ""]
        out += _md_table(KERNEL_HEADER, _kernel_table_rows(k, _md_code)) + [""]
    out += [f"- {_md_text(n)}" for n in d.notes] + ([""] if d.notes else [])
    return out


def _advice_md(items: list[Any]) -> list[str]:
    """The run's advice (tinylab advise): a row an item, then each item's action."""
    from tinylab.render.advice import HEADER, rows

    if not items:
        return ["No advice: no rule found anything to say about this run.", ""]
    return _md_table(HEADER, rows(items)) + [""] + [f"- {_md_text(i.rule)}: {_md_text(i.action.text)}"
                                                 for i in items] + [""]


def _md_comparison(result: Comparison, letter: str) -> list[str]:
    a, b = result.a, result.b
    out = [f"### {letter} vs A: {b.id} ({b.version}) vs {a.id} ({a.version})", "",
           f"A = {_md_text(a.key_config)}; {letter} = {_md_text(b.key_config)}. Ratios are {letter}/A.", ""]
    out += _md_table(["metric", "A", letter, f"{letter}/A", ""], metric_rows(result, letter)) + [""]
    scaled = scaling_rows(result, letter)
    if scaled:
        header, rows, line = scaled
        out += ["Scaling (samples/s of the whole run, and per rank):", ""] + _md_table(header, rows) + ["", line, ""]
    if result.config_diff:
        out += ["Config differences:", ""]
        out += _md_table(["key", "A", letter, "under test"],
                         [[d.key, show_value(d.a), show_value(d.b), "yes" if d.under_test else "**no**"]
                          for d in result.config_diff]) + [""]
    out += [f"- {_md_text(n)}" for n in result.notes] + ([""] if result.notes else [])
    diff = result.kernel_diff
    if diff is not None:
        for title, header, rows in kernel_sections(diff, _md_code, letter):
            out += [f"Kernels {title}:", ""] + (_md_table(header, rows) if rows else ["none"]) + [""]
    return out


def _md_text(value: Any) -> str:
    """One table cell or line: pipes would split cells and newlines would end the row; outside a
    code span, markup (a `<script>` in a label or an error message) is escaped, never passed on.
    Control characters become '?' in build_report's _clean, which the whole report goes through."""
    text = str(value).replace("|", "\\|").replace("\n", " ")
    if len(text) > 1 and text.startswith("`") and text.endswith("`"):  # a code span shows markup as text
        return text
    return text.replace("&", "&amp;").replace("<", "&lt;")  # no tag can open; "->" stays readable


def _md_fence(text: str) -> list[str]:
    """A fenced block for text that may itself hold backticks: the fence is longer than any run."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", text, fence]


def _md_code(name: str) -> str:
    """Kernel names as code: their <template arguments> would otherwise be read as HTML tags."""
    return "`" + name.replace("`", "'") + "`"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md_text(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_text(c) for c in row) + " |" for row in rows]
    return lines


# ------------------------------------------------------------------------------ html
CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 980px; color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f4f6; }
.status-finished { color: #1a7f37; } .status-failed, .status-lost { color: #c62828; }
.status-cancelled, .status-running { color: #9a6700; }
.better { font-weight: 600; } .note { color: #555; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: 12px; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 12px; }
svg { max-width: 100%; height: auto; } svg text { font: 11px system-ui, sans-serif; fill: #333; }
.kernel { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
"""


def _html(data: list[RunData], comparisons: list[Comparison], overlays: list[Chart]) -> str:
    e = html.escape
    title = f"tinylab report: {len(data)} run{'s' if len(data) > 1 else ''}"
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
           f"<h1>{e(title)}</h1>",
           f"<p class=\"note\">Generated {e(time.strftime('%Y-%m-%d %H:%M:%S'))} by tinylab {e(__version__)}.</p>"]
    for d in data:
        r = d.record
        out.append(f'<section id="run-{e(r.id)}">')
        out.append(f'<h2>Run {e(r.id)} ({e(str(r.version or "?"))}, '
                   f'<span class="status-{e(r.status)}">{e(r.status)}</span>)</h2>')
        out += _html_table(None, _header_rows(r))
        out.append("<h3>Summary</h3>")
        out += (_html_table(["metric", "value"], _summary_rows(r.summary), numeric=(1,)) if r.summary
                else [f"<p>{e(_not_finished(r))}</p>"])
        if r.ranks:
            out += ["<h3>Ranks</h3>", f"<p>{e(ranks_caption(r, sentences=True))}</p>"]
            out += _html_table(*rank_table(r), numeric=numeric_columns())
        if r.error:
            err = r.error
            out += ["<h3>Error</h3>", f"<p><strong>{e(str(err.type))}</strong>: {e(str(err.message))}</p>"]
            if err.traceback:
                out.append(f"<pre>{e(err.traceback.rstrip())}</pre>")
        out.append("<h3>Charts</h3>")
        out += [_svg_figure(chart) for chart in d.charts]
        if d.kernels is not None or d.notes:
            out.append("<h3>Top kernels</h3>")
            if d.kernels is not None:
                k = d.kernels
                out.append(f"<p>{k.kernel_count} {k.rows} from {e(str(k.format))}"
                           + (f"; note: {e(str(k.note))}" if k.note else "") + "</p>")
                out += _html_table(KERNEL_HEADER, _kernel_table_rows(k), numeric=(0, 2, 3, 4, 5), mono=(1,))
            out += [f'<p class="note">{e(n)}</p>' for n in d.notes]
        if d.advice is not None:
            from tinylab.render.advice import HEADER, rows

            out.append("<h3>Advice</h3>")
            out += _html_table(HEADER, rows(d.advice)) + [f"<p>{e(i.rule)}: {e(i.action.text)}</p>" for i in d.advice]
        out.append("<details><summary>Config</summary>")
        out += _html_table(["key", "value"], _config_rows(r.shown_config))
        out += ["</details>", "</section>"]
    if comparisons:
        out += ['<section id="comparison">', "<h2>Comparison</h2>"]
        out += [_svg_figure(chart) for chart in overlays]
        for i, result in enumerate(comparisons, 1):
            out += _html_comparison(result, _letter(i))
        out.append("</section>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _html_comparison(result: Comparison, letter: str) -> list[str]:
    e = html.escape
    a, b = result.a, result.b
    out = [f"<h3>{letter} vs A: {e(b.id)} ({e(str(b.version))}) vs {e(a.id)} ({e(str(a.version))})</h3>",
           f"<p>A = {e(a.key_config)}; {letter} = {e(b.key_config)}. Ratios are {letter}/A.</p>"]
    out += _html_table(["metric", "A", letter, f"{letter}/A", ""], metric_rows(result, letter),
                       numeric=(1, 2, 3), marked=4, colours={"A": COLOURS[0], letter: _colour(letter)})
    scaled = scaling_rows(result, letter)
    if scaled:
        header, rows, line = scaled
        out.append("<p>Scaling (samples/s of the whole run, and per rank):</p>")
        out += _html_table(header, rows, numeric=(1, 2, 3, 4, 5)) + [f"<p>{e(line)}</p>"]
    if result.config_diff:
        out.append("<p>Config differences:</p>")
        out += _html_table(["key", "A", letter, "under test"],
                           [[d.key, show_value(d.a), show_value(d.b), "yes" if d.under_test else "NO"]
                            for d in result.config_diff])
    if result.notes:
        out.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in result.notes) + "</ul>")
    diff = result.kernel_diff
    if diff is not None:
        for title, header, rows in kernel_sections(diff, b=letter):
            out.append(f"<p>Kernels {e(title)}:</p>")
            out += _html_table(header, rows, numeric=tuple(range(1, len(header))), mono=(0,)) if rows else ["<p>none</p>"]
    return out


def _html_table(header: list[str] | None, rows: list[list[str]], numeric: tuple[int, ...] = (),
                mono: tuple[int, ...] = (), marked: int | None = None,
                colours: dict[str, str] | None = None) -> list[str]:
    """`marked`: the column saying which run is better ("▲ C better"), drawn in that run's chart
    colour from `colours` (by letter): A better and C better never look alike."""
    e = html.escape
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = "num" if i in numeric else "kernel" if i in mono else "better" if i == marked and "better" in cell else ""
            tag = "th" if header is None and i == 0 else "td"
            winner = cell.split()[-2] if cls == "better" and len(cell.split()) >= 2 else None
            colour = (colours or {}).get(winner or "")
            attr = (f' class="{cls}"' if cls else "") + (f' style="color: {colour}"' if colour else "")
            cells.append(f"<{tag}{attr}>{e(str(cell))}</{tag}>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return out


def _svg_figure(chart: Chart, width: int = 720, height: int = 240) -> str:
    """A line chart as inline SVG: axes, min/mid/max ticks, warm-up band, one polyline a series."""
    e = html.escape
    heading = e(chart.title + (f" ({chart.unit})" if chart.unit else ""))
    if chart.empty:
        return f"<p><strong>{heading}</strong>: {e(chart.empty_reason)}.</p>"
    left, right, top, bottom = 64, 16, 28, 36
    xs = [x for s in chart.series for x in s.xs]
    ys = [y for s in chart.series for y in s.ys]
    x0, x1 = _span(min(xs), max(xs))
    y0, y1 = _span(min(ys), max(ys))
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{heading}">',
             f"<title>{heading}</title>",
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#ccc"/>']
    if chart.warmup_until:
        band = min(px(chart.warmup_until + 0.5), left + pw) - left
        parts.append(f'<rect x="{left}" y="{top}" width="{band:.1f}" height="{ph}" fill="#f1f1f1"/>'
                     f'<text x="{left + 4}" y="{top + ph - 6}">warm-up</text>')
    for frac in (0.0, 0.5, 1.0):
        y = y0 + frac * (y1 - y0)
        parts.append(f'<line x1="{left - 4}" x2="{left + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#e5e5e5"/>'
                     f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{e(_tick(y))}</text>')
    for x in _step_ticks(x0, x1):  # steps are whole numbers: no tick at step 4.5
        parts.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{x:,}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 4}" text-anchor="middle">step</text>')
    parts.append(f'<text x="{left}" y="{top - 10}" font-weight="600">{heading}</text>')
    for i, s in enumerate(chart.series):
        colour = COLOURS[i % len(COLOURS)]
        # each later run dashed: where two runs draw the same line, the earlier shows through the gaps
        dash = f' stroke-dasharray="{DASHES[i % len(DASHES)]}"' if i % len(DASHES) else ""
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(s.xs, s.ys))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8"{dash} points="{points}"/>')
        if len(s.xs) <= 60:
            parts += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{colour}"/>' for x, y in zip(s.xs, s.ys)]
        if len(chart.series) > 1:
            ly = top + 14 + 14 * i
            parts.append(f'<line x1="{left + pw - 200}" x2="{left + pw - 184}" y1="{ly - 4}" y2="{ly - 4}" '
                         f'stroke="{colour}" stroke-width="3"{dash}/><text x="{left + pw - 178}" y="{ly}">{e(s.label)}</text>')
    parts.append("</svg>")
    caption = _chart_caption(chart)
    return "<figure>" + "".join(parts) + (f"<figcaption>{e(caption)}</figcaption>" if caption else "") + "</figure>"


def _step_ticks(lo: float, hi: float) -> list[int]:
    """Whole steps at the axis's start, middle and end (one tick where they round together)."""
    return sorted({round(v) for v in (lo, (lo + hi) / 2, hi) if lo <= round(v) <= hi}) or [round((lo + hi) / 2)]


def _colour(letter: str) -> str:
    """The chart colour of the run with this letter (A, B, C ...)."""
    return COLOURS[(ord(letter) - ord("A")) % len(COLOURS)] if len(letter) == 1 else COLOURS[0]


def _span(lo: float, hi: float) -> tuple[float, float]:
    """A non-empty axis range: a flat series (or a single point) still gets a visible line."""
    if hi > lo:
        return lo, hi
    pad = abs(lo) * 0.05 or 1.0
    return lo - pad, hi + pad


def _tick(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
