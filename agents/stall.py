"""When an agent has stalled: N evaluations in a row with no gain beyond the noise.

The same definition shows `stalled` in the agent list, runs the stall hook and asks the advisor,
so the three agree on when a stall began. Outcomes the judge never ran (proposal failures,
duplicates, static rejections) neither count towards a stall nor end one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from qrsup.agents.proposal import OutcomeSummary

NOT_EVALUATED = ("proposal", "duplicate", "rejected")


def evaluated(outcome: OutcomeSummary) -> bool:
    """Whether the judge ran for this outcome."""
    return outcome.verdict not in NOT_EVALUATED


def last_gain(history: Iterable[OutcomeSummary], noise: float = 0.0) -> int:
    """Iteration of the last pass faster than every pass before it by more than `noise` (a
    fraction); 0 when none passed."""
    best, last = math.inf, 0
    for outcome in sorted(history, key=lambda o: o.iteration):
        if outcome.verdict != "pass" or outcome.geomean_ns is None:
            continue
        if outcome.geomean_ns < best * (1 - noise):
            last = outcome.iteration
        best = min(best, outcome.geomean_ns)
    return last


def stall_start(history: Sequence[OutcomeSummary], patience: int, noise: float = 0.0) -> int | None:
    """The iteration a stall began at, once `patience` evaluations followed it without a gain
    beyond `noise`; None while the agent is not stalled.

    `history` is every outcome of the agent (at least since its best), oldest or newest first.
    """
    start = last_gain(history, noise)
    stale = sum(1 for outcome in history if outcome.iteration > start and evaluated(outcome))
    return start if stale >= patience else None


def stalled_for(history: Sequence[OutcomeSummary], noise: float = 0.0) -> int:
    """Evaluations since the last gain beyond `noise`."""
    start = last_gain(history, noise)
    return sum(1 for outcome in history if outcome.iteration > start and evaluated(outcome))
