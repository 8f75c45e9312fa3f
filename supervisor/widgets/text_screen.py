"""A candidate's source diff against its parent, full screen, in the theme's diff colours."""

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


class DiffScreen(ModalScreen[None]):
    """Opened from the leaderboard (enter on a row); escape or `q` closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, candidate_id: str, parent_id: str | None, diff: str) -> None:
        super().__init__()
        self.candidate_id = candidate_id
        self.parent_id = parent_id
        self.diff = diff

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="diff") as scroll:
            scroll.border_title = f"diff · {self.candidate_id} vs {self.parent_id or 'nothing'}"
            text = diff_content(self.diff) if self.diff else Content("same source as its parent")
            yield Static(text)
        yield Footer(compact=True)

    def action_close(self) -> None:
        self.dismiss(None)
