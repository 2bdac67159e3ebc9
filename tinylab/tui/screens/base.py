"""What every lab screen shares: the backend, the header and footer, and worker error reporting."""

from __future__ import annotations

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from tinylab.tui.backend import Backend


#: The way home, shown in the footers of the other sections' root screens (the app's section keys
#: work everywhere but are not shown there: 80 columns do not hold them; the Lab shows them all).
HOME = Binding("l", "app.section('lab')", "Lab", tooltip="the versions and the config form")


def background(group: str):
    """A thread worker, one at a time per group, whose exception is reported, not fatal."""
    return work(thread=True, exclusive=True, group=group, exit_on_error=False)


class Cancelled(Message):
    """A cancel worker's answer: whether the run was still running to be stopped."""

    def __init__(self, run_id: str, stopped: bool) -> None:
        super().__init__()
        self.run_id, self.stopped = run_id, stopped


class BaseScreen(Screen):
    #: The section title shown in the header.
    TITLE = ""

    @property
    def backend(self) -> Backend:
        return self.app.backend  # type: ignore[attr-defined]

    def on_mount(self) -> None:
        self.title = "tinylab"
        self.sub_title = self.TITLE

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Workers never crash the app: their exceptions land in the app's one error handler."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.app.report_error(event.worker.error)  # type: ignore[attr-defined]
