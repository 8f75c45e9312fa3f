"""The keys against real agent processes on a tiny CPU suite: one session shared by the module.

Two tuner agents run for the whole module (each iteration takes seconds); every test opens its
own app on them, as a person relaunching `qrsup` would. The last test stops them.
"""

from __future__ import annotations

import git
import psutil
import pytest
from qrsup.agents import inbox
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec, load_session
from qrsup.agents.store import Store
from qrsup.supervisor.app import SupervisorApp
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.widgets.choice_dialog import ChoiceDialog
from qrsup.supervisor.widgets.leaderboard import Leaderboard
from qrsup.supervisor.widgets.log_tail import LogTail
from qrsup.supervisor.widgets.promotion_bar import PromotionBar
from qrsup.supervisor.widgets.text_screen import TextScreen

from tests.loop_helpers import make_session, wait_for
from tests.tui_pilot import notices, type_text, until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]
AGENTS = tuple(
    AgentSpec(name, role=role, goal="geomean < 1ns", max_seconds=1200)
    for name, role in (("a1", "exploit"), ("a2", "near-miss"))
)
BOUNDARY_S = 180  # an evaluation in flight, on a shared two-core machine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    paths = make_session(tmp_path_factory.mktemp("live"), AGENTS, name="live")
    yield paths
    fleet = Fleet(paths)
    for name in fleet.names():
        fleet.kill(name)


@pytest.fixture
def fleet(session) -> Fleet:
    """The session's agents, started or reattached, as `qrsup` does before its screen opens."""
    fleet = Fleet(session)
    fleet.start_all()
    return fleet


def app_on(fleet: Fleet) -> SupervisorApp:
    return SupervisorApp(fleet, sample_interval_s=0.5)


def state(fleet: Fleet, agent: str) -> str:
    return fleet.status(agent).state


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
async def test_steering_typed_in_the_dialog_reaches_the_agent_exactly_once(fleet):
    paths = fleet.paths
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: app.main.statuses, 30, "the first sample")
        await pilot.press("2")
        log = app.main.query_one(LogTail)
        await until(pilot, lambda: any("agent a2 starting" in line for line in log.lines), 30,
                    "a2's log")  # fmt: skip
        await pilot.press("s")
        await type_text(pilot, "cancelled text")
        await pilot.press("escape")
        await pilot.press("s")
        await type_text(pilot, "prefer wider panels")
        await pilot.press("enter")
        await until(pilot, lambda: any("queued" in n for n in notices(app)), 10, "the receipt")
        store = Store(paths.store)
        try:
            taken = lambda: [r for r in store.steering("a2") if r.kind == "steer"]  # noqa: E731
            await until(pilot, taken, BOUNDARY_S, "a2 to take the steering")
            await until(pilot, lambda: any("message (steer)" in line for line in log.lines), 10,
                        "the steering in a2's log")  # fmt: skip
            assert [r.text for r in taken()] == ["prefer wider panels"]
        finally:
            store.close()
    events = [e for e in read_events(paths.events("a2")) if e.get("event") == "steering"]
    assert [e["text"] for e in events if e["kind"] == "steer"] == ["prefer wider panels"]
    consumed = list((paths.inbox("a2") / "consumed").glob("*.json"))
    assert sum("prefer wider panels" in p.read_text() for p in consumed) == 1
    assert inbox.pending(paths.inbox("a2")) == []
    assert not any("cancelled text" in p.read_text() for p in consumed)


async def test_kill_asks_first_then_leaves_no_process_of_the_group_and_restart_brings_it_back(
    fleet,
):
    pid = fleet.pid("a2")
    assert pid is not None
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: "a2" in app.main.statuses, 30, "the first sample")
        await pilot.press("2")
        await until(pilot, lambda: psutil.Process(pid).children(recursive=True), BOUNDARY_S,
                    "a2's judge to start")  # fmt: skip
        group = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
        await pilot.press("k", "n")
        assert fleet.is_running("a2")
        await pilot.press("k")
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("y")
        await until(pilot, lambda: not fleet.is_running("a2"), 30, "a2 to die")
        assert [p for p in group if _alive(p)] == []
        await until(pilot, lambda: app.main.statuses["a2"].state == "killed", 10, "the list")
        await pilot.press("r")
        await until(pilot, lambda: fleet.pid("a2") not in (None, pid), 30, "a2 restarted")
        await until(pilot, lambda: app.main.statuses["a2"].alive, 10, "the list to say so")


@pytest.mark.e2e
async def test_pause_then_resume_take_effect_at_the_iteration_boundary(fleet):
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: "a1" in app.main.statuses, 30, "the first sample")
        await pilot.press("1", "p")
        await until(pilot, lambda: app.main.statuses["a1"].state == "paused", BOUNDARY_S,
                    "a1 to pause")  # fmt: skip
        await pilot.press("p")
        await until(pilot, lambda: app.main.statuses["a1"].state != "paused", 30, "a1 to resume")
    assert fleet.is_running("a1")


