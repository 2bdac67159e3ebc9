"""Hotspots: a run's normalized kernel table, sorted and filtered, by category, with its artifacts.

The table is loaded and narrowed with pandas in a worker (the Lab reads it and summarizes it);
the DataTable only ever holds the top N rows, because painting tens of thousands of rows takes
seconds.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from tinylab.config import ConfigError
from tinylab.core.errors import UserError
from tinylab.runs.record import RunRecord, short_id
from tinylab.service import profilers
from tinylab.service.kernels import SHAPING_FIELDS, kernel_config, triton_kernel_names
from tinylab.service.results import HotspotSummary, Timeline
from tinylab.core.text import wrap_words
from tinylab.tui.fmt import plain, safe
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.widgets.advice import AdvicePanel
from tinylab.tui.widgets.anatomy import AnatomyText
from tinylab.tui.widgets.charts import BarChart
from tinylab.tui.widgets.panes import Pane, Panes

#: Sortable columns: key -> (header, descending first).
SORTS = {
    "total_ns": ("total", True),
    "pct": ("share", True),
    "calls": ("calls", True),
    "avg_ns": ("avg", True),
    "min_ns": ("min", True),
    "max_ns": ("max", True),
    "category": ("category", False),
    "name": ("name", False),
}
NARROW_HIDDEN = ("min_ns", "max_ns")
#: Fixed widths for the short columns (the name takes the rest): widths measured from content
#: depended on when the rows arrived relative to layout, so the same table could come out squeezed.
WIDTHS = {"total_ns": 8, "pct": 6, "calls": 6, "avg_ns": 8, "min_ns": 8, "max_ns": 8, "category": 11}
TOPS = (20, 50, 100, 500)
#: How often a worker reading a trace says how far it has come.
READING_EVERY_S = 0.25

#: How to look at an artifact no tool's viewers name, by the end of its file name: what it is, and
#: the commands that open it (FILE: its path, RUN: its run), each shown on a line of its own so that
#: it copies whole. The tools' own come first (each adapter's `viewers`: profilers.viewers()).
OPEN_WITH = (
    profilers.Viewer((".csv",), "table (any profiler output works):", ("tinylab hotspots FILE",)),
    profilers.Viewer((".txt", ".md", ".log"), "text:", ("less FILE",)),
    profilers.Viewer((".html",), "report: open it in a browser"),
)


class Loaded(Message):
    """The run's record, its roofline text and its kernel tables (or None)."""

    def __init__(self, record: RunRecord, roofline: str, tables: Any) -> None:
        super().__init__()
        self.record, self.roofline, self.tables = record, roofline, tables


class TableShown(Message):
    """One rank's kernel table (the first rank's at first; the only one of a one-process run) and
    its summary with the ranks it says."""

    def __init__(self, table: Any, summary: HotspotSummary) -> None:
        super().__init__()
        self.table, self.summary = table, summary


class Reading(Message):
    """How far the read of the step anatomy's trace has come (a million-event trace takes seconds)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class TimelineShown(Message):
    """The shown rank's step anatomy, or why there is none."""

    def __init__(self, timeline: Timeline | str) -> None:
        super().__init__()
        self.timeline = timeline


class Selected(Message):
    """The rows to show (filtered, sorted, cut to the top N) and how many matched."""

    def __init__(self, rows: list[dict[str, Any]], matched: int) -> None:
        super().__init__()
        self.rows, self.matched = rows, matched


def open_hint(path: str) -> tuple[str, tuple[str, ...]]:
    """What the artifact at `path` is, and the commands that open it: the first viewer, the tools'
    then OPEN_WITH, whose suffix its name ends with."""
    lowered = path.lower()
    for viewer in (*profilers.viewers(), *OPEN_WITH):
        if lowered.endswith(viewer.suffixes):
            return viewer.what, viewer.commands
    return "most profiler outputs read as a table:", ("tinylab hotspots FILE",)


