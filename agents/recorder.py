"""Recording an iteration: the store first (the source of truth), then events.jsonl, then log.md.

On start the recorder reconciles: any iteration in the store that a kill cut off before its event
line was written gets that line appended, so every evaluation appears in every record once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.records import (
    AgentLog,
    append_atomically,
    append_event,
    format_ms,
    log_entry,
    read_events,
)
from qrsup.agents.session import RunPaths
from qrsup.agents.store import Store


@dataclass
class IterationRecord:
    """Everything one iteration produced; becomes one store row, one event, one log entry."""

    iteration: int
    hypothesis: str = ""
    candidate_id: str | None = None
    parent_id: str | None = None
    verdict: str = "proposal"
    decision: str = "rejected"
    reason: str = ""
    geomean_ns: float | None = None
    spec_means_ns: dict[int, float] | None = None
    usage: dict[str, float] | None = None
    evaluated: bool = False


class Recorder:
    """Writes one agent's records; never rewrites any of them."""

    def __init__(
        self, paths: RunPaths, store: Store, workspace: Path, agent: str, role: str
    ) -> None:
        self.paths = paths
        self.store = store
        self.workspace = workspace
        self.agent = agent
        self.role = role
        self.log = AgentLog(paths.agent_log(agent))

    def record(self, record: IterationRecord, goal: str) -> None:
        self.store.record_iteration(
            self.agent,
            record.iteration,
            record.candidate_id,
            record.verdict,
            record.decision,
            record.hypothesis,
            record.reason,
            record.geomean_ns,
            record.usage or {},
        )
        event = {
            "event": "iteration",
            "agent": self.agent,
            "role": self.role,
            "iteration": record.iteration,
            "candidate_id": record.candidate_id,
            "parent_id": record.parent_id,
            "hypothesis": record.hypothesis,
            "verdict": record.verdict,
            "decision": record.decision,
            "geomean_ns": record.geomean_ns,
            "spec_means_ns": record.spec_means_ns or {},
            "reason": record.reason,
            "goal": goal,
            "usage": record.usage or {},
            "evaluated": record.evaluated,
        }
        self.event(event)
        if record.evaluated:
            append_atomically(self.workspace / "log.md", log_entry(event))
        reason = f"\n  reason: {record.reason.splitlines()[0][:200]}" if record.reason else ""
        self.log.write(
            f"it {record.iteration}: {record.verdict} → {record.decision} · "
            f"{format_ms(record.geomean_ns)} · {record.hypothesis or '—'}{reason}"
        )

    def event(self, fields: dict[str, object]) -> None:
        append_event(self.paths.events(self.agent), {"agent": self.agent, **fields})

    def reconcile(self) -> None:
        """Append the event lines a kill may have cut off after the store write."""
        events = read_events(self.paths.events(self.agent))
        logged = {e.get("iteration") for e in events if e.get("event") == "iteration"}
        for row in reversed(self.store.iterations(self.agent)):
            if row["iteration"] in logged:
                continue
            self.event(
                {
                    "event": "iteration",
                    "role": self.role,
                    "iteration": row["iteration"],
                    "candidate_id": row["candidate_id"],
                    "hypothesis": row["hypothesis"],
                    "verdict": row["outcome"],
                    "decision": row["decision"],
                    "geomean_ns": row["geomean_ns"],
                    "reason": row["reason"],
                    "reconciled": True,
                }
            )
            self.log.write(f"it {row['iteration']}: record restored from the store after a restart")