async def test_advisor_key_queues_ideas_and_a_side_question_is_answered(fleet):
    paths = fleet.paths
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: "a1" in app.main.statuses, 30, "the first sample")
        await pilot.press("1", "a")
        await until(pilot, lambda: any("idea(s) from playbook" in n for n in notices(app)), 30,
                    "the advisor's ideas")  # fmt: skip
        sent = [m for _, m in inbox.pending(paths.inbox("a1")) if m.kind == "advisor"]
        consumed = (paths.inbox("a1") / "consumed").glob("*.json")
        assert sent or any('"advisor"' in p.read_text() for p in consumed)
        await pilot.press("b")
        await type_text(pilot, "what is it doing")
        await pilot.press("enter")
        answer = await until(
            pilot, lambda: isinstance(app.screen, TextScreen) and app.screen, 60, "the answer"
        )
        assert "what is it doing" in answer.title_text and "a1" in answer.text.plain


async def test_add_agent_starts_it_in_the_session(fleet):
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: app.main.statuses, 30, "the first sample")
        await pilot.press("n")
        await pilot.press("enter")  # the name proposed (a3), role exploit, the session's goal
        await until(pilot, lambda: fleet.is_running("a3"), 30, "a3 to start")
        await until(pilot, lambda: "a3" in app.main.statuses, 10, "a3 in the list")
    assert load_session(fleet.paths).agent("a3").goal == "geomean < 1ns"
    fleet.kill("a3")  # two agents are enough for the rest of the module


@pytest.mark.slow
async def test_promote_asks_first_then_revalidates_and_commits(fleet):
    repo = git.Repo(fleet.paths.root.parent.parent)
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        board = app.main.query_one(Leaderboard)

        def seeded_incumbent() -> str | None:
            store = Store(fleet.paths.store)
            try:
                return store.incumbent_id()
            finally:
                store.close()

        incumbent = await until(pilot, seeded_incumbent, BOUNDARY_S, "the incumbent's bootstrap")

        def passing():
            return [
                e for e in board.entries.values()
                if e.verdict == "pass" and e.geomean_ns and e.id != incumbent
            ]  # fmt: skip

        (entry, *_) = await until(pilot, passing, 2 * BOUNDARY_S, "a passing candidate")
        board.focus()
        board.move_cursor(row=board.get_row_index(entry.id))
        before = repo.head.commit.hexsha  # the incumbent's seed commit is made by then
        asking = lambda: isinstance(app.screen, ChoiceDialog) and app.screen  # noqa: E731
        await pilot.press("P")
        await until(pilot, asking, 10, "the evidence and the question")
        await pilot.press("n")
        assert repo.head.commit.hexsha == before
        await pilot.press("P")
        await until(pilot, asking, 10, "the evidence and the question")
        await pilot.press("y")
        await until(pilot, lambda: app.main.query_one(PromotionBar).has_class("-active"), 5,
                    "the progress bar")  # fmt: skip

        def promoted_or_asked_again() -> bool:
            return any(f"promoted {entry.id}" in n for n in notices(app)) or (
                isinstance(app.screen, ChoiceDialog) and "slower" in app.screen.title_text
            )

        await until(pilot, promoted_or_asked_again, BOUNDARY_S, "the promotion")
        if isinstance(app.screen, ChoiceDialog):  # CPU times of a tiny suite read either way
            await pilot.press("y")
            await until(pilot, lambda: any(f"promoted {entry.id}" in n for n in notices(app)),
                        60, "the confirmed promotion")  # fmt: skip
        assert not app.main.query_one(PromotionBar).has_class("-active")
    head = repo.head.commit
    assert head.hexsha != before and head.message.startswith(f"Promote {entry.id}")
    store = Store(fleet.paths.store)
    assert store.incumbent_id() == entry.id
    store.close()


async def test_quit_leaving_agents_running_and_a_relaunch_reattaches_to_them(fleet):
    pids = {name: fleet.pid(name) for name in ("a1", "a2")}
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: len(app.main.statuses) >= 2, 30, "the first sample")
        await pilot.press("q", "l")
        await until(pilot, lambda: not app.is_running, 10, "the exit")
    assert app.return_value == "left running"
    relaunched = Fleet(fleet.paths)
    assert relaunched.start_all()["a1"] == pids["a1"]
    async with app_on(relaunched).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: len(app.main.statuses) >= 2, 30, "the first sample")
        statuses = app.main.statuses
        assert {name: statuses[name].pid for name in pids} == pids
        assert all(statuses[name].alive for name in pids)


@pytest.mark.e2e
async def test_quit_and_stop_them_stops_every_agent(fleet):
    async with app_on(fleet).run_test(size=(100, 30)) as pilot:
        app = pilot.app
        await until(pilot, lambda: len(app.main.statuses) >= 2, 30, "the first sample")
        await pilot.press("q", "s")
        await until(pilot, lambda: not app.is_running, 30, "the exit")
    assert app.return_value == "stopped"
    wait_for(lambda: not fleet.wait_stopped(["a1", "a2"], 1), BOUNDARY_S, "the agents to stop")
    assert all(state(fleet, name) == "stopped" for name in ("a1", "a2"))
