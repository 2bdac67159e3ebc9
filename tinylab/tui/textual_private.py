"""Textual's private names the lab relies on, imported here and nowhere else.

A Textual upgrade that moves one breaks this module alone, and the tests that import it.
"""

from textual.widgets._select import (
    SelectOverlay,  # the open list of a Select: enter picks, not launches
)

__all__ = ["SelectOverlay"]
