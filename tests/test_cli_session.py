"""The session verbs for scripts: one clear line and exit 2 for a bad target, nothing changed."""

from __future__ import annotations

import pytest
from qrsup.agents import inbox
from qrsup.agents.store import Store
from qrsup.supervisor.cli import main

from tests.tui_sessions import frozen_session


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
    assert "steering for a2 queued" in capsys.readouterr().out
    ((_, message),) = inbox.pending(paths.inbox("a2"))
    assert (message.kind, message.text, message.sender) == ("steer", "try wider panels", "human")
