"""Facts from the watcher threads, queued for the screen and merged before it draws them.

The watchers may post many facts while the screen is busy drawing; the screen then drains them
all at once and draws each panel once: a board or a fleet sample is superseded by a later one,
a profile by the same agent's later one, and a log's batches join (a fresh tail replaces the
batches before it). Events (a new best, a crash, a goal met, advisor ideas) all stay, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence

from qrsup.supervisor.messages import AgentsSampled, BoardRead, Fact, LogRead, ProfileRead


class Mailbox:
    """Thread-safe: `put` from any thread; `drain` on the screen's thread. One wake-up is pending
    at a time, however many facts arrive before the screen drains them."""

    def __init__(self, wake: Callable[[], object]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._facts: list[Fact] = []
        self._woken = False

    def put(self, fact: Fact) -> None:
        with self._lock:
            self._facts.append(fact)
            wake, self._woken = not self._woken, True
        if wake:
            self._wake()

    def drain(self) -> list[Fact]:
        """Every fact posted since the last drain, merged."""
        with self._lock:
            facts, self._facts, self._woken = self._facts, [], False
        return coalesce(facts)


def coalesce(facts: Sequence[Fact]) -> list[Fact]:
    """Drop what a later fact supersedes; each kept fact takes its latest position."""
    kept: list[Fact | None] = []
    where: dict[Hashable, int] = {}
    for fact in facts:
        key = _supersedes(fact)
        if key is not None and key in where:
            earlier = kept[where[key]]
            kept[where[key]] = None
            fact = _merged(earlier, fact)
        if key is not None:
            where[key] = len(kept)
        kept.append(fact)
    return [fact for fact in kept if fact is not None]


def _supersedes(fact: Fact) -> Hashable | None:
    """What a later fact of the same key replaces; None for an event, which stays."""
    if isinstance(fact, BoardRead | AgentsSampled):
        return type(fact)
    if isinstance(fact, LogRead | ProfileRead):
        return (type(fact), fact.agent)
    return None


def _merged(earlier: Fact | None, later: Fact) -> Fact:
    if isinstance(earlier, LogRead) and isinstance(later, LogRead) and not later.fresh:
        return LogRead(later.agent, earlier.lines + later.lines, earlier.fresh)
    return later
