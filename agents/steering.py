"""What steering can change in an agent, and taking its inbox at the iteration boundary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from qrsup.agents import inbox
from qrsup.agents.goals import Goal, GoalError, parse_goal
from qrsup.agents.recorder import Recorder
from qrsup.agents.session import AgentSpec, RunPaths
from qrsup.agents.spend import CostBudget, parse_cost_budget
from qrsup.agents.store import Store

T = TypeVar("T")


@dataclass
class AgentState:
    """The agent's steerable state; only `take_messages` changes it between iterations."""

    goal: Goal
    goal_reference: str | None = None
    """The candidate a relative goal is measured against (the incumbent when the goal was set);
    its figures are read from the store when checked, so a re-timing that refreshed them counts."""
    steering: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    paused: bool = False
    goal_met: bool = False
    stop_requested: bool = False
    budget: CostBudget = field(default_factory=CostBudget)
    budget_paused: bool = False  # paused at the budget; a new budget resumes it


def current_budget(spec: AgentSpec, store: Store) -> CostBudget:
    """The spec's cost budget, or the last one a person set by message (kept across restarts)."""
    default = CostBudget(spec.max_usd, spec.max_tokens)
    return _last_set(store, spec.name, "budget", parse_cost_budget, default)


def current_goal(spec: AgentSpec, store: Store) -> Goal:
    """The spec's goal, or the last one a person set by message (kept across restarts, as a
    person's decisions are: a restart once went back to the session's goal)."""
    return _last_set(store, spec.name, "goal", parse_goal, parse_goal(spec.goal))


def _last_set(store: Store, agent: str, kind: str, parse: Callable[[str], T], default: T) -> T:
    """The last value of `kind` a message to `agent` set, of those that parse, or `default`."""
    value = default
    for record in store.steering(agent):
        if record.kind == kind:
            try:
                value = parse(record.text)
            except ValueError:  # refused when it was taken; the one before stands
                continue
    return value


def take_messages(
    paths: RunPaths,
    store: Store,
    recorder: Recorder,
    state: AgentState,
    iteration: int,
    incumbent_id: Callable[[], str | None],
) -> None:
    """Apply every pending message once: recorded as consumed in the store, then archived."""
    for path, message in inbox.pending(paths.inbox(recorder.agent)):
        fresh = store.consume_steering(
            message.id, recorder.agent, message.kind, message.text, iteration
        )
        if fresh:
            _apply(message, state, recorder, incumbent_id)
            recorder.event(
                {
                    "event": "steering",
                    "kind": message.kind,
                    "text": message.text,
                    "sender": message.sender,
                    "message_id": message.id,
                    "iteration": iteration,
                }
            )
        inbox.archive(path)


def _apply(
    message: inbox.Message,
    state: AgentState,
    recorder: Recorder,
    incumbent_id: Callable[[], str | None],
) -> None:
    recorder.log.write(f"message ({message.kind}) from {message.sender}: {message.text}")
    if message.kind == "steer":
        state.steering.append(message.text)
        state.goal_met = False
    elif message.kind == "advisor":
        state.advice.append(message.text)
    elif message.kind == "goal":
        try:
            state.goal = parse_goal(message.text)
        except GoalError as exc:
            recorder.log.write(f"goal not changed: {exc}")
            return
        state.goal_met = False
        state.goal_reference = incumbent_id()
    elif message.kind == "pause":
        state.paused = True
    elif message.kind == "resume":
        state.paused = False
    elif message.kind == "stop":
        state.stop_requested = True
    elif message.kind == "budget":
        try:
            state.budget = parse_cost_budget(message.text)
        except ValueError as exc:
            recorder.log.write(f"budget not changed: {exc}")
            return
        if state.budget_paused:  # the answer to the pause's question: go on
            state.budget_paused = state.paused = False
