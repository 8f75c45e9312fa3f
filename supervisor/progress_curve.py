"""What a session bought over time: the best full-stage figure so far, read from its store.

Only full-stage figures count (the session's own stopping rule on every benchmark spec, as the
start was timed); a quick figure is a screening estimate under another rule. The start is the
incumbent's bootstrap evaluation, or the first full figure when the store has none, at the best
figure that candidate has had: a re-timing beside a challenger adds one, and a slow bootstrap
run must not pass for a gain the candidates never made.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from qrsup.kernels.schema import BOOTSTRAP_AGENT, Evaluation, Promotion, Verdict

FULL_STAGES = ("full", "revalidate")


@dataclass(frozen=True)
class Point:
    minutes: float  # since the session's first evaluation
    geomean_ns: float
    candidate_id: str


@dataclass(frozen=True)
class ProgressCurve:
    start: Point
    best: tuple[Point, ...]  # the start, then each new best passing full-stage figure
    promotions: tuple[Point, ...]
    end_minutes: float  # the last evaluation: the curve holds its last value until then

    @property
    def gain(self) -> float:
        """How much faster the best is than the start, as a fraction of the start."""
        return 1.0 - self.best[-1].geomean_ns / self.start.geomean_ns

    def summary(self) -> dict[str, object]:
        last = self.best[-1]
        return {
            "start_ns": self.start.geomean_ns,
            "start_candidate": self.start.candidate_id,
            "best_ns": last.geomean_ns,
            "best_candidate": last.candidate_id,
            "best_at_minutes": round(last.minutes, 2),
            "gain": round(self.gain, 4),
            "improvements": len(self.best) - 1,
            "minutes": round(self.end_minutes, 2),
            "promotions": [(p.candidate_id, round(p.minutes, 2)) for p in self.promotions],
        }


class NoFigures(ValueError):
    """The store holds no passing full-stage figure to draw from."""


def progress_curve(
    evaluations: Iterable[Evaluation], promotions: Iterable[Promotion] = ()
) -> ProgressCurve:
    """The running best of passing full-stage geomeans, in the order they were stored."""
    ordered = sorted(evaluations, key=lambda e: e.created_at)
    if not ordered:
        raise NoFigures("no evaluations in the store")
    t0 = ordered[0].created_at
    passing = [
        e
        for e in ordered
        if e.stage in FULL_STAGES and e.verdict == Verdict.PASS and e.geomean_ns is not None
    ]
    if not passing:
        raise NoFigures("no passing full-stage evaluation in the store")
    start_run = next((e for e in passing if e.agent == BOOTSTRAP_AGENT), passing[0])
    starting = [e.geomean_ns for e in passing if e.candidate_id == start_run.candidate_id]
    start = replace(_point(start_run, t0), geomean_ns=min(starting))
    best = [start]
    for evaluation in passing:
        if (
            evaluation.created_at >= start_run.created_at
            and evaluation.candidate_id != start.candidate_id
            and evaluation.geomean_ns < best[-1].geomean_ns
        ):
            best.append(_point(evaluation, t0))
    promoted = tuple(
        Point((p.created_at - t0) / 60, p.geomean_ns, p.candidate_id)
        for p in promotions
        if p.geomean_ns is not None
    )
    return ProgressCurve(start, tuple(best), promoted, (ordered[-1].created_at - t0) / 60)


def _point(evaluation: Evaluation, t0: float) -> Point:
    assert evaluation.geomean_ns is not None
    return Point((evaluation.created_at - t0) / 60, evaluation.geomean_ns, evaluation.candidate_id)