class HotspotsScreen(BaseScreen):
    TITLE = "Hotspots"
    AUTO_FOCUS = "#kernels"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="filter kernels by name"),
        Binding("c", "category", "Category", tooltip="show one category at a time, then all again"),
        Binding("s", "sort", "Sort", tooltip="sort by the next column (S: reverse)"),
        Binding("S", "reverse", "Reverse", show=False),
        Binding("n", "top", "Top N", tooltip="how many kernels to list"),
        Binding("k", "anatomy", "Anatomy", tooltip="the Triton kernel under the cursor compiled for AMD and NVIDIA "
                "GPUs at this run's model: registers, LDS, occupancy, IR"),
        Binding("t", "next_pane", "Panel", tooltip="narrow: the next panel; wide: files, roofline, step and "
                "advice take turns in the last cell"),
        Binding("a", "advice", "Advice", show=False,  # 80 columns hold no more keys; the panel strip names it
                tooltip="what to try next, from this run's own numbers (tinylab advise)"),
        Binding("b", "try_advice", "Try as B", show=False, tooltip="the Advice panel: launch the highlighted "
                "item's action as run B against this run; Compare opens when B ends"),
        Binding("y", "copy_commands", "Copy commands", show=False,  # the Files panel says "y: copy"
                tooltip="copy the Files panel's commands to your clipboard (through the terminal, as OSC 52)"),
        Binding("R", "next_rank", "Next rank", show=False,  # the head says "R: next" where it applies
                tooltip="a run of several ranks: the next rank's table (ranks are never merged; "
                "`tinylab hotspots RUN --rank all` lists them side by side)"),
    ]

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.record: RunRecord | None = None
        self.tables: Any = None  # the run's kernel tables (Lab.kernel_table: one a rank), once loaded
        self.table: Any = None  # the full kernel table shown (a pandas DataFrame): one rank's
        self.summary: HotspotSummary | None = None
        self.sort_key = "total_ns"
        self.descending = True
        self.category: str | None = None
        self.top = TOPS[0]
        self.needle = ""
        self.shown: list[dict[str, Any]] = []
        self.commands: list[str] = []  # the Files panel's, as `y` copies them
        self._debounce: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static("Loading the kernel table…", id="hot-head")
        yield Static(id="hot-reading")
        with Horizontal(id="hot-controls"):
            yield Input(placeholder="/ filter by name", compact=True, id="hot-filter")
            yield Static(id="hot-state")
        with Panes(id="hot-panes"):
            with Pane(title="Kernels", id="kernels-pane"):
                yield DataTable(id="kernels", cursor_type="row", zebra_stripes=True)
                yield Static(id="kernel-name")
            # short titles: at 80 columns the strip names the six and its "t: next panel" in 79
            # ("Categories", "Artifacts" and "Timeline" cut it at "t:"); "Step" as on the Run screen
            yield Pane(BarChart("share of kernel time by category (%)", id="categories"), title="Shares",
                       id="categories-pane")
            # paths and commands are never wrapped (a wrapped one copies broken): they scroll sideways
            yield Pane(ScrollableContainer(Static(id="artifacts"), id="artifacts-scroll"), title="Files", id="artifacts-pane",
                       classes="detail -detail")
            yield Pane(VerticalScroll(Static(id="roofline")), title="Roofline", id="roofline-pane", classes="detail")
            yield Pane(VerticalScroll(AnatomyText(id="hot-timeline")), title="Step", id="timeline-pane", classes="detail")
            yield Pane(AdvicePanel(id="advice"), title="Advice", id="advice-pane", classes="detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = f"Hotspots {self.run_id}"
        self.load()
        self.query_one("#advice", AdvicePanel).load(self.run_id)

    # ------------------------------------------------------------------ data
    @background("load")
    def load(self) -> None:
        """The table first (a small kernels.csv), then the step anatomy (the trace: seconds for a
        million events, its progress said meanwhile)."""
        record = self.backend.record(self.run_id)
        roofline = self.backend.roofline_text(self.run_id, self.app.size.width - 6)
        tables = self.backend.kernel_table(self.run_id)
        triton_kernel_names()  # read once here, not on the event loop when k asks
        self.post_message(Loaded(record, roofline, tables))
        if tables is not None:
            self._show_rank(tables, None)
        self._timeline()

    def _show_rank(self, tables: Any, rank: int | None) -> None:
        """One rank's table, summarized, then its rows (in the worker that calls it)."""
        table, rank = tables.select(rank)
        self.post_message(TableShown(table, tables.summarize(rank)))
        self.post_message(self._select(table))

    @background("rank")
    def load_rank(self, rank: int) -> None:
        self._timeline(rank)  # before the table: the anatomy shown always belongs to the rank shown
        self._show_rank(self.tables, rank)

    def _timeline(self, rank: int | None = None) -> None:
        """Post the step anatomy of the run's PyTorch trace (of `rank`'s, in a run of several: the
        first rank's by default), or why there is none, and how far its read has come; in a worker."""
        said = [0.0]

        def hear(what: str, done: int, total: int) -> None:
            now = time.monotonic()
            if now - said[0] >= READING_EVERY_S:
                said[0] = now
                self.post_message(Reading(f"{what} for the step anatomy: {done / total:.0%} of "
                                          f"{total / 1e6:,.1f} MB"))

        try:
            timeline: Timeline | str = self.backend.timeline(self.run_id, rank=rank, progress=hear)
        except UserError as exc:
            timeline = str(exc)
        self.post_message(TimelineShown(timeline))

    def _select(self, table: Any) -> Selected:
        """Filter, sort and cut the table (in the worker that calls it)."""
        if self.category:
            table = table[table["category"] == self.category]
        if self.needle:
            table = table[table["name"].str.contains(self.needle, case=False, regex=False)]
        matched = len(table)
        table = table.sort_values(self.sort_key, ascending=not self.descending, na_position="last", kind="stable")
        return Selected(table.head(self.top).to_dict("records"), matched)

    @background("select")
    def reselect(self) -> None:
        if self.table is not None:
            self.post_message(self._select(self.table))

    @on(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        self.record = message.record
        self._show_artifacts()
        self.query_one("#roofline", Static).update(Text(message.roofline))
        self.tables = message.tables
        if message.tables is None:
            self._no_table(message.record)
        self.refresh_bindings()

    @on(TableShown)
    def _on_table_shown(self, message: TableShown) -> None:
        self.table = message.table
        self._loaded(message.summary)

    @on(Reading)
    def _on_reading(self, message: Reading) -> None:
        reading = self.query_one("#hot-reading", Static)
        reading.update(plain(message.text))
        reading.display = True
        self.query_one("#hot-timeline", AnatomyText).show(message.text)

    @on(TimelineShown)
    def _on_timeline_shown(self, message: TimelineShown) -> None:
        self.query_one("#hot-reading", Static).display = False
        self.query_one("#hot-timeline", AnatomyText).show(message.timeline)

    @on(Selected)
    def _on_selected(self, message: Selected) -> None:
        self._show_rows(message.rows, message.matched)

    def _loaded(self, summary: HotspotSummary) -> None:
        from tinylab.render.hotspots import format_ns, time_of

        self.summary = summary
        head = Text()
        head.append(f"{safe(self.run_id)} ", style="bold")
        total = f", {format_ns(summary.total_ns)} of {time_of(summary)}" if summary.total_ns is not None else ""
        head.append(f"[{summary.format}] {summary.kernel_count} {summary.rows}{total}")
        ranks = summary.ranks
        if ranks and ranks.ranks:
            head.append(f"\nrank {ranks.rank} of {len(ranks.ranks)}", style="bold")
            head.append(" (R: next)" + rank_note(summary))
        if summary.note:
            head.append("\n" + safe(summary.note), style="dim")
        self.query_one("#hot-head", Static).update(head)
        cats = summary.categories
        labels = [c for c in cats if cats[c].pct is not None]
        self.query_one("#categories", BarChart).set_bars(
            labels, [round(cats[c].pct, 1) for c in labels], empty="no durations in this table")

    def _no_table(self, record: RunRecord) -> None:
        profilers = safe(", ".join(record.settings.profilers if record.settings else []) or "none")
        self.query_one("#hot-head", Static).update(Text.assemble(
            (f"{safe(self.run_id)}: no kernel table. ", "bold"),
            f"Profilers of this run: {profilers}. Launch a run with a profiler ticked in the Lab "
            "(pytorch works on any machine) to get one."))

    def _show_rows(self, rows: list[dict[str, Any]], matched: int) -> None:
        from tinylab.render.hotspots import format_ns
        from tinylab.service.kernels import short_names

        narrow = self.screen.has_class("-narrow")
        columns = [k for k in ("total_ns", "pct", "calls", "avg_ns", "min_ns", "max_ns", "category", "name")
                   if not (narrow and k in NARROW_HIDDEN)]
        table = self.query_one("#kernels", DataTable)
        table.clear(columns=True)
        shorts = short_names([r["name"] for r in rows])
        # from the rows, never from the layout: "communication" is wider than the other categories
        widths = {**WIDTHS, "category": max([WIDTHS["category"], *(len(r["category"]) for r in rows)])}
        for key in columns:
            label, _ = SORTS[key]
            if key == self.sort_key:
                label += " ▼" if self.descending else " ▲"
            width = widths.get(key)
            if key == "name":  # what is left of the row (the full name shows under the table); from the
                # screen's width, which is known before the table's own layout is
                fixed = sum(widths[k] + 2 for k in columns if k != "name")
                width = max(len(label), self.size.width - fixed - (6 if not narrow else 4))
            table.add_column(label, key=key, width=width)
        for i, row in enumerate(rows):
            cells = []
            for key in columns:
                value = row[key]
                if key.endswith("_ns"):
                    cells.append(Text(format_ns(value), justify="right"))
                elif key == "pct":
                    cells.append(Text("-" if value != value else f"{value:.1f}%", justify="right"))
                elif key == "calls":
                    cells.append(Text(f"{value:,}", justify="right"))
                elif key == "name":  # from the profiler's file: never markup
                    cells.append(plain(shorts[i]))
                else:
                    cells.append(plain(value))
            table.add_row(*cells, key=str(i))
        self.shown = rows
        state = f"{len(rows)} of {matched}" + (" matching" if self.needle or self.category else "")
        state += f" · top {self.top} · category {self.category or 'all'} · sort {SORTS[self.sort_key][0]}"
        self.query_one("#hot-state", Static).update(plain(state))
        self._show_name()

    @on(DataTable.RowHighlighted, "#kernels")
    def _show_name(self) -> None:
        table = self.query_one("#kernels", DataTable)
        widget = self.query_one("#kernel-name", Static)
        if not self.shown or not table.row_count:
            widget.update(Text("no kernels match", style="dim") if self.table is not None else "")
            return
        row = self.shown[min(table.cursor_row, len(self.shown) - 1)]
        widget.update(Text.assemble((f"{safe(row['category'])}: ", "bold"), safe(row["name"])))

    @on(DataTable.HeaderSelected, "#kernels")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        key = event.column_key.value
        if key == self.sort_key:
            self.descending = not self.descending
        else:
            self.sort_key, self.descending = key, SORTS[key][1]
        self.reselect()

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_artifacts)

    def _show_artifacts(self) -> None:
        """Each artifact, its path, what it is (wrapped to the panel) and the commands that open it,
        each path and command whole on a line of its own (the panel scrolls sideways to show one
        wider than it, and `y` copies the commands)."""
        record = self.record
        if record is None:
            return
        # inside the scrollbar's gutter, less the text's padding (0 1); a hidden panel: the screen's
        width = (self.query_one("#artifacts-scroll").scrollable_content_region.width or self.size.width - 4) - 2
        text = Text()
        self.commands = []
        if not record.profiles:
            text.append("No profiler artifacts: this run was not profiled.", style="dim")
        for prof in record.profiles:
            text.append(safe(prof.tool), style="bold")
            if prof.note:  # wrapped as the prose is: after the tool's name, then under it
                first, *rest = wrap_words(safe(prof.note), max(30, width), " " * (len(safe(prof.tool)) + 2), "  ")
                text.append(first[len(safe(prof.tool)):] + "".join(f"\n{line}" for line in rest), style="dim")
            text.append("\n")
            for name, rel in prof.artifacts.items():
                path = Path(rel) if Path(rel).is_absolute() else Path(record.dir) / rel
                what, commands = open_hint(str(path))
                text.append(f"  {safe(name)}\n", style="bold")
                text.append(f"    {safe(path)}\n")
                text.append("\n".join(wrap_words(safe(what), max(30, width), "    ", "    ")) + "\n", style="dim")
                for command in commands:
                    self.commands.append(safe(command.replace("FILE", str(path)).replace("RUN", short_id(record.id))))
                    text.append(f"      $ {self.commands[-1]}\n")
        if self.commands:
            text.append("y: copy the commands · tab, then ← → scrolls", style="dim")
        self.query_one("#artifacts", Static).update(text)

    def action_copy_commands(self) -> None:
        """Copy the Files panel's commands, one a line, for a shell: through the terminal (OSC 52),
        which reaches the clipboard of the machine the SSH session comes from where the terminal
        allows it (tmux: `set -g set-clipboard on`)."""
        if not self.commands:
            self.notify("No commands to copy: this run has no profiler artifacts.", severity="warning")
            return
        self.app.copy_to_clipboard("\n".join(self.commands) + "\n")
        n = len(self.commands)
        self.notify(f"Copied {n} command{'s' if n != 1 else ''} to the clipboard, if your terminal allows it "
                    "(OSC 52; tmux: set-clipboard on). `tinylab show RUN` prints the paths too.")

    # ---------------------------------------------------------------- actions
    def action_back(self) -> None:
        if self.focused is self.query_one("#hot-filter", Input):
            self.query_one("#kernels", DataTable).focus()
        else:
            self.app.pop_screen()

    def action_filter(self) -> None:
        self.query_one("#hot-panes", Panes).show("kernels-pane")
        self.query_one("#hot-filter", Input).focus()

    @on(Input.Changed, "#hot-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.needle = event.value.strip()
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(0.2, self.reselect)

    @on(Input.Submitted, "#hot-filter")
    def _filter_done(self) -> None:
        self.query_one("#kernels", DataTable).focus()

    def action_category(self) -> None:
        cats = list(self.summary.categories) if self.summary else []
        if not cats:
            return
        order = [None, *cats]
        self.category = order[(order.index(self.category) + 1) % len(order)] if self.category in order else None
        self.reselect()

    def action_sort(self) -> None:
        keys = list(SORTS)
        if self.screen.has_class("-narrow"):
            keys = [k for k in keys if k not in NARROW_HIDDEN]
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)] if self.sort_key in keys else keys[0]
        self.descending = SORTS[self.sort_key][1]
        self.reselect()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self.reselect()

    def action_top(self) -> None:
        self.top = TOPS[(TOPS.index(self.top) + 1) % len(TOPS)] if self.top in TOPS else TOPS[0]
        self.reselect()

    def action_advice(self) -> None:
        """The Advice panel: narrow, the panel shown; wide, the detail cell's turn."""
        if self.screen.has_class("-narrow"):
            self.query_one("#hot-panes", Panes).show("advice-pane")
        else:
            for pane in self.query(".detail"):
                pane.set_class(pane.id == "advice-pane", "-detail")
        self.query_one("#advice-table").focus()

    def action_try_advice(self) -> None:
        self.query_one("#advice", AdvicePanel).try_selected()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "try_advice":  # (asked before the panel is composed, too)
            panel = self.query("#advice")
            return bool(panel) and any(i.action.changes for i in panel.first().items or [])
        if action == "next_rank":
            return self.tables is not None and len(self.tables.ranks) > 1
        return True

    def action_next_rank(self) -> None:
        ranks = self.tables.ranks
        current = self.summary.ranks.rank if self.summary and self.summary.ranks else None
        self.load_rank(ranks[(ranks.index(current) + 1) % len(ranks)] if current in ranks else ranks[0])

    def action_anatomy(self) -> None:
        """The Kernels view at this run's model size and precision, on the kernel under the cursor."""
        table = self.query_one("#kernels", DataTable)
        if self.record is None or not self.shown or not table.row_count:
            self.notify("No kernel under the cursor: the Kernels view (K) lists every Triton kernel.",
                        severity="warning")
            return
        row = self.shown[min(table.cursor_row, len(self.shown) - 1)]
        if row["name"] not in triton_kernel_names():  # else a minute of compiles for nothing to show
            self.notify(f"{row['name']} is not one of v3's and v4's Triton kernels (on a CPU the table lists "
                        "PyTorch operators): K lists and compiles those.", severity="warning")
            return
        try:
            settings = self.record.settings
            sizes = {k: getattr(settings, k) for k in SHAPING_FIELDS} if settings else {}
            config = kernel_config(**sizes)
        except ConfigError as exc:
            self.notify(f"This run's model cannot run the Triton kernels: {exc}", severity="warning")
            return
        self.app.open_kernels(config, row["name"], f"{self.run_id}'s model")  # type: ignore[attr-defined]

    def action_next_pane(self) -> None:
        """Narrow: the next panel. Wide: the next of the detail panels (files, roofline, step,
        advice) that share the grid's last cell."""
        self.call_after_refresh(self._show_artifacts)  # wrapped to the width it is shown at
        if self.screen.has_class("-narrow"):
            self.query_one("#hot-panes", Panes).show_next()
            return
        details = list(self.query(".detail"))
        current = next((i for i, pane in enumerate(details) if pane.has_class("-detail")), 0)
        for i, pane in enumerate(details):
            pane.set_class(i == (current + 1) % len(details), "-detail")


def rank_note(summary: HotspotSummary) -> str:
    """This rank's share of time in communication, and how far apart the ranks' kernel times are."""
    info = summary.ranks
    compared = info.compared if info else None
    if compared is None:
        return ""
    mine = next(r for r in compared.per_rank if r.rank == info.rank)
    parts = []
    if mine.communication_pct is not None:
        parts.append(f"communication {mine.communication_pct:.0f}%")
    spread = compared.spread["total_ns"]
    if spread and spread.pct is not None:
        parts.append(f"kernel time: rank {spread.most} {spread.pct:+.0f}% over rank {spread.least}")
    return "".join(f" · {p}" for p in parts)
