"""The session's SQLite store: candidates, evaluations, beam, promotions, consumed steering.

WAL mode lets the TUI and the CLI read while agents write; every write is one transaction, so a
process killed at any instant leaves either the whole row or none of it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.proposal import OutcomeSummary, ParentCandidate

SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    parent_id TEXT,
    agent TEXT NOT NULL,
    role TEXT NOT NULL,
    family TEXT NOT NULL,
    hypothesis TEXT NOT NULL,
    params TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    agent TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    stage TEXT NOT NULL,
    verdict TEXT NOT NULL,
    geomean_ns REAL,
    spec_means TEXT NOT NULL,
    reason TEXT NOT NULL,
    report TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS iterations (
    agent TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    candidate_id TEXT,
    outcome TEXT NOT NULL,
    decision TEXT NOT NULL,
    hypothesis TEXT NOT NULL,
    reason TEXT NOT NULL,
    geomean_ns REAL,
    usage TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (agent, iteration)
);
CREATE TABLE IF NOT EXISTS beam (
    role TEXT PRIMARY KEY,
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    geomean_ns REAL,
    protected_until REAL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS promotions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    commit_sha TEXT,
    geomean_ns REAL,
    previous_geomean_ns REAL,
    noise TEXT NOT NULL,
    by TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS steering (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    consumed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS side_questions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS profiles (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    agent TEXT NOT NULL,
    spec_index INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    summary TEXT NOT NULL,
    seconds REAL NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS evaluations_by_candidate ON evaluations(candidate_id);
"""


@dataclass(frozen=True)
class CandidateRow:
    """A stored candidate and its best full evaluation, if any."""

    id: str
    hash: str
    source: str
    parent_id: str | None
    agent: str
    role: str
    family: str
    hypothesis: str
    params: dict | None
    created_at: float
    verdict: str | None = None
    geomean_ns: float | None = None
    spec_means_ns: dict[int, float] | None = None

    def as_parent(self) -> ParentCandidate:
        """The view of this candidate a proposer gets."""
        return ParentCandidate(
            candidate_id=self.id,
            source=self.source,
            hypothesis=self.hypothesis,
            family=self.family,
            geomean_ns=self.geomean_ns,
            spec_means_ns=self.spec_means_ns or {},
            params=self.params,
        )


