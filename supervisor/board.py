"""The leaderboard's data: candidates, beam and incumbent read incrementally from the store."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.store import Store, StoreError
from qrsup.kernels.schema import Candidate, Verdict

RECENT_ITERATIONS = 64


@dataclass(frozen=True)
class LeaderEntry:
    """One candidate as the leaderboard shows it: full-suite figures, or its iteration's verdict."""

    id: str
    agent: str
    role: str
    family: str
    hypothesis: str
    parent_id: str | None
    verdict: str
    decision: str
    geomean_ns: float | None
    spec_means_ns: dict[int, float]
    created_at: float
    quick_geomean_ns: float | None = None  # shown, marked quick, while no full figure exists


@dataclass(frozen=True)
class Board:
    """The store's candidates, beam slots and incumbent at one moment."""

    entries: tuple[LeaderEntry, ...] = ()
    beam: tuple[tuple[str, str, float | None], ...] = ()
    incumbent_id: str | None = None
    incumbent_commit: str | None = None
    incumbent_geomean_ns: float | None = None
    spec_labels: tuple[str, ...] = ()

    def passing(self) -> list[LeaderEntry]:
        """Entries that passed with a geomean: the only ones a best can be."""
        return [e for e in self.entries if e.verdict == "pass" and e.geomean_ns is not None]

    def best(self) -> LeaderEntry | None:
        return min(self.passing(), key=lambda e: e.geomean_ns or 0.0, default=None)

    def best_over_time(self) -> list[float]:
        """The best passing geomean after each passing candidate, in the order they were made."""
        series: list[float] = []
        for entry in sorted(self.passing(), key=lambda e: e.created_at):
            geomean = entry.geomean_ns or 0.0
            series.append(min(geomean, series[-1]) if series else geomean)
        return series


def shown_entries(board: Board, limit: int) -> list[LeaderEntry]:
    """At most `limit` entries for a table that slows and grows with every row: the beam's and
    the incumbent's, the fastest passing half, then the newest. The rest stay in the store."""
    if len(board.entries) <= limit:
        return list(board.entries)
    by_id = {e.id: e for e in board.entries}
    pinned = [board.incumbent_id, *(candidate_id for _, candidate_id, _ in board.beam)]
    chosen = {i: by_id[i] for i in pinned if i in by_id}
    fastest = sorted(board.passing(), key=lambda e: e.geomean_ns or 0.0)
    newest = sorted(board.entries, key=lambda e: e.created_at, reverse=True)
    for entry in fastest[: limit // 2]:
        chosen.setdefault(entry.id, entry)
    for entry in newest:
        if len(chosen) >= limit:
            break
        chosen.setdefault(entry.id, entry)
    return list(chosen.values())


class BoardReader:
    """Reads the store incrementally: only candidates of iterations recorded since the last read."""

    def __init__(self, store_path: Path, spec_labels: tuple[str, ...]) -> None:
        self.store_path = store_path
        self.spec_labels = spec_labels
        self.last: Board | None = None
        self._store: Store | None = None
        self._entries: dict[str, LeaderEntry] = {}
        self._since = 0.0

    def read(self) -> Board:
        """Open the store read-only on first use (SQLite connections belong to the thread that
        opened them); before any agent created it, the board is empty."""
        if self._store is None:
            try:
                self._store = Store.reader(self.store_path)
            except StoreError:  # no agent has created it yet
                return Board(spec_labels=self.spec_labels)
        store = self._store
        since = self._since or None
        fresh = store.iterations(limit=None if since is None else RECENT_ITERATIONS, since=since)
        if since is not None and len(fresh) == RECENT_ITERATIONS:
            fresh = store.iterations(since=since)
        for record in reversed(fresh):
            if record.candidate_id and record.verdict != Verdict.DUPLICATE:
                self._load(store, record.candidate_id, record.verdict, record.decision)
            self._since = max(self._since, record.created_at)
        beam = store.beam()
        promotions = store.promotions()
        incumbent = promotions[-1] if promotions else None
        held = [slot.candidate_id for slot in beam.values()]
        for candidate_id in [*held, *([incumbent.candidate_id] if incumbent else [])]:
            known = self._entries.get(candidate_id)
            if known is None or known.geomean_ns is None:  # the incumbent is evaluated after
                self._load(store, candidate_id, "", "")
        incumbent_entry = self._entries.get(incumbent.candidate_id) if incumbent else None
        self.last = Board(
            entries=tuple(self._entries.values()),
            beam=tuple((role, s.candidate_id, s.geomean_ns) for role, s in beam.items()),
            incumbent_id=incumbent.candidate_id if incumbent else None,
            incumbent_commit=incumbent.commit_sha if incumbent else None,
            incumbent_geomean_ns=(incumbent.geomean_ns if incumbent else None)
            or (incumbent_entry.geomean_ns if incumbent_entry else None),
            spec_labels=self.spec_labels,
        )
        return self.last

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def _load(self, store: Store, candidate_id: str, outcome: str, decision: str) -> None:
        row = store.candidate(candidate_id)
        if row is not None:
            quick = store.quick_geomean(candidate_id) if row.geomean_ns is None else None
            self._entries[candidate_id] = _entry(row, outcome, decision, quick)


def _entry(
    row: Candidate, outcome: str, decision: str, quick_geomean_ns: float | None = None
) -> LeaderEntry:
    """The iteration's outcome overrides a passing full stage it later failed (its re-timing)."""
    failed_later = row.verdict == "pass" and outcome not in ("", "pass")
    return LeaderEntry(
        id=row.id,
        agent=row.agent,
        role=row.role if row.parent_id else "",  # a seed: no agent made it for a beam slot
        family=row.family,
        hypothesis=row.hypothesis,
        parent_id=row.parent_id,
        verdict=outcome if failed_later else row.verdict or outcome or "pending",
        decision=decision,
        geomean_ns=row.geomean_ns,
        spec_means_ns=dict(row.spec_means_ns or {}),
        created_at=row.created_at,
        quick_geomean_ns=quick_geomean_ns,
    )


@dataclass(frozen=True)
class CandidateDiff:
    """A candidate's source as a unified diff against its parent's."""

    candidate_id: str
    parent_id: str | None
    diff: str


def read_diff(store_path: Path, candidate_id: str) -> CandidateDiff:
    """Read both sources from the store (on the caller's thread) and diff them."""
    with Store.reader(store_path) as store:
        row = store.candidate(candidate_id)
        parent = store.candidate(row.parent_id) if row and row.parent_id else None
    if row is None:
        return CandidateDiff(candidate_id, None, "")
    lines = difflib.unified_diff(
        parent.source.splitlines() if parent else [],
        row.source.splitlines(),
        fromfile=row.parent_id or "(no parent)",
        tofile=candidate_id,
        n=2,
        lineterm="",
    )
    return CandidateDiff(candidate_id, row.parent_id, "\n".join(lines))
