"""The session's SQLite store: candidates, evaluations, iterations, beam, promotions, steering,
profiles and side questions. It takes and returns only the typed records of qrsup.kernels.schema.

WAL mode lets the TUI and the CLI read while agents write; every write is one transaction, so a
process killed at any instant leaves either the whole row or none of it. Readers (the TUI, the
CLI's status) open it read-only and never take the writers' lock.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from qrsup.agents.proposal import OutcomeSummary
from qrsup.kernels.schema import (
    BeamSlot,
    Candidate,
    Comparison,
    Decision,
    Evaluation,
    Inherited,
    Iteration,
    ProfileRecord,
    Promotion,
    SideQuestionRecord,
    SteeringRecord,
    Verdict,
    spec_means_from_json,
    spec_means_to_json,
)

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
    created_at REAL NOT NULL,
    inherited TEXT
);
CREATE TABLE IF NOT EXISTS iterations (
    agent TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    candidate_id TEXT,
    verdict TEXT NOT NULL,
    decision TEXT NOT NULL,
    hypothesis TEXT NOT NULL,
    reason TEXT NOT NULL,
    geomean_ns REAL,
    usage TEXT NOT NULL,
    created_at REAL NOT NULL,
    parent_id TEXT,
    role TEXT NOT NULL DEFAULT '',
    goal TEXT NOT NULL DEFAULT '',
    spec_means TEXT NOT NULL DEFAULT '{}',
    comparison TEXT,
    evaluated INTEGER NOT NULL DEFAULT 0,
    compile_wait_s REAL,
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
    created_at REAL NOT NULL,
    usage TEXT NOT NULL DEFAULT '{}'
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
# Stores written before the typed layer: columns renamed or added since (existing rows keep
# the defaults).
MIGRATIONS = {
    "iterations": (
        ("RENAME", "outcome", "verdict"),
        ("ADD", "parent_id", "TEXT"),
        ("ADD", "role", "TEXT NOT NULL DEFAULT ''"),
        ("ADD", "goal", "TEXT NOT NULL DEFAULT ''"),
        ("ADD", "spec_means", "TEXT NOT NULL DEFAULT '{}'"),
        ("ADD", "comparison", "TEXT"),
        ("ADD", "evaluated", "INTEGER NOT NULL DEFAULT 0"),
        ("ADD", "compile_wait_s", "REAL"),
    ),
    "side_questions": (("ADD", "usage", "TEXT NOT NULL DEFAULT '{}'"),),
    "evaluations": (("ADD", "inherited", "TEXT"),),
}


WAL_SWITCH_TIMEOUT_S = 30.0


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the store in WAL mode. On a fresh store, connections opening it at once (two agents
    of a new session) race to switch its journal, and SQLite answers "database is locked" at
    once instead of waiting out its busy timeout: try again until the switch is made."""
    deadline = time.monotonic() + WAL_SWITCH_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class StoreError(RuntimeError):
    """The store cannot be opened as asked (a reader before any agent created it, say)."""


