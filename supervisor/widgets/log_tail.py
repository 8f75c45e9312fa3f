"""The selected agent's live log: a bounded tail that drops its oldest lines as new ones come."""

from __future__ import annotations

from textual.widgets import Log

MAX_LINES = 2000


class LogTail(Log):
    """Shows one agent's `agent.log`; the run watcher sends only that agent's lines."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=MAX_LINES, highlight=False)
        self.agent: str | None = None
        self.border_title = "log"

    def follow(self, agent: str) -> None:
        """Forget the shown lines; the next lines will be this agent's."""
        self.agent = agent
        self.border_title = f"log · {agent}"
        self.clear()

    def add(self, agent: str, lines: list[str], fresh: bool) -> None:
        """Append lines, or replace the tail when the watcher skipped ahead."""
        if agent != self.agent:
            return
        if fresh:
            self.clear()
        self.write_lines(lines)
        if fresh:  # the first lines may come before the panel has its size
            self.call_after_refresh(self.scroll_end, animate=False)
