"""A modal form for a new agent: name, beam role, proposer and goal."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.session import PROPOSERS, AgentSpec, SessionConfig, SessionError
from qrsup.kernels.schema import ROLE_NAMES
from qrsup.supervisor.launch import DEFAULT_GOAL, default_agents
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static


def agent_spec(session: SessionConfig, name: str, role: str, proposer: str, goal: str) -> AgentSpec:
    """Built as launch builds agents (the role picks the family), on the session's device."""
    like = session.agents[0] if session.agents else None
    device = like.device if like else "cpu"
    specs = default_agents(len(ROLE_NAMES), proposer, goal, None, device)
    template = next(spec for spec in specs if spec.role == role)
    if like is None:
        return replace(template, name=name)
    return replace(
        template, name=name, max_iterations=like.max_iterations, max_seconds=like.max_seconds
    )


def next_name(session: SessionConfig) -> str:
    taken = {spec.name for spec in session.agents}
    return next(f"a{i}" for i in range(1, len(taken) + 2) if f"a{i}" not in taken)


class AddAgentDialog(ModalScreen[AgentSpec | None]):
    """Returns the new agent's spec; a bad name or goal is shown here and the form stays open."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, session: SessionConfig) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        goal = self.session.agents[0].goal if self.session.agents else DEFAULT_GOAL
        with Vertical(classes="dialog"):
            yield Label("Add an agent", classes="dialog-title")
            yield Input(next_name(self.session), placeholder="name", id="agent-name")
            yield Select(
                [(r, r) for r in ROLE_NAMES], value="exploit", allow_blank=False, id="role"
            )
            yield Select(
                [(p, p) for p in PROPOSERS], value="tuner", allow_blank=False, id="proposer"
            )
            yield Input(goal, placeholder="goal, e.g. geomean < 2ms", id="agent-goal")
            yield Static("", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Add (enter)", variant="primary", id="add")
                yield Button("Cancel (esc)", id="cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._add()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "add":
            self._add()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _add(self) -> None:
        name = self.query_one("#agent-name", Input).value.strip()
        goal = self.query_one("#agent-goal", Input).value.strip()
        role = str(self.query_one("#role", Select).value)
        proposer = str(self.query_one("#proposer", Select).value)
        try:
            parse_goal(goal)
            spec = agent_spec(self.session, name, role, proposer, goal)
            self.session.with_agent(spec)
        except (GoalError, SessionError) as exc:
            self.query_one(".dialog-error", Static).update(Text(str(exc)))
            return
        self.dismiss(spec)
