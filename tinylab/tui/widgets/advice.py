"""The Advice panel of the Run and Hotspots screens: a run's advice (tinylab.service.Lab.advise), a
row an item, the highlighted item in full below, and the try-it loop: its action launched as run B
against this run as A (Lab.try_advice), whose Run screen opens Compare when B ends.

The panel loads and launches in thread workers and posts what they found; its screen binds the
keys (`a` shows the panel, `b` tries the highlighted item) so that they are in the footer and the
command palette.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from tinylab.core.errors import UserError
from tinylab.render.advice import MARKS, bound_text, detail
from tinylab.tui.fmt import plain, safe

#: The most rows the table shows at once (more scroll).
MAX_ROWS = 7
#: Fixed widths of the short columns (the measured value takes the rest).
WIDTHS = {"mark": 1, "rule": 21, "bound": 11}


class AdviceLoaded(Message):
    def __init__(self, items: list[Any] | None, notes: list[str], error: str | None) -> None:
        super().__init__()
        self.items, self.notes, self.error = items, notes, error


class AdviceTried(Message):
    """Run B was launched to try item `rule` of run `a_id` (or `error` says why not)."""

    def __init__(self, a_id: str, b_id: str | None, rule: str, error: str | None = None) -> None:
        super().__init__()
        self.a_id, self.b_id, self.rule, self.error = a_id, b_id, rule, error


class AdvicePanel(Vertical):
    DEFAULT_CSS = """
    AdvicePanel { height: 1fr; }
    AdvicePanel #advice-detail-box { height: 1fr; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run_id: str | None = None
        self.items: list[Any] | None = None  # None until loaded, and when there is no advice
        self.loaded = False  # the worker's answer came: items, or why there are none
        self._notes: list[str] = []
        self._filled_at = -1  # the width the table was filled at
        # held, not queried: a closing screen marks its widgets for removal, and a scroll box so marked
        # before it has mounted its child never mounts the detail, while the panel, still running,
        # may take its answer (a query found no '#advice-detail': NoMatches, seen as a run ended)
        self._head = Static("Advice: loading…", id="advice-head")
        self._table = DataTable(id="advice-table", cursor_type="row", zebra_stripes=True)
        self._detail = Static(id="advice-detail")

    def compose(self) -> ComposeResult:
        yield self._head
        yield self._table
        yield VerticalScroll(self._detail, id="advice-detail-box")

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

    def _fill(self) -> None:
        """The head line, a row an item (the highlighted row kept) and the detail, at the panel's width."""
        items = self.items or []
        head, table = self._head, self._table
        row = table.cursor_row if table.row_count else 0
        table.clear(columns=True)
        self._filled_at = self.size.width
        # the measured value takes what the row leaves (cells are padded by one a side), so that no
        # horizontal scrollbar takes a line of an 80x24 screen
        rest = max(20, (self.size.width or 80) - sum(WIDTHS.values()) - 2 * (len(WIDTHS) + 1) - 4)
        for key, label in (("mark", ""), ("rule", "rule"), ("bound", "at most"), ("measured", "measured")):
            table.add_column(label, key=key, width=WIDTHS.get(key, rest))
        table.display = bool(items)
        # its height from its rows, set here: `auto` is the virtual height DataTable works out when
        # idle, which a fill inside a layout pass (on_resize) can miss, leaving the table 0 lines high
        table.styles.height = min(1 + len(items), MAX_ROWS + 1)
        counts = [f"{sum(i.severity == s for i in items)} {s}" for s in MARKS if any(i.severity == s for i in items)]
        tryable = any(i.action.changes for i in items)
        head.update(Text.assemble(("Advice: ", "bold"), ", ".join(counts) or "nothing to say about this run",
                                  (" · b: try the highlighted item as run B" if tryable else "", "dim"),
                                  *[("\n" + safe(f"note: {n}"), "dim") for n in self._notes]))
        for i, item in enumerate(items):
            table.add_row(MARKS.get(item.severity, "?"), item.rule, Text(bound_text(item), justify="right"),
                          plain(item.measured.text), key=str(i))
        if items:
            table.move_cursor(row=min(row, len(items) - 1))
        self._show_detail()

    @on(DataTable.RowHighlighted, "#advice-table")
    def _show_detail(self) -> None:
        item = self.selected()
        width = max(40, (self.size.width or 80) - 2)
        # each line is printable already (render.advice.detail): Text keeps the line breaks, never markup
        self._detail.update(Text("\n".join(detail(item, width)) if item else ""))

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
