"""A long text, full screen and scrollable: a candidate's diff, the answer to a side question."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

MAX_LINES = 2000
_LINE_STYLES = (
    ("+++", "bold"),
    ("---", "bold"),
    ("@@", "$accent"),
    ("+", "$success"),
    ("-", "$error"),
)


def diff_content(diff: str) -> Content:
    """One styled line per diff line; text stays plain (sources contain brackets)."""
    lines = diff.splitlines()[:MAX_LINES]
    return Content("\n").join(Content.styled(line, _style(line)) for line in lines)


def _style(line: str) -> str:
    return next((style for prefix, style in _LINE_STYLES if line.startswith(prefix)), "")


class TextScreen(ModalScreen[None]):
    """Escape or `q` closes it; the text never holds markup (sources and answers have brackets)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, title: str, text: Content) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="reading") as scroll:
            scroll.border_title = self.title_text
            yield Static(self.text)
        yield Footer(compact=True)

    def action_close(self) -> None:
        self.dismiss(None)
