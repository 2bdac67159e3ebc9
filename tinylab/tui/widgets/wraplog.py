"""A Log that wraps its long lines at its width instead of cutting them.

Textual's Log cuts a line at the right edge and scrolls sideways, and its horizontal scrollbar
drew a stray glyph above the footer at 80x24 (the trainer's `$ python -m tinylab.training.trainer …` and
model lines are longer than 80). This one keeps the lines as written and shows them at its
current width, re-flowed when the width changes: a line too long loses its runs of padding
spaces (the step lines' aligned columns), and if still too long wraps, continuations indented.

A log read at its end stays at its end when its size changes, the height too: the Run screen's
panels come as the run ends (Advice, Step) and shrink the log; Log keeps its scroll offset, which
left a finished run's log showing its middle, at an offset that hung on the order they came in.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Iterable

from textual import events
from textual.widgets import Log

CONTINUATION = "  "
#: Narrower than this the log is hidden (a panel taking turns) or not laid out: nothing is re-wrapped.
MIN_WIDTH = 10
_PADDING = re.compile(r" {2,}")


class WrapLog(Log):
    DEFAULT_CSS = "WrapLog { overflow-x: hidden; scrollbar-gutter: stable; }"

    def __init__(self, *, max_lines: int, **kwargs) -> None:
        super().__init__(max_lines=max_lines, **kwargs)
        self._written: deque[str] = deque(maxlen=max_lines)
        self._wrapped_at = 0
        self._following = True  # read at its end: kept there as lines come and as its size changes

    def _wrap_width(self) -> int:
        """The cells a line may take: the widget less its vertical scrollbar (0: not laid out yet)."""
        return max(0, self.size.width - self.styles.scrollbar_size_vertical)

    def _wrap(self, lines: list[str]) -> list[str]:
        width = self._wrap_width()
        if width < MIN_WIDTH:  # not laid out yet, or hidden: on_resize re-wraps once it has a width
            return lines
        out: list[str] = []
        for line in lines:
            if "\t" in line:
                line = line.expandtabs()
            if len(line) > width:  # first its column padding goes (the trainer's step lines), then it wraps
                body = line.lstrip(" ")
                line = line[: len(line) - len(body)] + _PADDING.sub(" ", body)
                if len(line) > width:
                    out += fold(line, width)
                    continue
            out.append(line)
        return out

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> "WrapLog":
        written = [part for line in lines for part in line.splitlines()]
        self._written.extend(written)
        self._wrapped_at = self._wrap_width()
        # a flood's batch: only the lines the log keeps are worth wrapping
        return super().write_lines(self._wrap(written[-self._written.maxlen:]), scroll_end)

    def clear(self) -> "WrapLog":
        self._written.clear()
        return super().clear()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._following = self.is_vertical_scroll_end

    def on_resize(self, event: events.Resize) -> None:
        width = self._wrap_width()
        if width < MIN_WIDTH:
            return
        following = self._following  # as of the size it had: a shorter log keeps its offset, off its end
        if width != self._wrapped_at and self._written:
            self._wrapped_at = width
            written = list(self._written)
            super().clear()
            super().write_lines(self._wrap(written), scroll_end=False)
        if following:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True, x_axis=False)


def fold(line: str, width: int) -> list[str]:
    """A line in pieces of at most `width` cells, broken at a space where one is (else cut),
    continuations indented by CONTINUATION; the line's own indentation is kept."""
    pieces = []
    indent = len(line) - len(line.lstrip(" "))
    while len(line) > width:
        cut = line.rfind(" ", indent + 1, width + 1)
        if cut <= indent:
            cut = width
        pieces.append(line[:cut].rstrip(" "))
        line = CONTINUATION + line[cut:].lstrip(" ")
        indent = len(CONTINUATION)
    pieces.append(line)
    return pieces
