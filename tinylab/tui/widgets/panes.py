"""Panels that sit side by side on a wide terminal and take turns on an 80x24 one.

The screen's breakpoint class (-narrow / -wide, set by the app) decides; in narrow mode a
one-line strip names the panels and `t` shows the next. Screens lay out the wide mode in CSS.
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import Container, Vertical
from textual.reactive import reactive
from textual.widgets import Static


class Pane(Vertical):
    def __init__(self, *children, title: str, id: str, classes: str = "") -> None:
        super().__init__(*children, id=id, classes=f"pane {classes}".strip())
        self.border_title = title
        self.title = title


class Panes(Container):
    active = reactive(0)

    async def on_mount(self) -> None:
        await self.mount(Static(classes="pane-strip"), before=0)
        self._show()

    @property
    def panes(self) -> list[Pane]:
        return list(self.query_children(Pane))

    def watch_active(self) -> None:
        if self.is_mounted:
            self._show()

    def add(self, pane: Pane) -> None:
        """A panel that exists only for some runs (a profiled run's step anatomy), added last."""
        self.mount(pane)
        self._show()

    def show_next(self) -> None:
        self.active = (self.active + 1) % max(1, len(self.panes))

    def show(self, pane_id: str) -> None:
        for i, pane in enumerate(self.panes):
            if pane.id == pane_id:
                self.active = i

    @property
    def current(self) -> Pane | None:
        panes = self.panes
        return panes[self.active] if panes else None

    def is_showing(self, pane: Pane) -> bool:
        """True when the pane is on screen in the current layout."""
        return not self.screen.has_class("-narrow") or pane is self.current

    def _show(self) -> None:
        strip = Text()
        for i, pane in enumerate(self.panes):
            pane.set_class(i == self.active, "-active")
            if i:
                strip.append(" │ ", style="dim")
            strip.append(f" {pane.title} ", style="reverse bold" if i == self.active else "")
        strip.append("   t: next panel", style="dim")
        for widget in self.query(".pane-strip"):  # none yet while the panes mount: on_mount shows it
            widget.update(strip)
