"""The agent list shows quota waits, stalls and spend (per agent, and the session's under the
table); steering goes to every agent at once; a budget pause is answered with a new budget; a
death nobody has recorded yet is handed to the app, which records it."""

from __future__ import annotations

import dataclasses

import pytest
from qrsup.agents import inbox
from qrsup.agents.spend import CostBudget, Spend
from qrsup.supervisor.app import SupervisorApp
from qrsup.supervisor.fleet import UNRECORDED, Fleet
from qrsup.supervisor.widgets.agent_list import AgentList
from qrsup.supervisor.widgets.text_prompt import TextPrompt
from textual.widgets import Input

from tests.tui_pilot import type_text, until
from tests.tui_sessions import frozen_sample, frozen_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Sampler:
    """Posts a frozen sample with a few agents' figures changed."""

    def __init__(self, post, **changes: dict) -> None:
        self._post = post
        self._changes = changes

    def start(self) -> None:
        sample = frozen_sample()
        statuses = tuple(
            dataclasses.replace(s, **self._changes.get(s.name, {})) for s in sample.statuses
        )
        self._post(dataclasses.replace(sample, statuses=statuses))

    def stop(self) -> None:
        return None

    def poke(self) -> None:
        return None


def app_with(tmp_path, **changes: dict) -> SupervisorApp:
    app = SupervisorApp(Fleet(frozen_session(tmp_path)))
    app.main.sampler = Sampler(app.main.post_fact, **changes)
    return app


def cell(app: SupervisorApp, agent: str, column: str) -> str:
    table = app.main.query_one(AgentList)
    return str(table.get_cell(agent, column))


async def test_quota_waits_stalls_and_spend_are_in_the_agent_list(tmp_path):
    app = app_with(
        tmp_path,
        a1={"state": "waiting", "detail": "for quota until 14:05", "spend": Spend(0.42, 9_000)},
        a2={"state": "proposing", "stalled": 8, "pid": 102, "alive": True,
            "spend": Spend(0.0, 12_300)},
    )  # fmt: skip
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.main.query_one(AgentList).row_count == 3, 5, "the rows")
        assert cell(app, "a1", "state") == "waiting for quota until 14:05"
        assert cell(app, "a2", "state") == "stalled · proposing"
        assert (cell(app, "a1", "spend"), cell(app, "a2", "spend")) == ("$0.42", "12.3k tok")
        assert cell(app, "a3", "spend") == "—"
        assert app.main.query_one(AgentList).border_subtitle == "session spend $0.42 · 21.3k tok"


async def test_an_agent_asked_to_stop_shows_stopping_before_its_state(tmp_path):
    app = app_with(tmp_path, a2={"state": "proposing", "stopping": True, "pid": 102, "alive": True})
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.main.query_one(AgentList).row_count == 3, 5, "the rows")
        assert cell(app, "a2", "state") == "stopping · proposing"
        assert not cell(app, "a3", "state").startswith("stopping")


async def test_an_agent_with_quick_figures_only_shows_its_best_marked_quick(tmp_path):
    """Each agent's best is in the list: the full stage's, else the quick stage's, marked `q`,
    and never the quick figure beside a full one (another rule's, on fewer specs)."""
    app = app_with(
        tmp_path,
        a2={"best_quick_geomean_ns": 26_490.0},
        a3={"best_quick_geomean_ns": 26_490.0},
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.main.query_one(AgentList).row_count == 3, 5, "the rows")
        assert cell(app, "a1", "best") == "0.038"
        assert cell(app, "a2", "best") == "0.06"
        assert cell(app, "a3", "best") == "0.02649 q"


async def test_a_run_refused_because_the_judge_changed_does_not_read_as_the_candidates_doing(
    tmp_path,
):
    """The stored verdict is "tampered" (the judge's own files changed under the session); a
    cheating candidate fails gate `tamper` instead, so the list says what happened."""
    app = app_with(tmp_path, a2={"last_verdict": "tampered"})
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.main.query_one(AgentList).row_count == 3, 5, "the rows")
        assert cell(app, "a2", "last") == "judge changed"
        assert cell(app, "a1", "last") == "pass"


async def test_steer_all_queues_the_text_for_every_agent(tmp_path):
    app = app_with(tmp_path)
    paths = app.fleet.paths
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("S")
        assert isinstance(app.screen, TextPrompt)
        await type_text(pilot, "prefer Triton")
        await pilot.press("enter")
        await until(pilot, lambda: all(inbox.pending(paths.inbox(n)) for n in ("a1", "a2", "a3")),
                    10, "every inbox")  # fmt: skip
    for name in ("a1", "a2", "a3"):
        ((_, message),) = inbox.pending(paths.inbox(name))
        assert message.text == "prefer Triton"


async def test_pausing_key_on_an_agent_paused_at_its_budget_asks_for_a_new_one(tmp_path):
    app = app_with(
        tmp_path,
        a2={"budget_paused": True, "budget": CostBudget(2.5), "spend": Spend(3.0, 0)},
    )
    paths = app.fleet.paths
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.main.query_one(AgentList).row_count == 3, 5, "the rows")
        await pilot.press("2", "p")
        prompt = await until(pilot, lambda: isinstance(app.screen, TextPrompt) and app.screen, 5,
                             "the budget prompt")  # fmt: skip
        assert "has spent $3.00 of $2.5 and is paused at it" in prompt.prompt
        assert prompt.query_one(Input).value == "$5"
        await pilot.press("enter")
        await until(pilot, lambda: inbox.pending(paths.inbox("a2")), 10, "the budget message")
    ((_, message),) = inbox.pending(paths.inbox("a2"))
    assert (message.kind, message.text) == ("budget", "$5")


async def test_a_death_nobody_recorded_yet_is_handed_to_the_app_to_record(tmp_path):
    app = app_with(tmp_path, a3={"state": "died", "detail": UNRECORDED, "alive": False})
    recorded: list[bool] = []
    app.fleet.notice_deaths = lambda: recorded.append(True)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: recorded, 5, "the death recorded")
