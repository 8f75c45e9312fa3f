"""Timing integrity: does the referee's own clock agree with the time the contestant claims?

Before the candidate is imported, the referee times the contestant's harness doing no work
(`Calibration`). Afterwards, for each timed repetition, time the referee saw but the claimed
events did not cover — beyond that calibrated overhead — is unaccounted. Work on a side stream,
a patched timer, or work deferred into the next repetition's preparation all land there.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

MIN_SLACK_NS = 500_000
RELATIVE_SLACK = 0.2


@dataclass(frozen=True)
class Calibration:
    """Harness overhead of a `go` window measured with a kernel that does nothing."""

    go_overhead_median_ns: float
    go_overhead_p90_ns: float

    @classmethod
    def from_samples(cls, overheads_ns: Sequence[float]) -> Calibration:
        ordered = sorted(overheads_ns)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        return cls(statistics.median(ordered), p90)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class RepetitionTiming:
    """One timed repetition as both sides saw it, in nanoseconds."""

    claimed_ns: float  # the contestant's events over the whole window
    window_ns: float  # the referee's clock from `go` sent to reply read
    prepare_ns: float  # the referee's clock over the preparation before it
    prepare_baseline_ns: float  # the same preparation before the candidate was loaded


@dataclass(frozen=True)
class IntegrityVerdict:
    """`ok` is False when unaccounted time exceeds what noise explains."""

    ok: bool
    unaccounted_median_ns: float
    allowed_ns: float
    reason: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def judge_integrity(reps: Sequence[RepetitionTiming], calibration: Calibration) -> IntegrityVerdict:
    """Median unaccounted time against calibrated jitter plus max(0.5 ms, 20% of claimed)."""
    if not reps:
        return IntegrityVerdict(True, 0.0, 0.0, "")
    unaccounted = [
        max(0.0, r.prepare_ns - r.prepare_baseline_ns)
        + (r.window_ns - r.claimed_ns - calibration.go_overhead_median_ns)
        for r in reps
    ]
    median_unaccounted = statistics.median(unaccounted)
    median_claimed = statistics.median(r.claimed_ns for r in reps)
    jitter = calibration.go_overhead_p90_ns - calibration.go_overhead_median_ns
    allowed = jitter + max(MIN_SLACK_NS, RELATIVE_SLACK * median_claimed)
    if median_unaccounted <= allowed:
        return IntegrityVerdict(True, median_unaccounted, allowed, "")
    reason = (
        f"timing integrity: the referee's clock saw {median_unaccounted / 1e6:.3f} ms per "
        f"repetition that the candidate's timed window did not account for (allowed "
        f"{allowed / 1e6:.3f} ms; claimed {median_claimed / 1e6:.3f} ms). Work escaped the "
        "timer (a side stream, deferred work) or the timer was tampered with."
    )
    return IntegrityVerdict(False, median_unaccounted, allowed, reason)
