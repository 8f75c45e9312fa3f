"""The session's timing noise: what its latest interleaved re-timing over a whole suite measured.

Every agent's decisions and any promotion's evidence read the same figure, from every agent's
events: a per-process estimate started each agent (and each restart) at the assumed 2%, so on a
CPU whose re-timings measured 6–8% an agent that had not re-timed yet judged beam entries
against a quarter of the noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from qrsup.agents.records import read_events

DEFAULT_NOISE = 0.02


def noise_events(events: Iterable[Path]) -> Iterator[dict]:
    """The re-timings' noise events, file by file."""
    for path in events:
        for event in read_events(path):
            if event.get("event") == "noise" and isinstance(event.get("noise"), int | float):
                yield event


def latest_suite_noise(noise: Iterable[dict]) -> dict | None:
    """The latest of `noise_events` from a whole suite's re-timing: a focused re-timing's noise
    is scaled to the share of specs it timed, right for its own gain only."""
    latest: dict | None = None
    for event in noise:
        if event.get("share", 1.0) == 1.0 and (
            latest is None or str(event.get("time")) >= str(latest.get("time"))
        ):
            latest = event
    return latest
