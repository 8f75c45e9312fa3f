"""The agent list: one row per agent; the highlighted row is the agent the other panels follow."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qrsup.agents.spend import total
from qrsup.supervisor.fleet import STALE_HEARTBEAT_S, AgentStatus
from qrsup.supervisor.widgets.format import (
    age,
    agent_spend,
    agent_state,
    figure_cell,
    verdict_text,
)
from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

STATE_WIDTH = 32
FRESH_S = 10.0
STALE_S = STALE_HEARTBEAT_S
COLUMNS = (
    ("#", "number"),
    ("agent", "name"),
    ("role", "role"),
    ("proposer", "proposer"),
    ("state", "state"),
    ("it", "iteration"),
    ("best ms", "best"),
    ("spend", "spend"),
    ("last", "last"),
    ("beat", "beat"),
    ("goal", "goal"),
)


class AgentList(DataTable):
    """Agents in session order; number keys (bound by the app) and arrows select one."""

    @dataclass
    class AgentHighlighted(Message):
        """The person moved the selection to another agent."""

        agent: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        self.border_title = "agents"
        self._shown: dict[str, tuple[object, ...]] = {}

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    @property
    def selected(self) -> str | None:
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def show(self, statuses: Sequence[AgentStatus]) -> None:
        """Update changed cells in place, so the cursor stays on its agent; the session's spend
        goes under the table."""
        spent = total(status.spend for status in statuses)
        subtitle = f"session spend {spent.text()}" if spent.usd or spent.tokens else ""
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle
        for number, status in enumerate(statuses, start=1):
            cells = _cells(number, status)
            shown = self._shown.get(status.name)
            if shown is None:
                self.add_row(*cells, key=status.name)
            else:
                for (_, key), old, new in zip(COLUMNS, shown, cells, strict=True):
                    if old != new:  # each update re-renders the table
                        self.update_cell(status.name, key, new, update_width=True)
            self._shown[status.name] = cells

    def select(self, agent: str) -> None:
        if agent in self.rows:
            self.move_cursor(row=self.get_row_index(agent))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.AgentHighlighted(event.row_key.value))


def heartbeat_age(seconds: float | None) -> Text:
    """Fresh beats (written every 2 s) read as one value, so the table redraws only on news."""
    if seconds is not None and seconds < FRESH_S:
        return Text(f"<{FRESH_S:.0f}s")
    return Text(age(seconds), style="bold red" if seconds and seconds > STALE_S else "")


def _cells(number: int, status: AgentStatus) -> tuple[object, ...]:
    """The row; cells are compared with the shown ones, so each is a value, not a widget."""
    return (
        str(number) if number < 10 else " ",
        Text(status.name),
        Text(status.role),
        Text(status.proposer),
        agent_state(status)[:STATE_WIDTH],
        str(status.iteration),
        figure_cell(status.best_geomean_ns, status.best_quick_geomean_ns),
        Text(agent_spend(status)),
        verdict_text(status.last_verdict),
        heartbeat_age(status.heartbeat_age_s) if status.alive else Text("—"),
        Text(status.goal),
    )
