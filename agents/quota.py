"""Waiting for quota: until when each model an agent asks is rate-limited or out of quota, and
which of its proposers to ask meanwhile (its own, else its fallback, else none: it waits)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from qrsup.agents.proposal import Proposer


def clock(at: float) -> str:
    """`14:05`: when a wait ends, as a person reads a clock."""
    return time.strftime("%H:%M", time.localtime(at))


def model_of(proposer: Proposer) -> str:
    """The model a proposer asks (quota belongs to a model), or the proposer's name."""
    config = getattr(proposer, "config", None)
    return str(getattr(config, "model", proposer.name))


@dataclass
class QuotaWaits:
    """Until when (epoch seconds) each of an agent's models waits for quota."""

    until: dict[str, float] = field(default_factory=dict)

    def waiting(self, model: str, now: float) -> bool:
        return self.until.get(model, 0.0) > now

    def earliest(self) -> float | None:
        return min(self.until.values(), default=None)

    def pick(self, proposers: Sequence[Proposer | None], now: float) -> tuple[str, Proposer] | None:
        """The first proposer whose model is not waiting, with that model; None if all wait."""
        for proposer in proposers:
            if proposer is not None and not self.waiting(model_of(proposer), now):
                return model_of(proposer), proposer
        return None
