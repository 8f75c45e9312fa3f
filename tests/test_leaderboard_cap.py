"""The leaderboard shows at most a few hundred rows of a long session: the beam's and the
incumbent's, the fastest passing half, then the newest; its title says how many it hides."""

from __future__ import annotations

import pytest
from qrsup.supervisor.board import Board, LeaderEntry, shown_entries
from qrsup.supervisor.widgets.leaderboard import Leaderboard
from textual.app import App, ComposeResult

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def entry(i: int, geomean_ns: float | None, verdict: str = "pass") -> LeaderEntry:
    return LeaderEntry(
        id=f"c-{i:04d}", agent="a1", role="exploit", family="blocked_wy", hypothesis="",
        parent_id=None, verdict=verdict, decision="rejected", geomean_ns=geomean_ns,
        spec_means_ns={0: geomean_ns} if geomean_ns else {}, created_at=1000.0 + i,
    )  # fmt: skip


def long_session(count: int) -> Board:
    """Candidate i is made at time i and takes 1000 - i ms, every third one failing; c-0000 is
    the incumbent (slowest, oldest) and c-0001 holds the near-miss slot."""
    entries = tuple(
        entry(i, None, "fail") if i % 3 == 2 else entry(i, (1000.0 - i) * 1e6) for i in range(count)
    )
    return Board(
        entries=entries,
        beam=(("near-miss", "c-0001", 999e6),),
        incumbent_id="c-0000",
        spec_labels=("8x128 dense c1",),
    )


def test_a_short_session_is_shown_whole() -> None:
    board = long_session(8)
    assert shown_entries(board, 10) == list(board.entries)


def test_a_long_session_keeps_the_pinned_the_fastest_and_the_newest() -> None:
    board = long_session(100)
    shown = {e.id for e in shown_entries(board, 10)}
    assert len(shown) == 10
    assert {"c-0000", "c-0001"} <= shown  # incumbent and beam, though slow and old
    passing = sorted(
        (e for e in board.entries if e.verdict == "pass"), key=lambda e: e.geomean_ns or 0.0
    )
    assert {e.id for e in passing[:5]} <= shown  # the fastest half of the rows
    assert "c-0098" in shown  # the newest, a failure: also shown


class BoardApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Leaderboard(id="board", max_rows=10)


async def test_the_table_drops_rows_that_fall_out_and_says_how_many_it_hides() -> None:
    app = BoardApp()
    async with app.run_test() as pilot:
        table = app.query_one(Leaderboard)
        table.show(long_session(50))
        await pilot.pause()
        assert table.row_count == 10
        assert "10 of 50" in str(table.border_title)
        table.show(long_session(60))
        await pilot.pause()
        assert table.row_count == 10 and "10 of 60" in str(table.border_title)
        assert "c-0059" in table.entries  # newly made, fastest so far
        assert "c-0049" not in table.entries  # fell out of the fastest half
        table.show(long_session(5))  # a board this small is shown whole, titled plainly
        await pilot.pause()
        assert table.row_count == 5 and str(table.border_title) == "leaderboard · by geomean"
