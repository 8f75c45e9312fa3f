"""Pilot helpers for the TUI tests: wait on a condition of the running app, read its notices."""

from __future__ import annotations

import time
from collections.abc import Callable

from qrsup.supervisor.app import SupervisorApp
from textual.css.query import NoMatches
from textual.pilot import Pilot


async def until(pilot: Pilot, condition: Callable[[], object], timeout_s: float, what: str):
    """Let the app run until `condition()` is truthy; fail with `what` at the deadline.

    A widget not composed yet counts as the condition not holding yet.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except NoMatches:
            value = None
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def notices(app: SupervisorApp) -> list[str]:
    """Every notification the app has shown and still holds, title and text."""
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def type_text(pilot: Pilot, text: str) -> None:
    await pilot.press(*["space" if c == " " else c for c in text])
