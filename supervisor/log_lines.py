"""Log lines made ready to draw, on the watcher's thread: the screen's thread only appends them.

A line's tabs are expanded and its control codes replaced (a stray escape would redraw the
terminal), and its width in cells is measured once, here, not at every frame.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rich.cells import cell_len

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of an agent's log as the screen draws it."""

    text: str
    cells: int
    """Its width on a terminal (wide characters take two cells)."""


def prepare(raw: Iterable[str]) -> tuple[LogLine, ...]:
    """Each raw line made safe to draw and measured."""
    lines = []
    for line in raw:
        text = _CONTROL.sub("\ufffd", line.expandtabs())
        lines.append(LogLine(text, cell_len(text)))
    return tuple(lines)