class Store:
    """One connection per process; short transactions; readers never block writers (WAL)."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        if read_only:
            if not path.exists():
                raise StoreError(f"no store at {path} yet")
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        if read_only:
            tables = {r["name"] for r in self._db.execute("SELECT name FROM sqlite_master")}
            if "iterations" not in tables:
                self._db.close()
                raise StoreError(f"the store at {path} is not set up yet")
            return
        _use_wal(self._db)
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            _migrate(self._db)

    @classmethod
    def reader(cls, path: Path) -> Store:
        """A read-only handle: for the TUI and the CLI, which only look."""
        return cls(path, read_only=True)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def add_candidate(self, candidate: Candidate) -> bool:
        """Insert a candidate; False if one with the same source hash was stored first."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    candidate.id,
                    candidate.hash,
                    candidate.source,
                    candidate.parent_id,
                    candidate.agent,
                    candidate.role,
                    candidate.family,
                    candidate.hypothesis,
                    json.dumps(candidate.params) if candidate.params is not None else None,
                    candidate.created_at,
                ),
            )
            return cursor.rowcount == 1

    def candidate_by_hash(self, source_hash: str) -> Candidate | None:
        row = self._db.execute(
            "SELECT id FROM candidates WHERE hash = ?", (source_hash,)
        ).fetchone()
        return self.candidate(row["id"]) if row else None

    def candidate(self, candidate_id: str, device: str | None = None) -> Candidate | None:
        """The candidate with its best full-stage figures; with `device`, its best there alone
        (none if it was never fully judged there). Relaunched on another machine, a workspace
        would otherwise judge candidates timed there against figures from the first."""
        row = self._db.execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
        if row is None:
            return None
        query = (
            "SELECT verdict, geomean_ns, spec_means FROM evaluations WHERE candidate_id = ? "
            "AND stage = 'full'"
        )
        params: tuple[str, ...] = (candidate_id,)
        if device is not None:
            query += " AND json_extract(report, '$.device.name') = ?"
            params += (device,)
        order = " ORDER BY (verdict = 'pass') DESC, geomean_ns ASC LIMIT 1"
        best = self._db.execute(query + order, params).fetchone()
        return _candidate(row, best)

    def candidates(self, agent: str | None = None) -> list[Candidate]:
        query, params = "SELECT id FROM candidates", ()
        if agent is not None:
            query, params = query + " WHERE agent = ?", (agent,)
        ids = [r["id"] for r in self._db.execute(query + " ORDER BY created_at", params)]
        return [c for c in (self.candidate(i) for i in ids) if c is not None]

    def unrecorded_candidates(self, agent: str) -> list[Candidate]:
        """The agent's candidates that no iteration records: the one in flight, or one whose
        agent died before recording it."""
        rows = self._db.execute(
            "SELECT id FROM candidates WHERE agent = ? AND id NOT IN "
            "(SELECT candidate_id FROM iterations WHERE candidate_id IS NOT NULL) "
            "ORDER BY created_at",
            (agent,),
        )
        return [c for c in (self.candidate(r["id"]) for r in list(rows)) if c is not None]

    def add_evaluation(
        self,
        candidate_id: str,
        agent: str,
        iteration: int,
        stage: str,
        report: dict,
        spec_means_ns: dict[int, float],
        inherited: Inherited | None = None,
        geomean_ns: float | None = None,
    ) -> int:
        """`report` as the judge wrote it; a focused full stage also names the specs whose
        figures it `inherited` and its `geomean_ns` over all of them."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO evaluations (candidate_id, agent, iteration, stage, verdict, "
                "geomean_ns, spec_means, reason, report, created_at, inherited) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    candidate_id,
                    agent,
                    iteration,
                    stage,
                    report["verdict"],
                    geomean_ns if inherited else report.get("geomean_ns"),
                    spec_means_to_json(spec_means_ns),
                    report.get("reason", ""),
                    json.dumps(report),
                    time.time(),
                    json.dumps(inherited.to_dict()) if inherited else None,
                ),
            )
            return int(cursor.lastrowid or 0)

    def evaluations(self, candidate_id: str | None = None) -> list[Evaluation]:
        if candidate_id is None:
            rows = self._db.execute("SELECT * FROM evaluations ORDER BY id")
        else:
            query = "SELECT * FROM evaluations WHERE candidate_id = ? ORDER BY id"
            rows = self._db.execute(query, (candidate_id,))
        return [_evaluation(r) for r in rows]

    def quick_geomean(self, candidate_id: str) -> float | None:
        """The candidate's best passing quick-stage geomean: what a candidate that never earned
        the full stage is known by."""
        row = self._db.execute(
            "SELECT MIN(geomean_ns) AS ns FROM evaluations WHERE candidate_id = ? "
            "AND stage = 'quick' AND verdict = 'pass'",
            (candidate_id,),
        ).fetchone()
        return row["ns"]

    def evaluations_since(self, agent: str, evaluation_id: int) -> int:
        """How many evaluations the agent stored after the one with this id."""
        row = self._db.execute(
            "SELECT COUNT(*) AS n FROM evaluations WHERE agent = ? AND id > ?",
            (agent, evaluation_id),
        ).fetchone()
        return int(row["n"])

    def record_iteration(self, record: Iteration) -> bool:
        """Store an iteration once; False if that agent's iteration number is already stored
        (the supervisor and the restarted agent may both record one interrupted iteration)."""
        comparison = json.dumps(asdict(record.comparison)) if record.comparison else None
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO iterations (agent, iteration, candidate_id, verdict, "
                "decision, hypothesis, reason, geomean_ns, usage, created_at, parent_id, role, "
                "goal, spec_means, comparison, evaluated, compile_wait_s) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.agent,
                    record.iteration,
                    record.candidate_id,
                    str(record.verdict),
                    str(record.decision),
                    record.hypothesis,
                    record.reason,
                    record.geomean_ns,
                    json.dumps(record.usage),
                    record.created_at or time.time(),
                    record.parent_id,
                    record.role,
                    record.goal,
                    spec_means_to_json(record.spec_means_ns),
                    comparison,
                    int(record.evaluated),
                    record.compile_wait_s,
                ),
            )
            return cursor.rowcount == 1

    def outcomes(self, agent: str, limit: int | None = None) -> tuple[OutcomeSummary, ...]:
        """The agent's recent iterations, oldest first, as proposers and side questions see them."""
        return tuple(
            OutcomeSummary(
                iteration=record.iteration,
                candidate_id=record.candidate_id,
                hypothesis=record.hypothesis,
                verdict=str(record.verdict),
                geomean_ns=record.geomean_ns,
                reason=record.reason[:300],
            )
            for record in reversed(self.iterations(agent, limit=limit))
        )

    def last_iteration(self, agent: str) -> int:
        row = self._db.execute(
            "SELECT MAX(iteration) AS last FROM iterations WHERE agent = ?", (agent,)
        ).fetchone()
        return int(row["last"]) if row and row["last"] is not None else 0

    def iterations(
        self, agent: str | None = None, limit: int | None = None, since: float | None = None
    ) -> list[Iteration]:
        """Newest first; `since` keeps those recorded after that time."""
        clauses, params = [], []
        if agent is not None:
            clauses.append("agent = ?")
            params.append(agent)
        if since is not None:
            clauses.append("created_at > ?")
            params.append(since)
        query = "SELECT * FROM iterations"
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        query += " ORDER BY created_at DESC"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        return [_iteration(r) for r in self._db.execute(query, params)]

    def beam(self) -> dict[str, BeamSlot]:
        return {
            row["role"]: BeamSlot(
                role=row["role"],
                candidate_id=row["candidate_id"],
                geomean_ns=row["geomean_ns"],
                protected_until=int(row["protected_until"] or 0),
                updated_at=row["updated_at"],
            )
            for row in self._db.execute("SELECT * FROM beam")
        }

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

    def promotions(self) -> list[Promotion]:
        return [
            Promotion(
                id=row["id"],
                candidate_id=row["candidate_id"],
                commit_sha=row["commit_sha"],
                geomean_ns=row["geomean_ns"],
                previous_geomean_ns=row["previous_geomean_ns"],
                noise=json.loads(row["noise"]),
                by=row["by"],
                created_at=row["created_at"],
            )
            for row in self._db.execute("SELECT * FROM promotions ORDER BY id")
        ]

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

    def steering(self, agent: str | None = None) -> list[SteeringRecord]:
        query, params = "SELECT * FROM steering", ()
        if agent is not None:
            query, params = query + " WHERE agent = ?", (agent,)
        rows = self._db.execute(query + " ORDER BY consumed_at", params)
        return [SteeringRecord(**dict(r)) for r in rows]

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

    def profiles(self, candidate_id: str | None = None) -> list[ProfileRecord]:
        query, params = "SELECT * FROM profiles", ()
        if candidate_id is not None:
            query, params = query + " WHERE candidate_id = ?", (candidate_id,)
        return [
            ProfileRecord(**{**dict(r), "ok": bool(r["ok"]), "summary": json.loads(r["summary"])})
            for r in self._db.execute(query + " ORDER BY id", params)
        ]

    def add_side_question(
        self, agent: str, question: str, answer: str, source: str, usage: dict[str, float]
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO side_questions (agent, question, answer, source, created_at, usage) "
                "VALUES (?,?,?,?,?,?)",
                (agent, question, answer, source, time.time(), json.dumps(usage)),
            )

    def side_questions(self, agent: str | None = None) -> list[SideQuestionRecord]:
        query, params = "SELECT * FROM side_questions", ()
        if agent is not None:
            query, params = query + " WHERE agent = ?", (agent,)
        return [
            SideQuestionRecord(**{**dict(r), "usage": json.loads(r["usage"])})
            for r in self._db.execute(query + " ORDER BY id", params)
        ]


