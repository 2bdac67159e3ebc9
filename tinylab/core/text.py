"""Text for an 80-column terminal: sentences wrapped at spaces, never inside a word, a flag or a path."""

from __future__ import annotations

import textwrap


def wrap_words(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` in lines of at most `width` columns (a word longer than that keeps its own line),
    the first indented by `first`, the others by `rest`; [first] for empty text."""
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]
