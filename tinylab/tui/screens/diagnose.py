"""Naming the fault an exercise step hides: the faults to pick from, one key to name one.

The step screen judges the pick (tinylab.service.exercise.diagnose) and shows the verdict; this
only asks. The faults come in name order, which says nothing of the answer.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tinylab.tui.widgets.marked import MarkedOptionList


class DiagnoseScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, step: int, faults: tuple[str, ...]) -> None:
        super().__init__()
        self.step, self.faults = step, faults

    def compose(self) -> ComposeResult:
        with Vertical(id="diagnose"):
            yield Static(Text(f"Which fault does step {self.step}'s run show?", style="bold"))
            yield MarkedOptionList(*(Option(name, id=name) for name in self.faults), id="faults")
            yield Static(Text("↑↓ choose · enter names it · esc cancels", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#faults", OptionList).highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
