"""The incumbent, the beam's slots, and the best geomean so far as a sparkline."""

from __future__ import annotations

from qrsup.supervisor.board import Board
from qrsup.supervisor.widgets.format import ms
from qrsup.supervisor.widgets.stats_panel import set_height
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static


def beam_text(board: Board) -> Text:
    """Incumbent first, with its commit, then one line per beam role."""
    rows = [
        ("incumbent", f"{board.incumbent_id or '—'} {ms(board.incumbent_geomean_ns)} ms"),
        ("commit", (board.incumbent_commit or "—")[:12]),
        *((role, f"{cid} {ms(geomean_ns)} ms") for role, cid, geomean_ns in sorted(board.beam)),
    ]
    return Text("\n").join(Text.assemble((f"{name:<11}", "bold"), value) for name, value in rows)


class BeamPanel(Vertical):
    """Read-only: a promotion is a key on the leaderboard's selected row."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "beam · incumbent"

    def compose(self) -> ComposeResult:
        yield Static(Text("waiting for the store…"), id="beam-text")
        yield Sparkline([], id="best-sparkline")

    def show(self, board: Board) -> None:
        text = beam_text(board)
        lines = self.query_one("#beam-text", Static)
        set_height(lines, len(text.split()))
        lines.update(text, layout=False)
        series = board.best_over_time()
        self.query_one(Sparkline).data = [series[0] / value for value in series]  # taller: faster
        best = board.best()
        if best is not None:
            self.border_subtitle = f"best {best.id} {ms(best.geomean_ns)} ms ({best.agent})"
