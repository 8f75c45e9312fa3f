"""How a compiler shares a host with judges: a low priority and half the cores, so that the
judge's own processes and another agent's judge on this host keep the rest."""

from __future__ import annotations

import contextlib
import os

NICENESS = 10


def spare_workers() -> int:
    """Compiler processes to run beside a judge: half the cores, at least one."""
    return max(1, (os.cpu_count() or 2) // 2)


def lower_priority(pid: int) -> None:
    """Give a compiler the low priority; its workers forked later inherit it. A compiler that
    already ended needs none."""
    with contextlib.suppress(ProcessLookupError):
        os.setpriority(os.PRIO_PROCESS, pid, NICENESS)
