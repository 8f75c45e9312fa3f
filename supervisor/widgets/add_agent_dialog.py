"""A modal form for a new agent: name, beam role, proposer, its model or command, and goal.

The fields a proposer needs show with it (model, endpoint and key variable for `openai`, the
template for `command`), filled from qrsup.toml. The form checks what the command line checks,
through the same functions, and an openai agent's endpoint answers one `GET /models` (off the
screen's thread) before the agent is added; a mistake stays in the form.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import ClassVar

from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.probe import probe_endpoint
from qrsup.agents.session import PROPOSERS, AgentSpec, SessionConfig, SessionError
from qrsup.agents.settings import WorkspaceSettings
from qrsup.agents.spend import CostBudget
from qrsup.kernels.schema import ROLE_NAMES
from qrsup.supervisor.fleet_plan import LaunchError, ProposerFlags, ProposerSetup, proposer_setup
from qrsup.supervisor.launch import DEFAULT_GOAL, Limits, new_agent
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static
from textual.worker import Worker, WorkerState

MODEL_FIELDS = ("#model", "#base-url", "#api-key-env")


def agent_spec(
    session: SessionConfig, name: str, role: str, setup: ProposerSetup, goal: str
) -> AgentSpec:
    """Built as launch builds agents (the role picks the family), on the session's device, with
    the budgets of the session's first agent."""
    like = session.agents[0] if session.agents else None
    device = like.device if like else "cpu"
    limits = Limits()
    if like is not None:
        cost = CostBudget(like.max_usd, like.max_tokens)
        limits = Limits(like.max_iterations, like.max_seconds, cost)
    return new_agent(name, ROLE_NAMES.index(role), setup, goal, device, limits)


def next_name(session: SessionConfig) -> str:
    taken = {spec.name for spec in session.agents}
    return next(f"a{i}" for i in range(1, len(taken) + 2) if f"a{i}" not in taken)


class AddAgentDialog(ModalScreen[AgentSpec | None]):
    """Returns the new agent's spec; a bad field is shown here and the form stays open."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, session: SessionConfig, settings: WorkspaceSettings) -> None:
        super().__init__()
        self.session = session
        self.settings = settings
        self._probing: AgentSpec | None = None

    def compose(self) -> ComposeResult:
        goal = self.session.agents[0].goal if self.session.agents else DEFAULT_GOAL
        model = self.settings.model
        with VerticalScroll(classes="dialog", can_focus=False):
            yield Label("Add an agent", classes="dialog-title")
            yield Input(next_name(self.session), placeholder="name", id="agent-name")
            yield Select(
                [(r, r) for r in ROLE_NAMES], value="exploit", allow_blank=False, id="role"
            )
            yield Select(
                [(p, p) for p in PROPOSERS], value="tuner", allow_blank=False, id="proposer"
            )
            yield Input(str(model.get("model", "")), placeholder="model, e.g. gpt-5", id="model")
            yield Input(
                str(model.get("base_url") or ""),
                placeholder="endpoint (empty: OpenAI), e.g. http://127.0.0.1:8000/v1",
                id="base-url",
            )
            yield Input(
                str(model.get("api_key_env", "")),
                placeholder="variable holding the key (OPENAI_API_KEY)",
                id="api-key-env",
            )
            yield Input(
                self.settings.commands.get("default", ""),
                placeholder="command template, e.g. codex exec {prompt_file}",
                id="command",
            )
            yield Input(goal, placeholder="goal, e.g. geomean < 2ms", id="agent-goal")
            yield Static("", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Add (enter)", variant="primary", id="add")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self._show_fields("tuner")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "proposer":
            self._show_fields(str(event.value))

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

    def _show_fields(self, proposer: str) -> None:
        for selector in MODEL_FIELDS:
            self.query_one(selector, Input).display = proposer == "openai"
        self.query_one("#command", Input).display = proposer == "command"

    def _value(self, selector: str) -> str | None:
        return self.query_one(selector, Input).value.strip() or None

    def _add(self) -> None:
        name = self._value("#agent-name") or ""
        goal = self._value("#agent-goal") or ""
        role = str(self.query_one("#role", Select).value)
        proposer = str(self.query_one("#proposer", Select).value)
        flags = ProposerFlags(
            self._value("#model"),
            self._value("#base-url"),
            self._value("#api-key-env"),
            self._value("#command"),
        )
        try:
            parse_goal(goal)
            setup = proposer_setup(proposer, "", flags, self._settings_for(), name)
            spec = agent_spec(self.session, name, role, setup, goal)
            self.session.with_agent(spec)
        except (GoalError, SessionError, LaunchError) as exc:
            self._error(str(exc))
            return
        if spec.proposer != "openai":
            self.dismiss(spec)
            return
        self._error(f"asking {spec.model.get('base_url') or 'api.openai.com'} for its models…")
        self.query_one("#add", Button).disabled = True
        self._probing = spec
        config = ModelConfig.from_mapping(spec.model)
        self.run_worker(partial(probe_endpoint, config), thread=True, exclusive=True, group="probe")

    def _settings_for(self) -> WorkspaceSettings:
        """The fields are the whole truth: an emptied endpoint field means OpenAI itself."""
        shown = ("model", "base_url", "api_key_env")
        model = {k: v for k, v in self.settings.model.items() if k not in shown}
        return replace(self.settings, model=model)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The probe's answer; a dialog closed meanwhile never hears it."""
        if event.worker.group != "probe" or event.state not in (
            WorkerState.SUCCESS,
            WorkerState.ERROR,
        ):
            return
        self.query_one("#add", Button).disabled = False
        failed = event.state == WorkerState.ERROR
        problem = f"the probe failed: {event.worker.error}" if failed else event.worker.result
        if problem or self._probing is None:
            self._error(problem)
        else:
            self.dismiss(self._probing)

    def _error(self, text: str) -> None:
        error = self.query_one(".dialog-error", Static)
        error.update(Text(text))
        error.scroll_visible()  # a short screen may have it scrolled out of view
