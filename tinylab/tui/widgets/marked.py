"""An option list whose highlighted option carries a mark, not only a colour.

Textual's OptionList shows the highlighted option by its background alone: on a terminal without
colour, or to a learner who cannot tell the two blues apart, nothing says which version `enter`
launches or which fault it names. Here every option sits after a gutter of two columns, and the
highlighted one's first line has `▶` in it (as SelectionList puts its check box in such a gutter).
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import OptionList

from tinylab.tui.textual_private import option_at_line

MARK = "▶ "


class MarkedOptionList(OptionList):
    def _get_left_gutter_width(self) -> int:  # OptionList's own hook, as SelectionList uses it
        return len(MARK)

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        found = option_at_line(self, self.scroll_offset.y + y)
        if found is None:  # below the last option: OptionList's blank line, already the full width
            return line
        index, offset = found
        style = next(iter(line)).style if line.cell_length else self.rich_style
        mark = MARK if index == self.highlighted and offset == 0 else " " * len(MARK)
        return Strip([Segment(mark, style), *line], len(MARK) + line.cell_length)
