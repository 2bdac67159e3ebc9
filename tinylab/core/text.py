"""Text for an 80-column terminal: sentences wrapped at spaces, never inside a word, a flag or a path."""

from __future__ import annotations

import textwrap


def wrap_words(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` in lines of at most `width` columns (a word longer than that keeps its own line),
    the first indented by `first`, the others by `rest`; [first] for empty text."""
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]


def wrap_items(items: list[str], width: int, first: str = "", rest: str = "", sep: str = "  ") -> list[str]:
    """`items` joined by `sep` in lines of at most `width` columns, broken only between items (a
    `key=value` whose value holds spaces, as a label does, stays whole); an item wider than the
    line keeps a line of its own. The first line is indented by `first`, the others by `rest`."""
    lines: list[str] = []
    line = ""
    for item in items:
        indent = rest if lines else first
        if line and len(indent) + len(line) + len(sep) + len(item) > width:
            lines.append(indent + line)
            line = item
        else:
            line = f"{line}{sep}{item}" if line else item
    lines.append((rest if lines else first) + line)
    return [text.rstrip() for text in lines]


#: How a spreadsheet knows a formula (OWASP's "CSV Injection"): a cell starting with one of these.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A value as a CSV cell a spreadsheet shows as text: a string that starts like a formula
    (`=HYPERLINK(...)`, `@SUM(...)`, `+1+1`) gets a leading ', as OWASP advises; kernel names come
    from files anyone may write, and a formula runs when the CSV is opened. A string that starts
    with ' gets another (a spreadsheet hides the first), so csv_text gives every cell back as it
    was. Numbers stay numbers."""
    return "'" + value if isinstance(value, str) and value.startswith((*_FORMULA_START, "'")) else value


def csv_text(cell: str) -> str:
    """A cell csv_cell wrote, as it was (the lab reads its own kernels.csv back)."""
    return cell[1:] if cell.startswith("'") else cell
