"""A step anatomy (a Timeline: Lab.timeline) as text laid out for the widget's own width.

render() wraps the diagnosis and squeezes the lanes for a given width; a width guessed from the
screen is off by the panel's border, padding or scrollbar, and the terminal then wraps each long
line a second time ("... 1433 kernels of 3" / "µs" / "median"). So the widget keeps the analysis
and renders it again whenever its own content width changes.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from tinylab.service.results import Timeline
from tinylab.tui.fmt import plain

#: render() keeps every column down to this width; a narrower widget wraps (rare: 80 columns
#: leave about 75).
MIN_WIDTH = 50
#: The width of the text while the widget has none (a panel not shown yet): redrawn when shown.
UNSHOWN_WIDTH = 76


class AnatomyText(Static):
    def __init__(self, shown: Timeline | str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shown = shown
        self._width = 0

    def show(self, shown: Timeline | str) -> None:
        """A timeline (with its title: the Lab's) or a one-line reason there is none."""
        self.shown, self._width = shown, 0
        self._draw()

    @property
    def laid_out(self) -> bool:
        """The text is laid out for the width the widget has now (or is a plain reason)."""
        return isinstance(self.shown, str) or self._width == (self.content_region.width or UNSHOWN_WIDTH)

    def on_mount(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        from tinylab.render.timeline import render

        width = self.content_region.width or UNSHOWN_WIDTH
        if isinstance(self.shown, str):
            self.update(plain(self.shown))
        elif width != self._width:
            self._width = width
            self.update(Text(render(self.shown, self.shown.title, width=max(MIN_WIDTH, width))))
