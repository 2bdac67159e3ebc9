"""A page of the repository's docs/ in the lab, read-only (the Compare screen's `?` opens
docs/statistics.md): the explanation a verdict points to, one key away, not in another window."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Markdown

from tinylab.tui.screens.base import background

#: The docs folder beside the package (a checkout or an editable install; a wheel has none).
DOCS = Path(__file__).resolve().parents[3] / "docs"


class PageRead(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class DocScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    DocScreen { align: center middle; }
    #doc { width: 100; max-width: 100%; height: 100%; border: round $primary; background: $surface;
           padding: 0 1; border-title-color: $text-primary; }
    """
    BINDINGS = [Binding("escape,question_mark,q", "app.pop_screen", "Close", key_display="esc")]

    def __init__(self, page: str) -> None:
        super().__init__()
        self.page = page

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="doc"):
            yield Markdown(id="doc-text")

    def on_mount(self) -> None:
        self.query_one("#doc").border_title = f"docs/{self.page} (esc closes)"
        self.read_page()

    @background("doc")
    def read_page(self) -> None:
        path = DOCS / self.page
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            text = (f"**docs/{self.page} cannot be read here** ({exc.strerror or exc}): this copy of tinylab was "
                    f"installed without its docs folder; the page is `docs/{self.page}` in tinylab's repository.")
        self.post_message(PageRead(text))

    @on(PageRead)
    def _show(self, message: PageRead) -> None:
        self.query_one("#doc-text", Markdown).update(message.text)
