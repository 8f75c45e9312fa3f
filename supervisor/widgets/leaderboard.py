"""The leaderboard: every candidate with its full-suite figures, sortable by any column."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from qrsup.supervisor.board import Board, LeaderEntry, shown_entries
from qrsup.supervisor.widgets.format import figure_cell, ms, verdict_text
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

SortValue = Callable[[LeaderEntry], object]
FIXED: dict[str, tuple[str, SortValue]] = {
    "id": ("candidate", lambda e: e.id),
    "geomean": ("geomean ms", lambda e: shown_geomean(e)),
    "verdict": ("verdict", lambda e: e.verdict),
    "agent": ("agent", lambda e: e.agent),
    "role": ("role", lambda e: e.role),
    "decision": ("decision", lambda e: e.decision),
    "age": ("made", lambda e: -e.created_at),
}
CYCLE = ("geomean", "age", "agent", "verdict")
MAX_ROWS = 300  # a DataTable row costs ~15 KiB and every refresh re-sorts them all


def short_label(label: str) -> str:
    """'8x128 mixed c2' → '8x128 mixed'; the dense case, the common one, goes unnamed."""
    size, case, *_ = [*label.split(), "", ""]
    return size if case in ("dense", "") else f"{size} {case[:5]}"


def sort_key(value: object) -> tuple[bool, object]:
    """Missing figures sort last whatever the column."""
    return (value is None, value if value is not None else 0)


class Leaderboard(DataTable):
    """Rows keyed by candidate id and updated in place; the cursor stays on its candidate."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("t", "cycle_sort", "Sort")]

    @dataclass
    class DiffRequested(Message):
        """The person chose a row (enter or click): show its diff against its parent."""

        candidate_id: str

    def __init__(self, *, id: str | None = None, max_rows: int = MAX_ROWS) -> None:
        super().__init__(id=id, cursor_type="row")
        self.entries: dict[str, LeaderEntry] = {}
        self.sort_column = "geomean"
        self.max_rows = max_rows
        self.total = 0
        self._spec_columns: dict[str, int] = {}
        self._title()

    @property
    def selected(self) -> LeaderEntry | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.entries.get(key or "")

    def show(self, board: Board) -> None:
        if not self.columns:
            for key, (label, _) in FIXED.items():
                self.add_column(label, key=key)
            for index, label in enumerate(board.spec_labels):
                self._spec_columns[f"spec{index}"] = index
                self.add_column(short_label(label), key=f"spec{index}")
        keep = self.selected
        shown = shown_entries(board, self.max_rows)
        kept = {e.id for e in shown}
        for gone in [i for i in self.entries if i not in kept]:
            self.remove_row(gone)
            del self.entries[gone]
        for entry in shown:
            if self.entries.get(entry.id) == entry:
                continue
            cells = self._cells(entry)
            if entry.id in self.entries:
                for column, value in zip(self.columns, cells, strict=True):
                    self.update_cell(entry.id, column, value, update_width=True)
            else:
                self.add_row(*cells, key=entry.id)
            self.entries[entry.id] = entry
        self.total = len(board.entries)
        self._title()
        self._sort(keep.id if keep and keep.id in self.entries else None)

    def action_cycle_sort(self) -> None:
        column = self.sort_column if self.sort_column in CYCLE else CYCLE[-1]
        self.sort_by(CYCLE[(CYCLE.index(column) + 1) % len(CYCLE)])

    def sort_by(self, column: str) -> None:
        self.sort_column = column
        self._title()
        keep = self.selected
        self._sort(keep.id if keep else None)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.DiffRequested(event.row_key.value))

    def _title(self) -> None:
        column = self.sort_column
        label = FIXED[column][0] if column in FIXED else str(self.columns[column].label)
        title = f"leaderboard · by {label.removesuffix(' ms')}"
        if self.total > len(self.entries):
            title += f" · {len(self.entries)} of {self.total}: beam, fastest, newest"
        self.border_title = title

    def _sort(self, keep: str | None) -> None:
        value = self._value(self.sort_column)
        self.sort("id", key=lambda cell: sort_key(value(self.entries[str(cell)])))
        if keep is not None:
            self.move_cursor(row=self.get_row_index(keep), scroll=True)

    def _value(self, column: str) -> SortValue:
        if column in FIXED:
            return FIXED[column][1]
        index = self._spec_columns[column]
        return lambda e: e.spec_means_ns.get(index)

    def _cells(self, entry: LeaderEntry) -> list[object]:
        return [
            Text(entry.id),
            figure_cell(entry.geomean_ns, entry.quick_geomean_ns),
            verdict_text(entry.verdict),
            Text(entry.agent),
            Text(entry.role or "—"),
            Text(entry.decision or "—"),
            _made(entry.created_at),
            *(ms(entry.spec_means_ns.get(i)) for i in self._spec_columns.values()),
        ]


def shown_geomean(entry: LeaderEntry) -> float | None:
    """The figure the geomean column shows, which it sorts by: the full-suite geomean, else the
    quick stage's (marked `q`); a fast quick-only row ranks among the full ones it would join."""
    return entry.geomean_ns if entry.geomean_ns is not None else entry.quick_geomean_ns


def _made(created_at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(created_at))
