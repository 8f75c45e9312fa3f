"""Recording an iteration: the store first (the source of truth), then events.jsonl, then log.md.

On start the recorder reconciles: any iteration in the store that a kill cut off before its event
line was written gets that line appended, whole, so every evaluation appears in every record once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qrsup.agents.fault_points import fault_point
from qrsup.agents.records import (
    AgentLog,
    append_event,
    format_ms,
    log_submission,
    read_events,
    shorten,
)
from qrsup.agents.session import RunPaths
from qrsup.agents.store import Store
from qrsup.kernels.schema import Comparison, Decision, EventKind, Iteration, Verdict


@dataclass
class IterationDraft:
    """What one iteration has produced so far; `finish` makes it the frozen record."""

    iteration: int
    hypothesis: str = ""
    candidate_id: str | None = None
    parent_id: str | None = None
    verdict: Verdict = Verdict.PROPOSAL
    decision: Decision = Decision.REJECTED
    reason: str = ""
    geomean_ns: float | None = None
    spec_means_ns: dict[int, float] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    comparison: Comparison | None = None
    evaluated: bool = False
    compile_wait_s: float | None = None

    def finish(self, agent: str, role: str, goal: str) -> Iteration:
        return Iteration(
            agent=agent,
            iteration=self.iteration,
            verdict=Verdict(self.verdict),
            decision=Decision(self.decision),
            candidate_id=self.candidate_id,
            parent_id=self.parent_id,
            role=role,
            hypothesis=self.hypothesis,
            reason=self.reason,
            goal=goal,
            geomean_ns=self.geomean_ns,
            spec_means_ns=dict(self.spec_means_ns),
            usage=dict(self.usage),
            comparison=self.comparison,
            evaluated=self.evaluated,
            compile_wait_s=self.compile_wait_s,
        )


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

    def record(self, draft: IterationDraft, goal: str) -> Iteration:
        record = draft.finish(self.agent, self.role, goal)
        self.store.record_iteration(record)
        fault_point("recording")  # stored, not yet in events.jsonl or log.md
        event = record.to_event()
        self.event(event)
        if record.evaluated:
            log_submission(self.workspace, event)
        reason = f"\n  reason: {shorten(record.reason, 200)}" if record.reason else ""
        self.log.write(
            f"it {record.iteration}: {record.verdict} → {record.decision} · "
            f"{format_ms(record.geomean_ns)} · {record.hypothesis or '—'}{reason}"
        )
        return record

    def event(self, fields: dict[str, object]) -> None:
        append_event(self.paths.events(self.agent), {"agent": self.agent, **fields})

    def reconcile(self) -> None:
        """Append the event lines a kill may have cut off after the store write."""
        events = read_events(self.paths.events(self.agent))
        logged = {e.get("iteration") for e in events if e.get("event") == EventKind.ITERATION}
        for record in reversed(self.store.iterations(self.agent)):
            if record.iteration in logged:
                continue
            self.event({**record.to_event(), "reconciled": True})
            self.log.write(f"it {record.iteration}: record restored from the store after a restart")