class Store:
    """One connection per process; short transactions; readers never block writers (WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def add_candidate(self, row: CandidateRow) -> bool:
        """Insert a candidate; False if one with the same source hash was stored first."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    row.id,
                    row.hash,
                    row.source,
                    row.parent_id,
                    row.agent,
                    row.role,
                    row.family,
                    row.hypothesis,
                    json.dumps(row.params) if row.params is not None else None,
                    row.created_at,
                ),
            )
            return cursor.rowcount == 1

    def candidate_by_hash(self, source_hash: str) -> CandidateRow | None:
        row = self._db.execute(
            "SELECT id FROM candidates WHERE hash = ?", (source_hash,)
        ).fetchone()
        return self.candidate(row["id"]) if row else None

    def candidate(self, candidate_id: str) -> CandidateRow | None:
        row = self._db.execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
        if row is None:
            return None
        best = self._db.execute(
            "SELECT verdict, geomean_ns, spec_means FROM evaluations WHERE candidate_id = ? "
            "AND stage = 'full' ORDER BY (verdict = 'pass') DESC, geomean_ns ASC LIMIT 1",
            (candidate_id,),
        ).fetchone()
        return _candidate(row, best)

    def candidates(self) -> list[CandidateRow]:
        ids = [r["id"] for r in self._db.execute("SELECT id FROM candidates ORDER BY created_at")]
        return [c for c in (self.candidate(i) for i in ids) if c is not None]

    def add_evaluation(
        self,
        candidate_id: str,
        agent: str,
        iteration: int,
        stage: str,
        report: dict,
        spec_means_ns: dict[int, float],
    ) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO evaluations (candidate_id, agent, iteration, stage, verdict, "
                "geomean_ns, spec_means, reason, report, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    candidate_id,
                    agent,
                    iteration,
                    stage,
                    report["verdict"],
                    report.get("geomean_ns"),
                    json.dumps({str(k): v for k, v in spec_means_ns.items()}),
                    report.get("reason", ""),
                    json.dumps(report),
                    time.time(),
                ),
            )
            return int(cursor.lastrowid or 0)

    def evaluations(self, candidate_id: str | None = None) -> list[sqlite3.Row]:
        if candidate_id is None:
            return list(self._db.execute("SELECT * FROM evaluations ORDER BY id"))
        query = "SELECT * FROM evaluations WHERE candidate_id = ? ORDER BY id"
        return list(self._db.execute(query, (candidate_id,)))

    def record_iteration(
        self,
        agent: str,
        iteration: int,
        candidate_id: str | None,
        outcome: str,
        decision: str,
        hypothesis: str,
        reason: str,
        geomean_ns: float | None,
        usage: dict,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO iterations VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    agent,
                    iteration,
                    candidate_id,
                    outcome,
                    decision,
                    hypothesis,
                    reason,
                    geomean_ns,
                    json.dumps(usage),
                    time.time(),
                ),
            )

    def outcomes(self, agent: str, limit: int | None = None) -> tuple[OutcomeSummary, ...]:
        """The agent's recent iterations, oldest first, as proposers and side questions see them."""
        rows = self.iterations(agent, limit=limit)
        return tuple(
            OutcomeSummary(
                iteration=row["iteration"],
                candidate_id=row["candidate_id"],
                hypothesis=row["hypothesis"],
                verdict=row["outcome"],
                geomean_ns=row["geomean_ns"],
                reason=(row["reason"] or "")[:300],
            )
            for row in reversed(rows)
        )

    def last_iteration(self, agent: str) -> int:
        row = self._db.execute(
            "SELECT MAX(iteration) AS last FROM iterations WHERE agent = ?", (agent,)
        ).fetchone()
        return int(row["last"]) if row and row["last"] is not None else 0

    def iterations(self, agent: str | None = None, limit: int | None = None) -> list[sqlite3.Row]:
        query = "SELECT * FROM iterations"
        params: tuple = ()
        if agent is not None:
            query += " WHERE agent = ?"
            params = (agent,)
        query += " ORDER BY created_at DESC"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        return list(self._db.execute(query, params))

    def beam(self) -> dict[str, sqlite3.Row]:
        return {row["role"]: row for row in self._db.execute("SELECT * FROM beam")}

    def set_beam(
        self, role: str, candidate_id: str, geomean_ns: float | None, protected_until: float | None
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO beam VALUES (?,?,?,?,?) ON CONFLICT(role) DO UPDATE SET "
                "candidate_id=excluded.candidate_id, geomean_ns=excluded.geomean_ns, "
                "protected_until=excluded.protected_until, updated_at=excluded.updated_at",
                (role, candidate_id, geomean_ns, protected_until, time.time()),
            )

    def add_promotion(
        self,
        candidate_id: str,
        commit_sha: str | None,
        geomean_ns: float | None,
        previous_geomean_ns: float | None,
        noise: dict,
        by: str,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO promotions (candidate_id, commit_sha, geomean_ns, "
                "previous_geomean_ns, noise, by, created_at) VALUES (?,?,?,?,?,?,?)",
                (
                    candidate_id,
                    commit_sha,
                    geomean_ns,
                    previous_geomean_ns,
                    json.dumps(noise),
                    by,
                    time.time(),
                ),
            )

    def promotions(self) -> list[sqlite3.Row]:
        return list(self._db.execute("SELECT * FROM promotions ORDER BY id"))

    def incumbent_id(self) -> str | None:
        row = self._db.execute(
            "SELECT candidate_id FROM promotions ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return row["candidate_id"] if row else None

    def consume_steering(
        self, message_id: str, agent: str, kind: str, text: str, iteration: int
    ) -> bool:
        """Record a steering message as consumed; False if it already was (exactly once)."""
        with self.transaction() as db:
            exists = db.execute("SELECT 1 FROM steering WHERE id = ?", (message_id,)).fetchone()
            if exists:
                return False
            db.execute(
                "INSERT INTO steering VALUES (?,?,?,?,?,?)",
                (message_id, agent, kind, text, iteration, time.time()),
            )
            return True

    def steering(self, agent: str | None = None) -> list[sqlite3.Row]:
        if agent is None:
            return list(self._db.execute("SELECT * FROM steering ORDER BY consumed_at"))
        return list(
            self._db.execute(
                "SELECT * FROM steering WHERE agent = ? ORDER BY consumed_at", (agent,)
            )
        )

    def add_profile(
        self,
        candidate_id: str,
        agent: str,
        spec_index: int,
        ok: bool,
        summary: dict,
        seconds: float,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO profiles (candidate_id, agent, spec_index, ok, summary, seconds, "
                "created_at) VALUES (?,?,?,?,?,?,?)",
                (
                    candidate_id,
                    agent,
                    spec_index,
                    int(ok),
                    json.dumps(summary),
                    seconds,
                    time.time(),
                ),
            )

    def profiles(self, candidate_id: str | None = None) -> list[sqlite3.Row]:
        if candidate_id is None:
            return list(self._db.execute("SELECT * FROM profiles ORDER BY id"))
        query = "SELECT * FROM profiles WHERE candidate_id = ? ORDER BY id"
        return list(self._db.execute(query, (candidate_id,)))

    def add_side_question(self, agent: str, question: str, answer: str, source: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO side_questions (agent, question, answer, source, created_at) "
                "VALUES (?,?,?,?,?)",
                (agent, question, answer, source, time.time()),
            )


def _candidate(row: sqlite3.Row, best: sqlite3.Row | None) -> CandidateRow:
    means = None
    if best is not None:
        means = {int(k): v for k, v in json.loads(best["spec_means"]).items()}
    return CandidateRow(
        id=row["id"],
        hash=row["hash"],
        source=row["source"],
        parent_id=row["parent_id"],
        agent=row["agent"],
        role=row["role"],
        family=row["family"],
        hypothesis=row["hypothesis"],
        params=json.loads(row["params"]) if row["params"] else None,
        created_at=row["created_at"],
        verdict=best["verdict"] if best else None,
        geomean_ns=best["geomean_ns"] if best else None,
        spec_means_ns=means,
    )
