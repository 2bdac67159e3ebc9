"""Runs: the run store as a table; open, cancel or profile-read a run, mark two to compare."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from tinylab.runs.record import RunRecord
from tinylab.service.runs import LIVE
from tinylab.tui.fmt import plain, safe
from tinylab.tui.screens.base import HOME, BaseScreen, Cancelled, background
from tinylab.tui.widgets.runtable import RunTable

RESCAN_S = 2.0


class Scanned(Message):
    def __init__(self, records: list[RunRecord]) -> None:
        super().__init__()
        self.records = records


class RunsScreen(BaseScreen):
    TITLE = "Runs"
    BINDINGS = [
        Binding("enter", "open_run", "Open", tooltip="live log, progress and charts; reattaches to a running run"),
        Binding("m", "mark", "Mark A/B", tooltip="mark two runs, then v compares them"),
        Binding("v", "compare", "Compare"),
        Binding("k", "hotspots", "Hotspots", tooltip="kernel table of the run's profile"),
        Binding("c", "cancel_run", "Cancel", tooltip="cancel the selected running run (asks first)"),
        HOME,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.marked: list[str] = []
        self._key_state: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield RunTable(id="runs")
        yield Static(id="run-detail")
        yield Static(id="marks")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.rescan()
        self.set_interval(RESCAN_S, self.rescan)
        self._show_marks()

    def on_screen_resume(self) -> None:
        if self.is_mounted:
            self.rescan()

    @background("scan")
    def rescan(self) -> None:
        self.post_message(Scanned(self.backend.records()))

    @on(Scanned)
    def _show(self, message: Scanned) -> None:
        records = message.records
        table = self.query_one(RunTable)
        self.marked = [m for m in self.marked if any(r.id == m for r in records)]
        table.show(records, self._marks(), self.backend.clock())
        self.app.live_runs = [r for r in records if r.status == "running"]  # type: ignore[attr-defined]
        if not records:
            self.query_one("#run-detail", Static).update(
                plain(f"No runs in {self.backend.store.root} yet. Press l for the Lab, then enter to launch one."))
        else:
            self._show_detail()

    def _marks(self) -> dict[str, str]:
        return {run_id: "AB"[i] for i, run_id in enumerate(self.marked)}

    @property
    def current(self) -> RunRecord | None:
        table = self.query_one(RunTable)
        run_id = table.current_id
        return table.records.get(run_id) if run_id else None

    @on(DataTable.RowHighlighted)
    def _show_detail(self) -> None:
        record = self.current
        if record is None:
            return
        text = Text()
        text.append(safe(record.id), style="bold")
        text.append(safe(f"  {record.status}  {record.version}  {record.key_config}"))
        if record.device_name:
            text.append(safe(f"  on {record.device_name} ({record.device})"))
        if record.error:
            text.append("\n" + safe(f"{record.error.type}: {record.error.message}"), style="bold")
        elif record.busy:
            text.append("\n" + safe(f"busy machine: {record.busy}"), style="bold")
        elif record.label:
            text.append("\n" + safe(f"label: {record.label}"))
        self.query_one("#run-detail", Static).update(text)
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Refresh the footer only when what it offers changed: rebuilding it is not free."""
        record = self.current
        state = (record.status if record else None, bool(record and record.profiles), len(self.marked))
        if state != self._key_state:
            self._key_state = state
            self.refresh_bindings()

    def _show_marks(self) -> None:
        marks = self.query_one("#marks", Static)
        if not self.marked:
            marks.update(Text("m marks a run as A, then another as B; v compares them", style="dim"))
        elif len(self.marked) == 1:
            marks.update(plain(f"A = {self.marked[0]}; mark B with m"))
        else:
            marks.update(plain(f"A = {self.marked[0]}   B = {self.marked[1]}   v compares"))

    @on(DataTable.RowSelected)
    def _selected(self) -> None:
        self.action_open_run()

    # ---------------------------------------------------------------- actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        record = self.current
        if action in ("open_run", "mark"):
            return record is not None
        if action in ("compare", "hotspots"):
            return True  # the action says what is missing (a second mark, a profile)
        if action == "cancel_run":
            return bool(record and record.status in LIVE)
        return True

    def action_open_run(self) -> None:
        if self.current:
            self.app.open_run(self.current.id)  # type: ignore[attr-defined]

    def action_hotspots(self) -> None:
        record = self.current
        if record is None:
            return
        if not record.profiles:
            self.notify(f"{record.id} was not profiled: launch a run with a profiler ticked for a kernel table.",
                        severity="warning")
            return
        self.app.open_hotspots(record.id)  # type: ignore[attr-defined]

    def action_mark(self) -> None:
        record = self.current
        if record is None:
            return
        if record.id in self.marked:
            self.marked.remove(record.id)
        else:
            self.marked = (self.marked + [record.id])[-2:]
        table = self.query_one(RunTable)
        table.show(list(reversed(table.records.values())), self._marks(), self.backend.clock())
        self._show_marks()
        self._refresh_keys()

    def action_compare(self) -> None:
        if len(self.marked) == 2:
            self.app.open_compare(*self.marked)  # type: ignore[attr-defined]
        else:
            self.notify(f"Mark {2 - len(self.marked)} more run{'s' if len(self.marked) == 0 else ''} with m "
                        "to compare (A, then B).", severity="warning")

    def action_cancel_run(self) -> None:
        from tinylab.tui.screens.confirm import ConfirmScreen

        record = self.current
        if record is None:
            return
        run_id = record.id

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"Cancelling {run_id}…")
                self.cancel(run_id)

        how = f"Slurm cancels job {record.job.id} (scancel)" if record.job else \
            "It gets SIGINT, then SIGTERM, then SIGKILL"
        self.app.push_screen(ConfirmScreen(f"Cancel run {run_id}?", f"{how}; its files stay.",
                                           yes="Cancel run", no="Keep running"), answered)

    @background("cancel")
    def cancel(self, run_id: str) -> None:
        self.post_message(Cancelled(run_id, self.backend.cancel(run_id)))

    @on(Cancelled)
    def _cancelled(self, message: Cancelled) -> None:
        self.notify(f"{message.run_id} {'cancelled' if message.stopped else 'had already stopped'}")
        self.rescan()
