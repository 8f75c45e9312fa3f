"""Timing statistics, the named stopping rules, and how many distinct inputs a spec times."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from qrsup.kernels.suites import Spec

INPUT_BYTES_TARGET = 256 * 1024 * 1024
MAX_INPUTS_PER_REP = 50
L2_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Stats:
    """Per-call durations of one spec's timed repetitions, in nanoseconds."""

    runs: int
    mean_ns: float
    std_ns: float
    err_ns: float
    best_ns: float
    worst_ns: float

    @classmethod
    def from_durations(cls, durations_ns: Sequence[float]) -> Stats:
        runs = len(durations_ns)
        if runs == 0:
            raise ValueError("no durations")
        mean = sum(durations_ns) / runs
        variance = sum((x - mean) ** 2 for x in durations_ns)
        std = math.sqrt(variance / (runs - 1)) if runs > 1 else 0.0
        return cls(
            runs=runs,
            mean_ns=mean,
            std_ns=std,
            err_ns=std / math.sqrt(runs),
            best_ns=float(min(durations_ns)),
            worst_ns=float(max(durations_ns)),
        )

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class StoppingRule:
    """When to stop repeating: never before `min_runs`; then on precision or a time budget."""

    name: str
    min_runs: int
    min_elapsed_ns: float
    target_rel_err: float
    max_kernel_ns: float
    max_elapsed_ns: float
    max_runs: int
    max_inputs_per_rep: int = MAX_INPUTS_PER_REP

    def should_stop(self, durations_ns: Sequence[float], elapsed_ns: float) -> bool:
        runs = len(durations_ns)
        if runs >= self.max_runs:
            return True
        if runs < self.min_runs:
            return False
        if elapsed_ns > self.max_elapsed_ns:
            return True
        if elapsed_ns < self.min_elapsed_ns:
            return False
        stats = Stats.from_durations(durations_ns)
        return (
            stats.mean_ns <= 0
            or stats.err_ns / stats.mean_ns < self.target_rel_err
            or stats.mean_ns * runs > self.max_kernel_ns
        )


# The contest's rule: ≥3 runs and 100 ms, then stop at 0.1% relative error, 10 s of kernel time,
# or 120 s in all (benchmark mode caps repetitions at 200).
CONTEST_RULE = StoppingRule(
    name="contest",
    min_runs=3,
    min_elapsed_ns=1e8,
    target_rel_err=1e-3,
    max_kernel_ns=10e9,
    max_elapsed_ns=120e9,
    max_runs=200,
)

# For research loops and CPU runs: 1% relative error or about two seconds per spec.
QUICK_RULE = StoppingRule(
    name="quick",
    min_runs=3,
    min_elapsed_ns=2e7,
    target_rel_err=1e-2,
    max_kernel_ns=1e9,
    max_elapsed_ns=2e9,
    max_runs=100,
    max_inputs_per_rep=8,
)

STOPPING_RULES = {rule.name: rule for rule in (CONTEST_RULE, QUICK_RULE)}


def inputs_per_repetition(spec: Spec, rule: StoppingRule = CONTEST_RULE) -> int:
    """The contest's `count`: distinct inputs per timed repetition, about 256 MiB of them."""
    fits = INPUT_BYTES_TARGET // max(1, spec.input_bytes)
    return max(1, min(rule.max_inputs_per_rep, fits))


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values; the suite's ranking figure."""
    if not values:
        raise ValueError("geomean of nothing")
    return math.exp(sum(math.log(v) for v in values) / len(values))
