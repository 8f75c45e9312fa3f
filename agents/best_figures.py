"""An agent's best figures, as its row in the agent list and `qrsup status` shows them.

The full stage's and the quick stage's are kept apart: they are timed under different rules and
on different specs, and a restarted agent once showed a rejected candidate's quick 16.7 ms as its
best beside a 20.6 ms incumbent. The quick figure is shown, marked, only while no candidate of
the agent has a full stage's, so an agent whose candidates all stopped at the quick stage still
shows what it reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from qrsup.agents.heartbeat import Heartbeat
from qrsup.kernels.schema import Decision, Iteration, Verdict

# The decisions only a full stage's figures lead to: a beam slot, a promotion, or a rejection.
DECIDED_ON_FULL_STAGE = frozenset(
    {*(d for d in Decision if d.value.startswith("beam ")), Decision.PROMOTED, Decision.REJECTED}
)


@dataclass
class BestFigures:
    full_ns: float | None = None
    quick_ns: float | None = None  # passing candidates the quick stage judged not promising

    @classmethod
    def of(cls, records: Iterable[Iteration]) -> BestFigures:
        best = cls()
        for record in records:
            best.note(record.verdict, record.decision, record.geomean_ns)
        return best

    def note(
        self, verdict: Verdict | None, decision: Decision | None, geomean_ns: float | None
    ) -> None:
        """Keep a finished iteration's figure if it is its stage's best; a failed candidate's
        figures are never a best."""
        if not geomean_ns or verdict != Verdict.PASS:
            return
        if decision in DECIDED_ON_FULL_STAGE:
            self.full_ns = _lower(self.full_ns, geomean_ns)
        elif decision == Decision.NOT_PROMISING:
            self.quick_ns = _lower(self.quick_ns, geomean_ns)


def _lower(best: float | None, value: float) -> float:
    return value if best is None else min(best, value)


def show_earlier_figures(records: Sequence[Iteration], heartbeat: Heartbeat) -> BestFigures:
    """An agent's figures from its stored records (newest first) put on its heartbeat: a fresh
    process's first beat carries none, so a relaunched agent's row read "—" until its first
    iteration in the new process ended."""
    best = BestFigures.of(records)
    heartbeat.update(
        last_verdict=records[0].verdict if records else None,
        best_geomean_ns=best.full_ns,
        best_quick_geomean_ns=best.quick_ns,
    )
    return best
