"""Form controls that leave single-letter keys to the app and explain why they are unavailable."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Checkbox, Input


class NumberInput(Input):
    """An integer field that lets letters through: a focused field must not swallow `q` or `l`."""

    def __init__(self, value: int | str = "", *, field: str, **kwargs) -> None:
        super().__init__(str(value), type="integer", compact=True, **kwargs)
        self.field = field

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and (character.isdigit() or character == "-")

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable and not self.check_consume_key(event.key, event.character):
            event.prevent_default()  # skip Input's handler; the key bubbles on to the bindings


class Option(Checkbox):
    """A checkbox that stays focusable when unavailable, so that focusing it can say why.

    Enter is left to the screen (it launches); space toggles.
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

    def set_unavailable(self, why: str | None) -> None:
        """Unavailable options are unticked and refuse to tick until `why` is cleared."""
        self.why_not = why
        self.set_class(why is not None, "-unavailable")
        self.tooltip = why or self.help
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