def _migrate(db: sqlite3.Connection) -> None:
    for table, steps in MIGRATIONS.items():
        columns = {r["name"] for r in db.execute(f"PRAGMA table_info({table})")}
        for action, name, spec in steps:
            if action == "RENAME" and name in columns and spec not in columns:
                db.execute(f"ALTER TABLE {table} RENAME COLUMN {name} TO {spec}")
            elif action == "ADD" and name not in columns:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {spec}")


def _candidate(row: sqlite3.Row, best: sqlite3.Row | None) -> Candidate:
    return Candidate(
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
        verdict=Verdict(best["verdict"]) if best else None,
        geomean_ns=best["geomean_ns"] if best else None,
        spec_means_ns=spec_means_from_json(best["spec_means"]) if best else None,
    )


def _evaluation(row: sqlite3.Row) -> Evaluation:
    return Evaluation(
        id=row["id"],
        candidate_id=row["candidate_id"],
        agent=row["agent"],
        iteration=row["iteration"],
        stage=row["stage"],
        verdict=Verdict(row["verdict"]),
        geomean_ns=row["geomean_ns"],
        spec_means_ns=spec_means_from_json(row["spec_means"]),
        reason=row["reason"],
        report=json.loads(row["report"]),
        created_at=row["created_at"],
        inherited=Inherited.from_dict(json.loads(row["inherited"])) if row["inherited"] else None,
    )


def _iteration(row: sqlite3.Row) -> Iteration:
    comparison = json.loads(row["comparison"]) if row["comparison"] else None
    return Iteration(
        agent=row["agent"],
        iteration=row["iteration"],
        verdict=Verdict(row["verdict"]),
        decision=Decision(row["decision"]),
        candidate_id=row["candidate_id"],
        parent_id=row["parent_id"],
        role=row["role"],
        hypothesis=row["hypothesis"],
        reason=row["reason"],
        goal=row["goal"],
        geomean_ns=row["geomean_ns"],
        spec_means_ns=spec_means_from_json(row["spec_means"]),
        usage=json.loads(row["usage"]),
        comparison=Comparison(**comparison) if comparison else None,
        evaluated=bool(row["evaluated"]),
        compile_wait_s=row["compile_wait_s"],
        created_at=row["created_at"],
    )
