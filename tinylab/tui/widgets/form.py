"""Form controls: number fields that take digits only, and checkboxes readable without colour
that explain why they are unavailable."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.style import Style
from textual.message import Message
from textual.widgets import Checkbox, Input

from tinylab.tui.fmt import plain


class NumberInput(Input):
    """An integer field that keeps every printable key: a letter typed into it must not jump to
    another section (`x`) or quit the lab (`q`). It is refused with a bell and a word instead."""

    class Refused(Message):
        def __init__(self, field: "NumberInput", character: str) -> None:
            super().__init__()
            self.field, self.character = field, character

    def __init__(self, value: int | str = "", *, field: str, **kwargs) -> None:
        super().__init__(str(value), type="integer", compact=True, **kwargs)
        self.field = field

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and character.isprintable()

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable and event.character is not None and not (event.character.isdigit() or event.character == "-"):
            event.prevent_default()
            event.stop()
            self.app.bell()
            self.post_message(self.Refused(self, event.character))


class Option(Checkbox):
    """A checkbox that stays focusable when unavailable, so that focusing it can say why.

    Its box reads `[x]` or `[ ]`: on and off differ in the characters, not only in colour, so a
    monochrome or light terminal shows them too. Enter is left to the screen (it launches); space
    toggles.
    """

    BINDINGS = [Binding("space", "toggle_button", "Toggle", show=False)]
    inherit_bindings = False

    class Focused(Message):
        def __init__(self, option: "Option") -> None:
            super().__init__()
            self.option = option

    def __init__(self, label: str, *, name: str, help: str, **kwargs) -> None:
        super().__init__(label, compact=True, name=name, **kwargs)
        self.help = help
        self.why_not: str | None = None

    @property
    def _button(self) -> Content:
        return Content.assemble(("[x]", Style(bold=True)) if self.value else ("[ ]", Style()))

    def set_unavailable(self, why: str | None) -> None:
        """Unavailable options are unticked and refuse to tick until `why` is cleared."""
        self.why_not = why
        self.set_class(why is not None, "-unavailable")
        self.tooltip = plain(why or self.help)  # quotes a tool's reason: never markup
        if why is not None:
            self.value = False

    def toggle(self) -> "Option":
        if self.why_not is not None:
            self.app.bell()
            self.post_message(self.Focused(self))
            return self
        return super().toggle()

    def on_focus(self, event: events.Focus) -> None:
        self.post_message(self.Focused(self))
