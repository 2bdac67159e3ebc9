"""Small text formats the screens share (durations, ages, numbers), and `plain`: text
from a run's files (labels, ids, errors, kernel names) as the lab shows it.

Textual parses a str given to a Static, a DataTable cell or a notification as markup: a label
`[/]` would raise a MarkupError and take the lab down, `[bold]x` would lose its brackets. Such
text goes to widgets as a rich Text (never parsed), its control characters made visible.
"""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text

from tinylab.runs.record import printable


def plain(value: Any, style: str = "", *, justify: Any = None) -> Text:
    """`value` as literal text: no markup parsed, control characters (escape codes) shown as '?'."""
    return Text(printable(str(value)), style=style, justify=justify, end="")


def safe(value: Any) -> str:
    """`value` as a str for Text.append/assemble (which do not parse markup): control characters as '?'."""
    return printable(str(value))


def duration(seconds: float | None) -> str:
    """0:07, 12:03, 1:02:03; "-" when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def age(then: float | None, now: float) -> str:
    """How long ago, in the largest unit that fits: 45s, 3m, 5h, 2d."""
    if not then:
        return "-"
    delta = max(0.0, now - then)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if delta >= size:
            return f"{int(delta // size)}{unit}"
    return f"{int(delta)}s"


def number(value: Any, spec: str = ",.1f") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "-"
    return format(value, spec)
