"""The agent's heartbeat file: what it is doing now, rewritten atomically every few seconds."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from qrsup.agents.records import replace_atomically

STATES = (
    "starting",
    "proposing",
    "evaluating",
    "waiting",  # for a Ray cluster that cannot be reached; the judge run goes ahead when it can
    "idle",
    "paused",
    "waiting",  # for quota, until the time in its detail
    "goal met",
    "crashed",
    "stopped",
    "died",  # written by whoever recorded its death (qrsup.agents.lifecycle)
)
BEAT_SECONDS = 2.0


@dataclass(frozen=True)
class Beat:
    """One heartbeat; `updated_at` tells readers how fresh it is."""

    pid: int
    state: str
    iteration: int
    updated_at: float
    candidate: str | None = None
    best_geomean_ns: float | None = None
    best_quick_geomean_ns: float | None = None  # shown only while best_geomean_ns is None
    last_verdict: str | None = None
    detail: str = ""
    goal: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def write_beat(path: Path, beat: Beat) -> None:
    replace_atomically(path, json.dumps(asdict(beat)))


def read_beat(path: Path) -> Beat | None:
    try:
        return Beat(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


class Heartbeat:
    """Keeps the file fresh from a daemon thread while the loop blocks in the judge."""

    def __init__(self, path: Path, goal: str) -> None:
        self.path = path
        self._beat = Beat(os.getpid(), "starting", 0, time.time(), goal=goal)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def start(self) -> None:
        self.update()
        self._thread.start()

    def update(self, **changes: object) -> None:
        with self._lock:
            self._beat = replace(self._beat, **changes, updated_at=time.time())
            write_beat(self.path, self._beat)

    @property
    def beat(self) -> Beat:
        return self._beat

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(BEAT_SECONDS):
            self.update()
