"""Watchers: file changes in the run directory and timed samples of the fleet, turned into facts.

Two threads feed the app, and neither touches a widget: they post facts (`messages.py`, plain
dataclasses) to the screen's mailbox, the reading and parsing done on their own thread. The run
watcher sleeps until watchdog reports a change, then reads only what changed, at most once per
`interval_s` (a burst of log lines arrives as one fact). The fleet sampler wakes every few
seconds, or sooner when a heartbeat changes, for what no file announces: a process that died,
CPU and memory, the GPUs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from qrsup.agents.session import RunPaths, SessionError
from qrsup.supervisor.board import BoardReader
from qrsup.supervisor.cluster_stats import judge_slots, session_cluster_watch
from qrsup.supervisor.event_tail import EventTail, read_complete_lines
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.gpu_stats import GpuStats
from qrsup.supervisor.leases import GpuLeases
from qrsup.supervisor.log_lines import prepare
from qrsup.supervisor.messages import (
    AdvisorIdeas,
    AgentCrashed,
    AgentsSampled,
    BoardRead,
    GoalMet,
    LogRead,
    NewBest,
    Post,
    ProfileRead,
)
from qrsup.supervisor.process_stats import ProcessStats
from watchdog.events import (
    DirCreatedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

PROFILE_BYTES = 8192
LOG_TAIL_BYTES = 256 * 1024
_ARRIVALS: list[type[FileSystemEvent]] = [FileMovedEvent, FileCreatedEvent]


def read_head(path: Path, max_bytes: int) -> str | None:
    """The first `max_bytes` of a text file, or None when it does not exist."""
    try:
        with path.open("rb") as handle:
            return handle.read(max_bytes).decode(errors="replace")
    except OSError:
        return None


class LogFollower:
    """Reads one growing log from an offset; never holds more than `max_bytes` of it."""

    def __init__(self, agent: str, path: Path, max_bytes: int = LOG_TAIL_BYTES) -> None:
        self.agent = agent
        self.path = path
        self.max_bytes = max_bytes
        self.offset = 0

    def open_tail(self) -> list[str]:
        """The complete lines of the file's last `max_bytes`; following continues from there."""
        size = self._size()
        start = self.offset = max(0, size - self.max_bytes)
        lines = self._read(size)
        return lines[1:] if start > 0 else lines  # the first line was cut

    def grew(self) -> bool:
        """Whether the file changed size since the last read (shrinking counts)."""
        return self._size() != self.offset

    def read_new(self) -> tuple[list[str], bool]:
        """Lines written since the last read; True when the middle was skipped (or truncated)."""
        size = self._size()
        if size < self.offset or size - self.offset > self.max_bytes:
            return self.open_tail(), True
        return self._read(size), False

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def _read(self, size: int) -> list[str]:
        lines, self.offset = read_complete_lines(self.path, self.offset, size - self.offset)
        return [line.decode(errors="replace") for line in lines]


class _Changes(FileSystemEventHandler):
    """Runs on watchdog's thread: only notes which path changed and wakes the reader."""

    def __init__(self, note: Callable[[Path], None]) -> None:
        self._note = note

    def on_any_event(self, event: FileSystemEvent) -> None:
        self._note(Path(str(getattr(event, "dest_path", "") or event.src_path)))


