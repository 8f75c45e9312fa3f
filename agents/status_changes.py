"""An agent's status changes beyond its loop's stage: spend, budget pauses, quota waits, stalls
and new bests, each recorded once as an event and handed to the status hook once.

The loop asks here and decides; this module keeps the figures (what was spent, until when each
model waits for quota, since when the agent is stalled) and says what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from qrsup.agents.hooks import StatusHook
from qrsup.agents.proposal import OutcomeSummary, ProposalFailure, Usage
from qrsup.agents.quota import QuotaWaits, clock
from qrsup.agents.spend import Spend
from qrsup.agents.stall import stall_start, stalled_for
from qrsup.agents.store import Store

Record = Callable[[dict[str, object]], None]


class StatusChanges:
    """Keeps one agent's spend, quota waits and stall; records and hooks each change once."""

    def __init__(
        self, record: Record, hook: StatusHook | None, spend: Spend, patience: int
    ) -> None:
        self._record = record
        self._hook = hook
        self.spend = spend
        self.patience = patience
        self.quota = QuotaWaits()
        self.stalled_since: int | None = None
        self.stalled_evaluations = 0

    def spent(self, usage: Usage) -> None:
        self.spend = self.spend.plus(usage)

    def budget_paused(self, reason: str) -> None:
        """The agent reached its cost budget and pauses until a person raises it."""
        self._change("budget_paused", "budget", reason, spend=self.spend.to_dict())

    def quota_wait(self, model: str, failure: ProposalFailure, now: float) -> float:
        """`model` is rate-limited or out of quota: wait `failure.wait_s`; returns until when."""
        until = now + max(failure.wait_s, 1.0)
        first = model not in self.quota.until
        self.quota.until[model] = until
        detail = f"{model} waiting for quota until {clock(until)}: {failure.reason}"
        fields = {"model": model, "until": until, "wait_s": failure.wait_s}
        if first:
            self._change("quota_wait", "quota", detail, **fields)
        else:  # still out: the same wait, longer; recorded, not announced again
            self._record({"event": "quota_wait", "detail": detail, "again": True, **fields})
        return until

    def quota_answered(self, model: str) -> None:
        """`model` answered: a wait it was in is over."""
        if self.quota.until.pop(model, None) is not None:
            self._record({"event": "quota_resumed", "model": model})

    def stall(self, history: Sequence[OutcomeSummary], noise: float) -> None:
        """Start or end a stall by `stall.py`'s definition; the advisor uses the same."""
        self.stalled_evaluations = stalled_for(history, noise)
        start = stall_start(history, self.patience, noise)
        if start is not None and self.stalled_since is None:
            detail = f"{self.stalled_evaluations} evaluations without a gain beyond {noise:.1%}"
            self._change("stalled", "stall", detail, since_iteration=start)
        elif start is None and self.stalled_since is not None:
            self._record({"event": "stall_ended", "since_iteration": self.stalled_since})
        self.stalled_since = start

    def passed(self, store: Store, candidate_id: str, geomean_ns: float | None) -> None:
        """A kept candidate: a new best if faster than every passing one before it, the
        incumbent included."""
        if geomean_ns is None:
            return
        others = [
            c.geomean_ns
            for c in store.candidates()
            if c.id != candidate_id and c.verdict == "pass" and c.geomean_ns is not None
        ]
        previous = min(others, default=None)
        if previous is None or geomean_ns < previous:
            self.new_best(candidate_id, geomean_ns, previous)

    def new_best(self, candidate_id: str, geomean_ns: float, previous_ns: float | None) -> None:
        was = f" (was {previous_ns / 1e6:.4g} ms)" if previous_ns else ""
        detail = f"{candidate_id}: {geomean_ns / 1e6:.4g} ms{was}"
        self._change("new_best", "new_best", detail, candidate_id=candidate_id,
                     geomean_ns=geomean_ns)  # fmt: skip

    def beat_extra(self) -> dict[str, object]:
        """What the heartbeat carries for the supervisor: spend, stall, quota wait."""
        return {
            "spend": self.spend.to_dict(),
            "stalled": self.stalled_evaluations if self.stalled_since is not None else 0,
            "quota_until": self.quota.earliest(),
        }

    def _change(self, event: str, status: str, detail: str, **fields: object) -> None:
        self._record({"event": event, "detail": detail, **fields})
        if self._hook is not None:
            candidate = fields.get("candidate_id")
            geomean = fields.get("geomean_ns")
            self._hook.fire(
                status,
                detail,
                candidate_id=str(candidate) if candidate else None,
                geomean_ns=float(geomean) if isinstance(geomean, int | float) else None,
            )
