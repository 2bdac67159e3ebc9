"""The Advice panel of the Run and Hotspots screens: a run's advice (tinylab.service.Lab.advise), a
row an item, the highlighted item in full below, and the try-it loop: its action launched as run B
against this run as A (Lab.try_advice), whose Run screen opens Compare when B ends.

Nothing in it is cut: a row's measured value wraps in its cell, and the panel scrolls as one (the
table shows every row), so that at 80x24 the page keys, or an arrow past the first or last row,
reach the last item's action below the table.

The panel loads and launches in thread workers and posts what they found; its screen binds the
keys (`a` shows the panel, `b` tries the highlighted item) so that they are in the footer and the
command palette.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.message import Message
from textual.widgets import DataTable, Static

from tinylab.core.errors import UserError
from tinylab.render.advice import MARKS, bound_text, detail
from tinylab.tui.fmt import plain, safe

#: Fixed widths of the short columns (the measured value takes the rest).
WIDTHS = {"mark": 1, "rule": 21, "bound": 11}
#: The narrowest measured column: in a narrower panel (a cell of Hotspots' grid at 120 columns) the
#: table leaves it out and the detail under it says the measured value, whole.
MIN_MEASURED = 24


class AdviceLoaded(Message):
    def __init__(self, items: list[Any] | None, notes: list[str], error: str | None) -> None:
        super().__init__()
        self.items, self.notes, self.error = items, notes, error


class AdviceTried(Message):
    """Run B was launched to try item `rule` of run `a_id` (or `error` says why not)."""

    def __init__(self, a_id: str, b_id: str | None, rule: str, error: str | None = None) -> None:
        super().__init__()
        self.a_id, self.b_id, self.rule, self.error = a_id, b_id, rule, error


class WholeTable(DataTable):
    """A table shown whole in a scroll box (the Advice panel's items, Compare's metrics over their
    notes): the box scrolls, not the table, so the keys that would page the table, and an arrow
    past its first or last row, scroll the box (SkipAction hands the key on to it)."""

    def action_page_down(self) -> None:
        raise SkipAction()

    def action_page_up(self) -> None:
        raise SkipAction()

    def action_cursor_down(self) -> None:
        if self.cursor_row >= self.row_count - 1:
            raise SkipAction()
        super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.cursor_row <= 0:
            raise SkipAction()
        super().action_cursor_up()


class AdvicePanel(VerticalScroll, can_focus=False):  # the table takes the keys, and hands the page keys on
    DEFAULT_CSS = """
    AdvicePanel { height: 1fr; scrollbar-gutter: stable; }
    AdvicePanel > WholeTable { max-height: initial; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run_id: str | None = None
        self.items: list[Any] | None = None  # None until loaded, and when there is no advice
        self.loaded = False  # the worker's answer came: items, or why there are none
        self._notes: list[str] = []
        self._filled_at = -1  # the width the table was filled at
        self._heights: list[int] = []  # each row's lines, its measured value wrapped
        # held, not queried: a closing screen marks its widgets for removal, and the panel, still
        # running, may take its answer after (a query found no '#advice-detail': NoMatches, seen as
        # a run ended)
        self._head = Static("Advice: loading…", id="advice-head")
        self._table = WholeTable(id="advice-table", cursor_type="row", zebra_stripes=True)
        self._detail = Static(id="advice-detail")

    def compose(self) -> ComposeResult:
        yield self._head
        yield self._table
        yield self._detail

    # ------------------------------------------------------------------ data
    def load(self, run_id: str) -> None:
        self.run_id = run_id
        self._load()

    @work(thread=True, exclusive=True, group="advice", exit_on_error=False)
    def _load(self) -> None:
        try:
            advised = self.app.backend.advise(self.run_id)  # type: ignore[attr-defined]
        except UserError as exc:
            self.post_message(AdviceLoaded(None, [], str(exc)))
            return
        self.post_message(AdviceLoaded(advised.items, advised.notes, None))

    @on(AdviceLoaded)
    def _loaded(self, message: AdviceLoaded) -> None:
        message.stop()
        self.loaded = True
        if message.items is None:
            self._head.update(Text(f"No advice: {safe(message.error)}"))
            self._table.display = False
            return
        self.items, self._notes = message.items, message.notes
        self._fill()
        self.screen.refresh_bindings()  # the screen's "try" key is offered once an item can be tried

    def on_resize(self) -> None:
        if self.items is not None and self._filled_at != self.size.width:
            self._fill()  # the measured column and the detail fit the width the panel has now

    def _width(self) -> int:
        """The columns the panel's content has (its scrollbar's kept: scrollbar-gutter is stable)."""
        return self.scrollable_content_region.width or 78  # (not laid out yet: on_resize fills it again)

    def _fill(self) -> None:
        """The head line, a row an item (the highlighted row kept) and the detail, at the panel's width."""
        items = self.items or []
        head, table = self._head, self._table
        row = table.cursor_row if table.row_count else 0
        table.clear(columns=True)
        self._filled_at = self.size.width
        # the measured value takes what the row leaves (cells are padded by one a side), so that no
        # horizontal scrollbar takes a line of an 80x24 screen; it wraps in its cell, never cut
        rest = self._width() - sum(WIDTHS.values()) - 2 * (len(WIDTHS) + 1)
        measured = rest >= MIN_MEASURED
        for key, label in (("mark", ""), ("rule", "rule"), ("bound", "at most"), ("measured", "measured")):
            if key in WIDTHS or measured:
                table.add_column(label, key=key, width=WIDTHS.get(key, rest))
        table.display = bool(items)
        tally = {s: sum(i.severity == s for i in items) for s in MARKS}  # "2 suggestions", "1 error", "2 good"
        counts = [f"{n} {s}{'s' if n > 1 and s != 'good' else ''}" for s, n in tally.items() if n]
        tryable = any(i.action.changes for i in items)
        head.update(Text.assemble(("Advice: ", "bold"), ", ".join(counts) or "nothing to say about this run",
                                  (" · b: try the highlighted item as run B" if tryable else "", "dim"),
                                  *[("\n" + safe(f"note: {n}"), "dim") for n in self._notes]))
        self._heights = []
        for i, item in enumerate(items):
            value = plain(item.measured.text)
            # the row's height from the lines its cell wraps to, set here: the height DataTable works
            # out itself comes when it is idle, after the table's own height is set from the rows
            self._heights.append(max(1, len(value.wrap(self.app.console, rest))) if measured else 1)
            table.add_row(MARKS.get(item.severity, "?"), item.rule, Text(bound_text(item), justify="right"),
                          *([value] if measured else []), key=str(i), height=self._heights[-1])
        # the table's height from its rows (all of them: the panel scrolls), set here for the same reason
        table.styles.height = 1 + sum(self._heights)
        if items:
            table.move_cursor(row=min(row, len(items) - 1))
        self._show_detail()

    @on(DataTable.RowHighlighted, "#advice-table")
    def _highlighted(self) -> None:
        self._show_detail()
        self.call_after_refresh(self._scroll_to_row)

    def _scroll_to_row(self) -> None:
        """The panel scrolled so that the highlighted row is on screen (from the top, the first row's)."""
        row = self._table.cursor_row
        if not self._heights or not 0 <= row < len(self._heights):
            return
        top = self._table.virtual_region.y + 1 + sum(self._heights[:row])
        start = 0 if row == 0 else top
        self.scroll_to_region(Region(0, start, 1, top + self._heights[row] - start), animate=False)

    def _show_detail(self) -> None:
        item = self.selected()
        # each line is printable already (render.advice.detail): Text keeps the line breaks, never markup
        self._detail.update(Text("\n".join(detail(item, max(40, self._width()))) if item else ""))

    def selected(self) -> Any | None:
        if not self.items or not self._table.row_count:
            return None
        return self.items[min(self._table.cursor_row, len(self.items) - 1)]

    # ---------------------------------------------------------------- try it
    def try_selected(self) -> None:
        """Launch the highlighted item's action as run B (a notification says why when it cannot)."""
        item = self.selected()
        if item is None:
            self.notify("No advice item to try: the panel lists none.", severity="warning")
        elif not item.action.changes:
            self.notify(f"{item.rule}: {item.action.text}. No setting does it, so there is nothing to launch.",
                        severity="warning")
        else:
            self.notify(f"Launching run B: {item.action.text}", title=f"Try {item.rule}")
            self._try(item.rule)

    @work(thread=True, exclusive=True, group="advice-try", exit_on_error=False)
    def _try(self, rule: str) -> None:
        try:
            b, _ = self.app.backend.try_advice(self.run_id, rule)  # type: ignore[attr-defined]
        except UserError as exc:
            self.post_message(AdviceTried(self.run_id or "", None, rule, str(exc)))
            return
        self.post_message(AdviceTried(self.run_id or "", b.id, rule))

    @on(AdviceTried)
    def _tried(self, message: AdviceTried) -> None:
        message.stop()
        if message.b_id is None:
            self.app.report_error(message.error or "", title=f"Try {message.rule}")  # type: ignore[attr-defined]
            return
        self.app.open_run(message.b_id, compare_to=message.a_id)  # type: ignore[attr-defined]
