"""Textual's private names the lab relies on, imported here and nowhere else.

A Textual upgrade that moves one breaks this module alone, and the tests that import it.
"""

from textual.widgets import OptionList
from textual.widgets._select import (
    SelectOverlay,  # the open list of a Select: enter picks, not launches
)

__all__ = ["SelectOverlay", "option_at_line"]


def option_at_line(options: OptionList, line: int) -> tuple[int, int] | None:
    """(option index, line within the option) of content line `line`, None below the last: what
    OptionList keeps in its private `_lines` (MarkedOptionList marks the highlighted one's first)."""
    try:
        index, offset = options._lines[line]
    except IndexError:
        return None
    return index, offset
