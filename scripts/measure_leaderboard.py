"""Cost of the leaderboard over a long session: one refresh's time and the table's memory, with
the row cap and without it. `show` is the widget's own work; a refresh adds the next frame.

Usage: python scripts/measure_leaderboard.py [CANDIDATES]. Feeds a board of CANDIDATES synthetic
entries (one new candidate per refresh after the first fill) to the real widget under Pilot.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import tracemalloc

from qrsup.supervisor.board import Board, LeaderEntry
from qrsup.supervisor.widgets.leaderboard import MAX_ROWS, Leaderboard
from textual.app import App, ComposeResult

SPECS = tuple(f"{n}x{n} dense c1" for n in (32, 64, 128, 256, 512, 1024, 2048, 4096, 40, 60, 8, 2))


def entry(i: int) -> LeaderEntry:
    geomean = (5.0 + (i * 7919 % 1000) / 100) * 1e6
    return LeaderEntry(
        id=f"c-{i:06d}", agent=f"a{i % 8}", role="exploit", family="blocked_wy", hypothesis="",
        parent_id=None, verdict="fail" if i % 5 == 0 else "pass", decision="rejected",
        geomean_ns=None if i % 5 == 0 else geomean,
        spec_means_ns={k: geomean * (k + 1) for k in range(len(SPECS))}, created_at=float(i),
    )  # fmt: skip


class BoardApp(App[None]):
    def __init__(self, max_rows: int) -> None:
        super().__init__()
        self.max_rows = max_rows

    def compose(self) -> ComposeResult:
        yield Leaderboard(max_rows=self.max_rows)


async def measure(count: int, max_rows: int) -> dict[str, float]:
    app = BoardApp(max_rows)
    entries = [entry(i) for i in range(count)]
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.query_one(Leaderboard)
        tracemalloc.start()
        table.show(Board(entries=tuple(entries), spec_labels=SPECS))
        await pilot.pause()
        filled_bytes = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        show_s, refresh_s = [], []
        for i in range(count, count + 20):
            entries.append(entry(i))
            started = time.perf_counter()
            table.show(Board(entries=tuple(entries), spec_labels=SPECS))
            show_s.append(time.perf_counter() - started)
            await pilot.pause()
            refresh_s.append(time.perf_counter() - started)
    return {
        "rows": table.row_count,
        "table_mib": filled_bytes / 2**20,
        "show_ms_median": statistics.median(show_s) * 1e3,
        "refresh_ms_median": statistics.median(refresh_s) * 1e3,
        "refresh_ms_max": max(refresh_s) * 1e3,
    }


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    for label, cap in ((f"capped at {MAX_ROWS}", MAX_ROWS), ("uncapped", 10**9)):
        result = asyncio.run(measure(count, cap))
        figures = " ".join(
            f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()
        )
        print(f"{count} candidates, {label}: {figures}", flush=True)


if __name__ == "__main__":
    main()
