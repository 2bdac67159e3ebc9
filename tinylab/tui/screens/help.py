"""Help: every key of every screen, read from the screens' own bindings so it cannot go stale."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

TIPS = (
    "Number fields take digits only; esc leaves a field, then letters work as keys again.",
    "tab / shift+tab move through a form; space ticks a box or opens a list.",
    "On an 80x24 terminal panels take turns: t shows the next one.",
    "Runs keep going when you leave a screen or quit: reopen tinylab and press w (or r, then enter).",
    ": opens the command palette, which lists every action of the current screen.",
)


def _screens() -> list[tuple[str, type]]:
    from tinylab.tui.screens.compare import CompareScreen
    from tinylab.tui.screens.doctor import DoctorScreen
    from tinylab.tui.screens.exercises import ExercisesScreen, StepScreen
    from tinylab.tui.screens.hotspots import HotspotsScreen
    from tinylab.tui.screens.kernels import KernelsScreen
    from tinylab.tui.screens.lab import LabScreen
    from tinylab.tui.screens.run import RunScreen
    from tinylab.tui.screens.runs import RunsScreen

    return [("Lab", LabScreen), ("Run", RunScreen), ("Hotspots", HotspotsScreen), ("Runs", RunsScreen),
            ("Compare", CompareScreen), ("Exercises", ExercisesScreen), ("Exercise step", StepScreen),
            ("Kernels", KernelsScreen), ("Doctor", DoctorScreen)]


def key_table(title: str, bindings: list) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_header=False, box=None,
                  padding=(0, 1), expand=True)
    table.add_column(width=10, style="bold", no_wrap=True)
    table.add_column(width=16, no_wrap=True)
    table.add_column(ratio=1, style="dim")
    for b in bindings:
        if isinstance(b, Binding) and b.description and not b.action.startswith("app."):
            key = b.key_display or b.key.split(",")[0].replace("question_mark", "?").replace("slash", "/")
            table.add_row(key, b.description, b.tooltip)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,h", "app.pop_screen", "Close", key_display="esc")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(id="help-text")

    def on_mount(self) -> None:
        help_box = self.query_one("#help")
        help_box.border_title = "Keys (esc closes)"
        parts = [key_table("Everywhere", type(self.app).BINDINGS + [Binding(":", "", "Command palette",
                                                                             tooltip="every action, searchable")])]
        parts += [key_table(name, cls.__dict__["BINDINGS"]) for name, cls in _screens() if cls.__dict__.get("BINDINGS")]
        tips = Text("\n".join(f"• {tip}" for tip in TIPS))
        grid = Table.grid(expand=True)
        grid.add_column()
        for part in parts:
            grid.add_row(part)
            grid.add_row("")
        grid.add_row(Text("Tips", style="bold"))
        grid.add_row(tips)
        self.query_one("#help-text", Static).update(grid)