class RunWatcher:
    """Follows one agent's log and profile, every agent's events, and the store.

    Watches are narrow, since every event costs Python time on watchdog's threads: an agent's
    directory reports only files arriving (its heartbeat is renamed into place every two seconds,
    and after every record), and only the followed agent's `work/` reports writes. Events are
    read when the heartbeat arrives. The followed log is not watched but looked at every
    `interval_s` (one stat): at a hundred lines a second its writes cost watchdog's reader 6% of
    a core, for lines read four times a second anyway.
    """

    def __init__(
        self,
        paths: RunPaths,
        post: Post,
        spec_labels: tuple[str, ...],
        on_heartbeat: Callable[[], None],
        interval_s: float = 0.25,
    ) -> None:
        self.paths = paths
        self._post = post
        self._on_heartbeat = on_heartbeat
        self._interval_s = interval_s
        self._board = BoardReader(paths.store, spec_labels)
        self._tails: dict[str, EventTail] = {}
        self._followed: LogFollower | None = None
        self._watches: dict[Path, ObservedWatch] = {}
        self._dirty: set[tuple[str, str]] = {("board", "")}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._stop = threading.Event()
        self._changes = _Changes(self._note)
        self._observer = Observer()
        self._thread = threading.Thread(target=self._run, name="run-watcher", daemon=True)

    def start(self) -> None:
        agents = self.paths.root / "agents"
        agents.mkdir(parents=True, exist_ok=True)
        self._watch(self.paths.root, [FileModifiedEvent, *_ARRIVALS])  # the store's WAL, config
        self._watch(agents, [DirCreatedEvent])  # a new agent
        for directory in agents.iterdir():
            self._tails[directory.name] = EventTail(self.paths.events(directory.name), True)
            self._watch_agent(directory.name)
        self._observer.start()
        self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._mark("stop", "", urgent=True)
        self._observer.stop()
        self._observer.join()
        self._thread.join()

    def follow(self, agent: str) -> None:
        """Show this agent's log and profile from now on."""
        self._mark("follow", agent, urgent=True)

    def refresh_board(self) -> None:
        self._mark("board", "", urgent=True)

    def _mark(self, kind: str, agent: str, urgent: bool = False) -> None:
        """Note work for the reader; the screen's own requests skip the wait between reads."""
        with self._lock:
            self._dirty.add((kind, agent))
        self._wake.set()
        if urgent:
            self._urgent.set()

    def _watch(self, path: Path, kinds: list[type[FileSystemEvent]], recursive: bool = False):
        if path in self._watches or not path.exists():
            return
        try:
            watch = self._observer.schedule(
                self._changes, str(path), recursive=recursive, event_filter=kinds
            )
        except OSError:  # gone between the check and the watch; its creation is noted instead
            return
        self._watches[path] = watch

    def _unwatch(self, path: Path) -> None:
        watch = self._watches.pop(path, None)
        if watch is not None:
            self._observer.unschedule(watch)

    def _watch_agent(self, agent: str) -> None:
        self._watch(self.paths.agent_dir(agent), _ARRIVALS)

    def _note(self, path: Path) -> None:
        if path.parent == self.paths.root:
            if path.name == f"{self.paths.store.name}-wal":  # every commit appends to it
                self._mark("board", "")
            elif path.name == self.paths.config.name:
                self._on_heartbeat()
            return
        try:
            agent, *rest = path.relative_to(self.paths.root / "agents").parts
        except ValueError:
            return
        if not rest:
            self._mark("agent", agent)
        elif rest == ["heartbeat"]:
            self._mark("events", agent)  # an agent beats after each record it appends
            self._on_heartbeat()
        elif path == self.paths.profile(agent):
            self._mark("profile", agent)

    def _run(self) -> None:
        while True:
            if self._followed is None:  # else its log is looked at every interval_s
                self._wake.wait()
            if self._stop.is_set():
                break
            self._wake.clear()
            self._urgent.clear()
            with self._lock:
                dirty, self._dirty = self._dirty, set()
            if self._followed is not None and self._followed.grew():
                dirty.add(("log", self._followed.agent))
            for kind, agent in sorted(dirty):
                self._read(kind, agent)
            self._urgent.wait(self._interval_s)  # changes meanwhile are read together
        self._board.close()

    def _read(self, kind: str, agent: str) -> None:
        followed = self._followed.agent if self._followed else None
        if kind == "board":
            self._read_board()
        elif kind == "agent":
            self._watch_agent(agent)
        elif kind == "events":
            self._read_events(agent)
        elif kind == "follow":
            self._follow(agent)
        elif kind == "log" and agent == followed and self._followed is not None:
            lines, skipped = self._followed.read_new()
            if lines or skipped:
                self._post(LogRead(agent, prepare(lines), fresh=skipped))
        elif kind == "profile" and agent == followed:
            self._read_profile(agent)

    def _follow(self, agent: str) -> None:
        if self._followed is not None:
            self._unwatch(self.paths.work(self._followed.agent))
        self._watch(self.paths.work(agent), [FileModifiedEvent, *_ARRIVALS], recursive=True)
        self._followed = LogFollower(agent, self.paths.agent_log(agent))
        self._post(LogRead(agent, prepare(self._followed.open_tail()), fresh=True))
        self._read_profile(agent)

    def _read_board(self) -> None:
        previous = self._board.last
        try:
            board = self._board.read()
        except SessionError:
            return
        if board == previous:
            return
        self._post(BoardRead(board))
        best, before = board.best(), previous.best() if previous else None
        if previous is not None and best is not None and (before is None or best.id != before.id):
            self._post(NewBest(best, before.geomean_ns if before else None))

    def _read_events(self, agent: str) -> None:
        tail = self._tails.setdefault(agent, EventTail(self.paths.events(agent)))
        for event in tail.read_new():
            kind = event.get("event")
            if kind == "goal_met":
                self._post(GoalMet(agent, str(event.get("goal")), str(event.get("candidate_id"))))
            elif kind == "advisor":
                ideas = tuple(str(i) for i in event.get("ideas") or [])
                self._post(AdvisorIdeas(agent, str(event.get("source", "")), ideas))

    def _read_profile(self, agent: str) -> None:
        self._post(ProfileRead(agent, read_head(self.paths.profile(agent), PROFILE_BYTES)))


class FleetSampler:
    """Samples statuses, process trees and GPUs every `interval_s`, or sooner when poked."""

    def __init__(
        self, paths: RunPaths, post: Post, interval_s: float = 2.0, min_gap_s: float = 1.0
    ) -> None:
        self.paths = paths
        self._post = post
        self._interval_s = interval_s
        self._min_gap_s = min_gap_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def poke(self) -> None:
        """Sample soon: something changed that the person should see now."""
        self._wake.set()

    def _run(self) -> None:
        fleet, processes, gpus = Fleet(self.paths), ProcessStats(), GpuStats()
        leases = GpuLeases(self.paths.root, [])  # read only: who holds which GPU
        cluster = session_cluster_watch(self.paths)  # a session judged on a Ray cluster
        states: dict[str, str] = {}
        try:
            while not self._stop.is_set():
                self._wake.clear()
                try:
                    statuses = tuple(fleet.statuses())
                except SessionError:
                    statuses = ()
                loads = processes.sample({s.name: s.pid for s in statuses})
                view = None
                if cluster is not None:
                    alive = [s.name for s in statuses if s.alive]  # a killed agent's slot is stale
                    view = cluster.view(judge_slots(self.paths, alive))
                sample = AgentsSampled(statuses, loads, gpus.sample(), leases.holders(), view)
                self._post(sample)
                for status in statuses:
                    was = states.get(status.name)
                    ended = status.state in ("crashed", "died")
                    if ended and was is not None and was not in ("crashed", "died"):
                        self._post(AgentCrashed(status.name, status.detail))
                    states[status.name] = status.state
                self._wake.wait(self._interval_s)
                self._stop.wait(self._min_gap_s)
        finally:
            gpus.close()
            if cluster is not None:
                cluster.close()
