"""A near miss on timing integrity is timed once more before it stands; hidden work, which is
systematic, fails both times, and a gross miss fails at once."""

from __future__ import annotations

from qrsup.kernels.judge.integrity import Cycle, CycleBaseline
from qrsup.kernels.judge.outcome import SpecOutcome
from qrsup.kernels.judge.referee import Referee
from qrsup.kernels.suites import Spec

MS = 1_000_000
SPEC = Spec(batch=8, n=2048, cond=1, case="dense", seed=1)
BASELINE = CycleBaseline(cycle_ns=3 * MS, export_cycle_ns=300 * MS, jitter_ns=0.1 * MS)
CLAIMED = 25.8 * MS  # allowed: 0.1 + 0.25 × 25.8 + 0.5 × 3 = 8.05 ms beyond the baseline


class ScriptedReferee(Referee):
    """The referee's decisions, on cycles whose unaccounted time the test scripts per attempt."""

    def __init__(self, stretch_ms_per_attempt: list[float]) -> None:
        config = {"device": "cuda", "timeouts": {}, "rule": "quick", "recheck": "sampled"}
        super().__init__(config, reporter=None, contestant=None)  # type: ignore[arg-type]
        self.baselines[SPEC] = BASELINE
        self.stretches = stretch_ms_per_attempt
        self.attempt_cycles: list[int] = []

    def _timed_repetitions(self, outcome, tolerance):
        self.attempt_cycles.append(0)
        return super()._timed_repetitions(outcome, tolerance)

    def _cycle(self, spec, seeds, export_after, outcome=None, calibrate=False) -> Cycle:
        if outcome is not None:
            outcome.calls += 1
        if not self.attempt_cycles:  # the warm-up call, before any timed repetition
            return Cycle(CLAIMED, CLAIMED, CLAIMED + BASELINE.cycle_ns, 0.0, True)
        self.attempt_cycles[-1] += 1
        stretch = self.stretches[len(self.attempt_cycles) - 1] * MS
        exported = export_after(int(CLAIMED / 2))
        return Cycle(CLAIMED, CLAIMED, CLAIMED + BASELINE.cycle_ns + stretch, 0.0, exported)

    def _check_exported(self, outcome, seeds) -> None:
        outcome.checks += 1


def _judged(stretches: list[float]) -> tuple[SpecOutcome, ScriptedReferee]:
    referee = ScriptedReferee(stretches)
    outcome = SpecOutcome(0, "benchmark", SPEC)
    referee._run_benchmark(outcome)
    return outcome, referee


def test_a_near_miss_that_does_not_repeat_passes_and_keeps_the_first_attempt_on_record():
    outcome, referee = _judged([8.5, 0.2])
    assert outcome.status == "pass", outcome.reason
    assert len(referee.attempt_cycles) == 2
    first = outcome.integrity["first_attempt"]
    assert first["ok"] is False and abs(first["unaccounted_ns"] - 8.5 * MS) < 1e3
    assert outcome.integrity["ok"] is True


def test_a_near_miss_that_repeats_fails():
    outcome, referee = _judged([8.5, 8.5])
    assert outcome.status == "fail" and outcome.gate == "integrity"
    assert len(referee.attempt_cycles) == 2


def test_a_gross_miss_fails_without_a_second_attempt():
    outcome, referee = _judged([80.0, 0.0])
    assert outcome.status == "fail" and outcome.gate == "integrity"
    assert len(referee.attempt_cycles) == 1
    assert outcome.integrity["first_attempt"] is None
