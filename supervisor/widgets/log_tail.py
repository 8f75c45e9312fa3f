"""The selected agent's live log: a bounded tail that wraps long lines or scrolls across them.

Lines arrive ready to draw (`log_lines.py`: cleaned and measured on the watcher's thread), so a
batch costs the screen an append and the rows it shows. A line wraps onto as many rows as it
needs, between words where it can (`w` turns wrapping off: one row per line, and ←/→ scroll
across the longest).

The tail's size changes with every batch. Textual lays the whole screen out again when a
widget's virtual size changes, so this widget keeps that change to itself: its scrollbars never
appear or vanish with the content, and it updates them itself.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import ClassVar

from qrsup.supervisor.log_lines import MAX_LINES, LogLine
from rich.segment import Segment
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import Reactive, reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class LogTail(ScrollView, can_focus=True):
    """Shows one agent's `agent.log`; the run watcher sends only that agent's lines."""

    DEFAULT_CSS = """
    LogTail {
        overflow-y: scroll;
        overflow-x: hidden;
    }
    LogTail.-unwrapped {
        overflow-x: scroll;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w", "toggle_wrap", "Wrap", tooltip="wrap long lines, or one row per line"),
    ]

    # A virtual size that lays out only this widget (see the module's docstring).
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)
    wrap: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None, max_lines: int = MAX_LINES) -> None:
        super().__init__(id=id)
        self.agent: str | None = None
        self.max_lines = max_lines
        self.border_title = "log"
        self._lines: list[LogLine] = []
        self._row_ends: list[int] = []  # wrapped: rows up to and including each line
        self._row_starts: list[tuple[int, ...] | None] = []  # wrapped: where each row begins

    @property
    def lines(self) -> list[str]:
        """The shown lines' text, oldest first."""
        return [line.text for line in self._lines]

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def follow(self, agent: str) -> None:
        """Forget the shown lines; the next lines will be this agent's."""
        self.agent = agent
        self.border_title = f"log · {agent}"
        self._lines.clear()
        self._resized(follow=False)
        self.scroll_to(0, 0, animate=False)

    def add(self, agent: str, lines: Sequence[LogLine], fresh: bool) -> None:
        """Append lines, or replace the tail when the watcher skipped ahead."""
        if agent != self.agent:
            return
        following = fresh or self.scroll_y >= self.max_scroll_y
        if fresh:
            self._lines.clear()
        self._lines.extend(lines)
        del self._lines[: max(0, len(self._lines) - self.max_lines)]
        self._resized(follow=following)

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap

    def watch_wrap(self, wrap: bool) -> None:
        self.set_class(not wrap, "-unwrapped")
        self.call_after_refresh(self._resized, follow=True)

    def on_resize(self) -> None:
        self._resized(follow=self.scroll_y >= self.max_scroll_y)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        style = self.rich_style
        row = scroll_y + y
        if self.wrap:
            index = bisect_right(self._row_ends, row)
            if index >= len(self._lines):
                return Strip.blank(width, style)
            part = row - (self._row_ends[index - 1] if index else 0)
            starts = self._row_starts[index]
            if starts is not None:
                text = self._lines[index].text
                end = starts[part + 1] if part + 1 < len(starts) else len(text)
                piece = text[starts[part] : end]
                return Strip([Segment(piece, style)], len(piece)).crop_extend(0, width, style)
            start = part * width
        else:
            index, start = row, scroll_x
            if index >= len(self._lines):
                return Strip.blank(width, style)
        line = self._lines[index]
        strip = Strip([Segment(line.text, style)], line.cells)
        return strip.crop_extend(start, start + width, style)

    def _resized(self, follow: bool) -> None:
        """Size the scroll area to the lines; keep showing the end when the end was shown."""
        width = max(1, self.scrollable_content_region.width)
        if self.wrap:
            self._row_starts = [word_wrap(line, width) for line in self._lines]
            rows = (
                len(starts) if starts is not None else max(1, -(-line.cells // width))
                for line, starts in zip(self._lines, self._row_starts, strict=True)
            )
            self._row_ends = list(accumulate(rows))
            size = Size(width, self._row_ends[-1] if self._row_ends else 0)
        else:
            size = Size(max((line.cells for line in self._lines), default=0), len(self._lines))
        if size != self.virtual_size:
            self.virtual_size = size
            self._scroll_update(size)
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()


def word_wrap(line: LogLine, width: int) -> tuple[int, ...] | None:
    """Where each of the line's rows begins: after the last space that fits, or at the width
    when a word is longer than a row. None for a line with wide characters, which is cut by
    cells instead."""
    text = line.text
    if line.cells != len(text):
        return None
    starts = [0]
    while len(text) - starts[-1] > width:
        start = starts[-1]
        space = text.rfind(" ", start + 1, start + width + 1)
        starts.append(space + 1 if space > start else start + width)
    return tuple(starts)
