"""The agent list: one row per agent; the highlighted row is the agent the other panels follow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from supervisor.fleet import AgentStatus
from supervisor.process_stats import TreeLoad
from supervisor.widgets.format import STATE_STYLES, VERDICT_STYLES, age, ms, styled

STATE_WIDTH = 22
COLUMNS = (
    ("#", "number"),
    ("agent", "name"),
    ("role", "role"),
    ("proposer", "proposer"),
    ("state", "state"),
    ("it", "iteration"),
    ("best ms", "best"),
    ("last", "last"),
    ("beat", "beat"),
    ("cpu%", "cpu"),
    ("rss", "rss"),  # MiB
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

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    @property
    def selected(self) -> str | None:
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def show(self, statuses: Sequence[AgentStatus], loads: Mapping[str, TreeLoad]) -> None:
        """Update rows in place, so the cursor stays on its agent."""
        for number, status in enumerate(statuses, start=1):
            cells = _cells(number, status, loads.get(status.name))
            if status.name in self.rows:
                for (_, key), value in zip(COLUMNS, cells, strict=True):
                    self.update_cell(status.name, key, value, update_width=True)
            else:
                self.add_row(*cells, key=status.name)

    def select(self, agent: str) -> None:
        if agent in self.rows:
            self.move_cursor(row=self.get_row_index(agent))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.AgentHighlighted(event.row_key.value))


def _cells(number: int, status: AgentStatus, load: TreeLoad | None) -> tuple[object, ...]:
    detail = status.detail if status.detail not in ("", status.state) else ""
    state = f"{status.state} {detail}".strip()
    running = load is not None and bool(load.pids)
    return (
        str(number) if number < 10 else " ",
        Text(status.name),
        Text(status.role),
        Text(status.proposer),
        Text(state[:STATE_WIDTH], style=STATE_STYLES.get(status.state, "")),
        str(status.iteration),
        ms(status.best_geomean_ns),
        styled(status.last_verdict or "—", VERDICT_STYLES),
        age(status.heartbeat_age_s),
        f"{load.cpu_pct:.0f}" if load and running else "—",
        f"{load.rss_bytes / 2**20:.0f}M" if load and running else "—",
        Text(status.goal),
    )
