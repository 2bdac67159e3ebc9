"""Text laid out at the width the widget has (Textual asks again on every resize), never cut.

Hanging: wrapped lines stay under their item, a check's long description under its text, not
under its mark; an answer's second line under the answer. Rich and Textual wrap a line back to
column 0 (a check's description ran on below its `✓` at 80x24). Here each item is a prefix (a
mark, a number, an indent) and a body that wraps in the width the prefix leaves.

Fitting: one line, its head first and then as many of its details as fit whole. An exercise step's
status line at 80 columns lost its status, then (status first) showed `· baseline` with the run id
cut off.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual


class Hanging(Visual):
    def __init__(self) -> None:
        self.items: list[tuple[Content, Content]] = []

    def add(self, prefix: str | Text, body: str | Text = "") -> "Hanging":
        """One item: `prefix` on its first line, as many spaces on the lines `body` wraps to."""
        self.items.append((Content.from_rich_text(prefix), Content.from_rich_text(body)))
        return self

    def __bool__(self) -> bool:
        return bool(self.items)

    def __str__(self) -> str:
        """The plain text, an item a line (what a test reads of the widget)."""
        return "\n".join(f"{prefix.plain}{body.plain}" for prefix, body in self.items)

    def lines(self, width: int) -> list[Content]:
        out = []
        for prefix, body in self.items:
            indent = prefix.cell_length
            wrapped = body.wrap(max(1, width - indent)) if body.plain else [Content("")]
            out += [(prefix if i == 0 else Content(" " * indent)) + line for i, line in enumerate(wrapped)]
        return out

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        strips = [strip for line in self.lines(width) for strip in line.render_strips(width, 1, style, options)]
        return strips if height is None else strips[:height]

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return max((prefix.cell_length + body.cell_length for prefix, body in self.items), default=0)

    def get_minimal_width(self, rules: RulesMap) -> int:
        return max((prefix.cell_length + 1 for prefix, _ in self.items), default=1)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return len(self.lines(width))


class Fitting(Visual):
    def __init__(self, head: str | Text, *details: str | Text) -> None:
        self.head = Content.from_rich_text(head)
        self.details = [Content.from_rich_text(d) for d in details]

    def __str__(self) -> str:
        """The plain text, every detail in (what a test reads of the widget)."""
        return "".join(part.plain for part in (self.head, *self.details))

    def fitted(self, width: int) -> Content:
        """The head, then each detail in turn while it fits whole in `width`."""
        out = self.head
        for detail in self.details:
            if out.cell_length + detail.cell_length > width:
                break
            out = out + detail
        return out

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        strips = [strip for line in self.fitted(width).wrap(width)
                  for strip in line.render_strips(width, 1, style, options)]
        return strips if height is None else strips[:height]

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.fitted(container_width).cell_length

    def get_height(self, rules: RulesMap, width: int) -> int:
        return len(self.fitted(width).wrap(width))
