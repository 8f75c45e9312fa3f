"""The selected agent's latest profile summary (`work/profiles/latest.txt`), as written."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

MAX_LINES = 40


class ProfilePanel(Static):
    """Plain text, never markup: a profile is the agent's (or a tool's) free-form output."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "profile"

    def show(self, agent: str, text: str | None) -> None:
        self.border_title = f"profile · {agent}"
        # The panel's height is fixed: no need to lay the screen out again (layout=False).
        if text is None:
            note = Text("no profile yet (the agent writes work/profiles/latest.txt)")
            self.update(note, layout=False)
            return
        lines = text.splitlines()[:MAX_LINES]
        self.update(Text("\n".join(lines) or "(empty profile)"), layout=False)
