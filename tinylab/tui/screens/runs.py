"""Runs: the run store as a table; open, cancel or profile-read a run, mark two to compare."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from tinylab.commands.runs import key_config
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.widgets.runtable import RunTable

RESCAN_S = 2.0


class RunsScreen(BaseScreen):
    TITLE = "Runs"
    BINDINGS = [
        Binding("enter", "open_run", "Open", tooltip="live log, progress and charts; reattaches to a running run"),
        Binding("m", "mark", "Mark A/B", tooltip="mark two runs, then v compares them"),
        Binding("v", "compare", "Compare"),
        Binding("k", "hotspots", "Hotspots", tooltip="kernel table of the run's profile"),
        Binding("c", "cancel_run", "Cancel", tooltip="cancel the selected running run (asks first)"),
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
        infos = self.backend.infos()
        self.app.call_from_thread(self._show, infos)

    def _show(self, infos: list[dict[str, Any]]) -> None:
        table = self.query_one(RunTable)
        self.marked = [m for m in self.marked if any(i["id"] == m for i in infos)]
        table.show(infos, self._marks(), self.backend.clock())
        self.app.live_runs = [i for i in infos if i["status"] == "running"]  # type: ignore[attr-defined]
        if not infos:
            self.query_one("#run-detail", Static).update(
                f"No runs in {self.backend.store.root} yet. Press l for the Lab, then enter to launch one.")
        else:
            self._show_detail()

    def _marks(self) -> dict[str, str]:
        return {run_id: "AB"[i] for i, run_id in enumerate(self.marked)}

    @property
    def current(self) -> dict[str, Any] | None:
        table = self.query_one(RunTable)
        run_id = table.current_id
        return table.infos.get(run_id) if run_id else None

    @on(DataTable.RowHighlighted)
    def _show_detail(self) -> None:
        info = self.current
        if info is None:
            return
        text = Text()
        text.append(info["id"], style="bold")
        text.append(f"  {info['status']}  {info['version']}  {key_config(info['config'])}")
        if info.get("device_name"):
            text.append(f"  on {info['device_name']} ({info['device']})")
        if info.get("error"):
            err = info["error"]
            text.append(f"\n{err.get('type')}: {err.get('message')}", style="bold")
        elif info.get("label"):
            text.append(f"\nlabel: {info['label']}")
        self.query_one("#run-detail", Static).update(text)
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Refresh the footer only when what it offers changed: rebuilding it is not free."""
        info = self.current or {}
        state = (info.get("status"), bool(info.get("profiles")), len(self.marked))
        if state != self._key_state:
            self._key_state = state
            self.refresh_bindings()

    def _show_marks(self) -> None:
        marks = self.query_one("#marks", Static)
        if not self.marked:
            marks.update(Text("m marks a run as A, then another as B; v compares them", style="dim"))
        elif len(self.marked) == 1:
            marks.update(f"A = {self.marked[0]}; mark B with m")
        else:
            marks.update(f"A = {self.marked[0]}   B = {self.marked[1]}   v compares")

    @on(DataTable.RowSelected)
    def _selected(self) -> None:
        self.action_open_run()

    # ---------------------------------------------------------------- actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        info = self.current
        if action in ("open_run", "mark"):
            return info is not None
        if action == "compare":
            return len(self.marked) == 2 or None
        if action == "hotspots":
            return bool(info and info.get("profiles")) or None
        if action == "cancel_run":
            return bool(info and info["status"] == "running")
        return True

    def action_open_run(self) -> None:
        if self.current:
            self.app.open_run(self.current["id"])  # type: ignore[attr-defined]

    def action_hotspots(self) -> None:
        if self.current:
            self.app.open_hotspots(self.current["id"])  # type: ignore[attr-defined]

    def action_mark(self) -> None:
        info = self.current
        if info is None:
            return
        if info["id"] in self.marked:
            self.marked.remove(info["id"])
        else:
            self.marked = (self.marked + [info["id"]])[-2:]
        self.query_one(RunTable).show(list(reversed(self.query_one(RunTable).infos.values())), self._marks(),
                                      self.backend.clock())
        self._show_marks()
        self._refresh_keys()

    def action_compare(self) -> None:
        if len(self.marked) == 2:
            self.app.open_compare(*self.marked)  # type: ignore[attr-defined]

    def action_cancel_run(self) -> None:
        from tinylab.tui.screens.confirm import ConfirmScreen

        info = self.current
        if info is None:
            return
        run_id = info["id"]

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"Cancelling {run_id}…")
                self.cancel(run_id)

        self.app.push_screen(ConfirmScreen(f"Cancel run {run_id}?",
                                           "It gets SIGINT, then SIGTERM, then SIGKILL; its files stay.",
                                           yes="Cancel run", no="Keep running"), answered)

    @background("cancel")
    def cancel(self, run_id: str) -> None:
        stopped = self.backend.cancel(run_id)
        self.app.call_from_thread(self.notify, f"{run_id} {'cancelled' if stopped else 'had already stopped'}")
        self.app.call_from_thread(self.rescan)
