"""Log lines made ready to draw, on the watcher's thread: the screen's thread only appends them.

A line's tabs are expanded and its control codes replaced (a stray escape would redraw the
terminal), and its width in cells is measured once, here, not at every frame.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from rich.cells import cell_len

MAX_LINES = 2000
"""Lines the log panel keeps; a fresh tail is cut to as many before it is prepared."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class LogLine(NamedTuple):
    """One line of an agent's log as the screen draws it.

    A tuple of a str and an int, which the garbage collector stops tracking: thousands of them
    arrive with every fresh tail, and tracked objects would bring the full collections (tens of
    milliseconds each on a busy machine) closer together.
    """

    text: str
    cells: int
    """Its width on a terminal (wide characters take two cells)."""


def prepare(raw: Sequence[str]) -> tuple[LogLine, ...]:
    """The last MAX_LINES raw lines, each made safe to draw and measured."""
    lines = []
    for line in raw[-MAX_LINES:]:
        text = _CONTROL.sub("\ufffd", line.expandtabs())
        lines.append(LogLine(text, cell_len(text)))
    return tuple(lines)
