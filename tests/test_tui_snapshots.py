"""Snapshots of the main screen with its live figures frozen: sizes, themes, a dialog.

Regenerate after a deliberate change with `pytest tests/test_tui_snapshots.py --snapshot-update`
and look at the SVGs before committing them.
"""

from __future__ import annotations

import time

import pytest
from qrsup.supervisor.app import SupervisorApp
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.widgets.leaderboard import Leaderboard
from qrsup.supervisor.widgets.log_tail import LogTail

from tests.tui_pilot import until
from tests.tui_sessions import FrozenSampler, frozen_session


@pytest.fixture
def frozen_app(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")  # the leaderboard prints creation times
    time.tzset()
    paths = frozen_session(tmp_path)
    app = SupervisorApp(Fleet(paths))
    app.main.sampler = FrozenSampler(app.main.post_fact)
    yield app
    monkeypatch.undo()
    time.tzset()


def settled(theme: str = "textual-dark"):
    async def run_before(pilot) -> None:
        app = pilot.app
        app.theme = theme
        await until(pilot, lambda: app.main.query_one(Leaderboard).row_count == 5, 10, "board")
        await until(pilot, lambda: app.main.query_one(LogTail).line_count == 30, 10, "log")
        await pilot.pause()

    return run_before


def test_main_screen_at_100x30_dark(snap_compare, frozen_app):
    assert snap_compare(frozen_app, terminal_size=(100, 30), run_before=settled())


def test_main_screen_at_100x30_light(snap_compare, frozen_app):
    assert snap_compare(frozen_app, terminal_size=(100, 30), run_before=settled("textual-light"))


def test_main_screen_collapses_at_80x24(snap_compare, frozen_app):
    assert snap_compare(frozen_app, terminal_size=(80, 24), run_before=settled())


def test_kill_confirmation_over_the_main_screen(snap_compare, frozen_app):
    assert snap_compare(frozen_app, press=["2", "k"], terminal_size=(100, 30), run_before=settled())
