"""A candidate's source diff against its parent, in the theme's success and error colours."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

MAX_LINES = 400
_LINE_STYLES = (
    ("+++", "bold"),
    ("---", "bold"),
    ("@@", "$accent"),
    ("+", "$success"),
    ("-", "$error"),
)


def diff_content(diff: str) -> Content:
    """One styled line per diff line; unknown text stays plain (sources contain brackets)."""
    lines = diff.splitlines()[:MAX_LINES]
    styled = [Content.styled(line, _style(line)) for line in lines]
    return Content("\n").join(styled)


def _style(line: str) -> str:
    return next((style for prefix, style in _LINE_STYLES if line.startswith(prefix)), "")


class DiffView(VerticalScroll):
    """Scrolls through the diff of the leaderboard's highlighted candidate."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "diff"
        self.candidate_id: str | None = None

    def compose(self):
        yield Static(id="diff-text")

    def show(self, candidate_id: str, parent_id: str | None, diff: str) -> None:
        self.candidate_id = candidate_id
        self.border_title = f"diff · {candidate_id} vs {parent_id or 'nothing'}"
        text = diff_content(diff) if diff else Content("same source as its parent")
        self.query_one("#diff-text", Static).update(text)
        self.scroll_home(animate=False)
