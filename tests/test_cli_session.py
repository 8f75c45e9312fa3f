"""The session verbs for scripts: one clear line and exit 2 for a bad target, nothing changed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from qrsup.agents import inbox
from qrsup.agents.heartbeat import Beat, write_beat
from qrsup.agents.lifecycle import Desired, control_path, decide, read_control
from qrsup.agents.store import Store
from qrsup.kernels.schema import Actor, Lifecycle
from qrsup.supervisor import actions
from qrsup.supervisor.cli import main
from qrsup.supervisor.fleet import Fleet

from tests.tui_sessions import T0, frozen_session


@pytest.fixture
def session(tmp_path):
    paths = frozen_session(tmp_path)
    return paths, ["--workspace", str(paths.root.parents[1]), "--session", "frozen"]


def _store_counts(paths) -> tuple[int, int, int]:
    store = Store(paths.store)
    try:
        return len(store.candidates()), len(store.evaluations()), len(store.promotions())
    finally:
        store.close()


@pytest.mark.parametrize(
    ("verb", "message"),
    [
        (["steer", "a9", "try", "wider", "panels"], "no agent named 'a9' (agents: a1, a2, a3)"),
        (["goal", "a9", "geomean < 1ms"], "no agent named 'a9'"),
        (["pause", "a9"], "no agent named 'a9'"),
        (["ask", "a9", "why?"], "no agent named 'a9'"),
        (["kill", "a1"], "a1 is not running"),
        (["goal", "a1", "be", "fast"], "goal"),
        (["steer", "a1", " "], "steering text is empty"),
        (["promote", "c-nope"], "no candidate 'c-nope' in session frozen"),
        (["promote", "c-3c4d5e6f7a"], "c-3c4d5e6f7a failed the judge (fail); not promoted"),
    ],
)
def test_a_bad_target_gets_one_line_and_exit_2_and_changes_nothing(session, capsys, verb, message):
    paths, where = session
    before = _store_counts(paths)
    assert main([*where, *verb]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("qrsup: error: ") and message in err and "\n" not in err
    assert _store_counts(paths) == before
    assert all(inbox.pending(paths.inbox(name)) == [] for name in ("a1", "a2", "a3"))


def test_a_session_that_does_not_exist_is_named(tmp_path, capsys):
    (tmp_path / "ws").mkdir()
    assert main(["--workspace", str(tmp_path / "ws"), "--session", "gone", "status"]) == 2
    err = capsys.readouterr().err
    assert "gone" in err and err.count("\n") == 1


def test_status_and_steer_on_a_session_whose_agents_are_stopped(session, capsys):
    paths, where = session
    assert main([*where, "status"]) == 0
    out = capsys.readouterr().out
    assert "session frozen" in out and "a3" in out and "c-incumbent" in out
    assert main([*where, "steer", "a2", "try", "wider", "panels"]) == 0
    out = capsys.readouterr().out
    assert "steering for a2 queued" in out
    assert "the tuner takes nothing from 'try wider panels'" in " ".join(out.split())
    ((_, message),) = inbox.pending(paths.inbox("a2"))
    assert (message.kind, message.text, message.sender) == ("steer", "try wider panels", "human")
    assert main([*where, "steer", "a3", "set", "panel_width", "to", "64"]) == 0
    assert "; the tuner pins all.panel_width=64" in capsys.readouterr().out


def test_status_piped_to_a_file_keeps_whole_columns(session, capsys, monkeypatch):
    """Rich assumes 80 columns off a terminal, which cut `proposer` to `prop…`."""
    monkeypatch.delenv("COLUMNS", raising=False)
    _, where = session
    assert main([*where, "status"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "agent" in line)
    assert all(word in header for word in ("role", "proposer", "state", "heartbeat", "goal"))


def paused_at_budget(paths, agent: str, usd: float, limit: float) -> None:
    """The heartbeat an agent paused at its cost budget leaves."""
    extra = {
        "spend": {"usd": usd, "tokens": 12_000},
        "budget": {"usd": limit, "tokens": 0},
        "budget_paused": True,
        "stalled": 0,
    }
    detail = f"at its budget: ${usd:.2f} of its ${limit:.2f} budget spent"
    write_beat(paths.heartbeat(agent), Beat(0, "paused", 3, T0, detail=detail, extra=extra))


def test_broadcast_queues_the_same_steering_for_every_agent(session, capsys):
    paths, where = session
    assert main([*where, "broadcast", "prefer", "Triton"]) == 0
    assert "steering for every agent (a1, a2, a3) queued" in capsys.readouterr().out
    for name in ("a1", "a2", "a3"):
        ((_, message),) = inbox.pending(paths.inbox(name))
        assert (message.kind, message.text) == ("steer", "prefer Triton")
    assert main([*where, "broadcast", "panel_width=64"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.endswith("at their boundaries; the tuner of a1, a2, a3 pins all.panel_width=64")


def test_a_new_budget_is_queued_and_a_bad_one_refused(session, capsys):
    paths, where = session
    assert main([*where, "budget", "a1", "lots"]) == 2
    assert "cost budget must be dollars" in capsys.readouterr().err
    assert inbox.pending(paths.inbox("a1")) == []
    paused_at_budget(paths, "a1", 3.0, 2.5)
    assert main([*where, "budget", "a1", "$10"]) == 0
    assert "budget $10 for a1 queued; it resumes under it" in capsys.readouterr().out
    ((_, message),) = inbox.pending(paths.inbox("a1"))
    assert (message.kind, message.text) == ("budget", "$10")


def test_resuming_an_agent_paused_at_its_budget_asks_for_a_new_budget(session, capsys):
    paths, where = session
    paused_at_budget(paths, "a2", 3.0, 2.5)
    assert main([*where, "resume", "a2"]) == 2
    err = capsys.readouterr().err
    assert "a2 is paused at its cost budget ($3.00 of its $2.50 budget spent)" in err
    assert "qrsup budget a2" in err


def test_status_shows_each_agents_spend_and_the_sessions(session, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    paths, where = session
    paused_at_budget(paths, "a1", 3.0, 2.5)
    paused_at_budget(paths, "a3", 0.5, 0.0)
    assert main([*where, "status"]) == 0
    out = capsys.readouterr().out
    assert "$3.00!" in out and "$0.50" in out  # `!`: at its budget
    assert "session spend $3.50 · 24.0k tok" in out


def test_status_shows_each_agents_best_and_a_quick_only_one_marked(session, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    paths, where = session
    write_beat(paths.heartbeat("a1"), Beat(0, "idle", 3, T0, best_geomean_ns=24.15e6))
    write_beat(paths.heartbeat("a2"), Beat(0, "idle", 5, T0, best_quick_geomean_ns=26.49e6))
    assert main([*where, "status"]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if " a" in line}
    assert "24.15" in rows["a1"] and "24.15 q" not in rows["a1"]
    assert "26.49 q" in rows["a2"]


def test_pausing_a_stopped_agent_says_how_to_start_it_again(session, capsys):
    paths, where = session
    decide(paths, "a1", Lifecycle.STOP, Desired.STOPPED, Actor.HUMAN, "qrsup stop")
    assert main([*where, "pause", "a1"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "a1 is not running (stopped), so there is nothing to pause" in err
    assert "qrsup resume a1" in err
    assert read_control(paths, "a1").desired == Desired.STOPPED
    assert inbox.pending(paths.inbox("a1")) == []


@pytest.fixture
def a1_running(session, monkeypatch):
    """a1 runs (a stand-in process, its pid the agent's), the others are down."""
    paths, _ = session
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    alive = lambda self, name: (  # noqa: E731
        process.pid if name == "a1" and process.poll() is None else None
    )
    monkeypatch.setattr(Fleet, "pid", alive)
    write_beat(paths.heartbeat("a1"), Beat(process.pid, "evaluating", 4, T0, "c-1a2b3c4d5e"))
    yield process
    process.kill()
    process.wait()


def test_resuming_a_running_agent_queues_nothing_and_says_it_runs(session, a1_running, capsys):
    paths, where = session
    assert main([*where, "resume", "a1"]) == 2
    err = capsys.readouterr().err
    assert "a1 is already running (evaluating); nothing to resume" in err
    assert inbox.pending(paths.inbox("a1")) == []
    assert not control_path(paths, "a1").exists()  # no decision recorded
    write_beat(paths.heartbeat("a1"), Beat(a1_running.pid, "paused", 4, T0))
    assert main([*where, "resume", "a1"]) == 0  # a paused one resumes
    assert "a1 resumes at its next boundary" in capsys.readouterr().out
    assert [m.kind for _, m in inbox.pending(paths.inbox("a1"))] == ["resume"]


def test_stop_says_the_agents_finish_their_evaluation_then_that_they_stopped(
    session, a1_running, capsys
):
    paths, where = session
    assert main([*where, "stop"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.strip().splitlines()]
    assert lines == [
        "stopping: a1 finishes its evaluation in flight (waiting up to 120 s, then killing any "
        "still running)",
        "stopped a1; qrsup resume NAME starts one again",
    ]
    assert a1_running.poll() is not None  # it was told (SIGTERM) and exited
    for name in ("a1", "a2", "a3"):
        ((_, message),) = inbox.pending(paths.inbox(name))
        assert (message.kind, message.text) == (
            "stop",
            "stop after the evaluation in flight (qrsup stop)",
        )
        assert read_control(paths, name).desired == Desired.STOPPED


def test_an_agent_asked_to_stop_reads_stopping_until_its_evaluation_ends(
    session, a1_running, capsys
):
    """A stop waits for the evaluation in flight (minutes on a CPU): meanwhile the agent list
    says so, where it used to show the evaluation alone as if nothing had been asked."""
    paths, where = session
    assert not Fleet(paths).status("a1").stopping
    for desired in (Desired.STOPPED, Desired.QUIT):  # `qrsup stop`, or quitting with "stop them"
        decide(paths, "a1", Lifecycle.STOP, desired, Actor.HUMAN, "qrsup stop")
        assert Fleet(paths).status("a1").stopping
        assert main([*where, "status"]) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if " a1 " in line)
        assert "stopping · " in row
    decide(paths, "a2", Lifecycle.STOP, Desired.STOPPED, Actor.HUMAN, "qrsup stop")
    assert not Fleet(paths).status("a2").stopping  # not running: it reads "stopped"
    assert Fleet(paths).status("a2").state == "stopped"


def test_promote_on_the_command_line_says_a_slower_figure_needs_force(session, capsys, monkeypatch):
    _, where = session
    asked = []

    def refused(fleet, candidate_id, force=False):
        asked.append(force)
        return actions.ActionResult(False, "revalidation measured slower; not promoted")

    monkeypatch.setattr(actions, "promote_candidate", refused)
    assert main([*where, "promote", "c-1a2b3c4d5e"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "a slower figure commits nothing (--force commits it anyway)" in out
    assert "asks again" not in out
    assert main([*where, "promote", "c-1a2b3c4d5e", "--force"]) == 2
    assert "--force: a slower figure is committed too" in capsys.readouterr().out
    assert asked == [False, True]
