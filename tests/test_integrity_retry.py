"""A spec that fails timing integrity against its do-nothing baseline is timed once more in a new
contestant, calibrated afresh before the candidate is loaded again: a calibration taken while the
host was loaded can make an honest candidate look slow. Hidden work is systematic and fails both
times. The CPU accounting's failures are timed again too: an honest candidate's exports once ran far
more CPU than their calibrated share."""

from __future__ import annotations

from dataclasses import replace

from qrsup.kernels.judge.integrity import FRESH_CAP, Cycle, CycleBaseline
from qrsup.kernels.judge.outcome import SpecOutcome
from qrsup.kernels.judge.referee import ABORT_MIN_CYCLES, BESIDE_EVERY, Referee
from qrsup.kernels.suites import Spec

MS = 1_000_000
SPEC = Spec(batch=8, n=2048, cond=1, case="dense", seed=1)
BASELINE = CycleBaseline(cycle_ns=3 * MS, export_cycle_ns=300 * MS, jitter_ns=0.1 * MS)
CLAIMED = 25.8 * MS  # allowed: 0.1 + 0.25 × 25.8 + 0.5 × 3 = 8.05 ms beyond the baseline


class ScriptedReferee(Referee):
    """The referee's decisions, on cycles whose unaccounted time the test scripts per attempt;
    a fresh calibration sets the baseline the script gives for the next attempt."""

    def __init__(
        self,
        stretch_ms_per_attempt: list[float],
        baseline_per_attempt: list[CycleBaseline] | None = None,
        cpu_ms_per_cycle: float = 0.0,
        cpu_ms_per_export: float = 0.0,
        do_nothing_ms_per_attempt: tuple[float, ...] = (0.0, 0.0),
    ) -> None:
        config = {"device": "cuda", "timeouts": {}, "rule": "quick", "recheck": "sampled"}
        config["benchmarks"] = [SPEC, SPEC]
        super().__init__(config, reporter=None, contestant=None, relaunch=None)  # type: ignore[arg-type]
        self.stretches = stretch_ms_per_attempt
        self.baselines_ahead = list(baseline_per_attempt or [BASELINE, BASELINE])
        self.baselines[SPEC] = self.baselines_ahead.pop(0)
        self.cpu_ns = cpu_ms_per_cycle * MS
        self.export_cpu_ns = cpu_ms_per_export * MS
        self.do_nothing_ms = do_nothing_ms_per_attempt  # beside the candidate's cycles
        self.attempt_cycles: list[int] = []
        self.do_nothing_cycles: list[int] = []
        self.recalibrated = 0
        self.warm_ups = 0
        self.audits = 0

    def _recalibrated_contestant(self, spec: Spec) -> None:
        self.recalibrated += 1
        self.baselines[spec] = self.baselines_ahead.pop(0)

    def _warm_up(self, outcome: SpecOutcome) -> None:
        self.warm_ups += 1
        outcome.calls += 1

    def _timed_repetitions(self, outcome, tolerance, beside_from_start):
        self.attempt_cycles.append(0)
        self.do_nothing_cycles.append(0)
        return super()._timed_repetitions(outcome, tolerance, beside_from_start)

    def _cycle(self, spec, seeds, export_after, outcome=None, calibrate=False, first_call=False):
        if calibrate:
            self.do_nothing_cycles[-1] += 1
            cycle = 3 * MS + self.do_nothing_ms[len(self.do_nothing_cycles) - 1] * MS
            return Cycle(1_000, 1_000, 1_000 + cycle, cycle, exported=False)
        outcome.calls += 1
        self.attempt_cycles[-1] += 1
        stretch = self.stretches[len(self.attempt_cycles) - 1] * MS
        exported = export_after(int(CLAIMED / 2))
        cycle = CLAIMED + 3 * MS + stretch
        cpu = self.cpu_ns + (self.export_cpu_ns if exported else 0.0)
        return Cycle(CLAIMED, CLAIMED, cycle, cpu + cycle - CLAIMED, exported)

    def _check_exported(self, outcome, seeds) -> None:
        outcome.checks += 1

    def _audit(self) -> None:
        self.audits += 1


def _judged(stretches: list[float], **scripted: object) -> tuple[SpecOutcome, ScriptedReferee]:
    referee = ScriptedReferee(stretches, **scripted)  # type: ignore[arg-type]
    outcome = SpecOutcome(0, "benchmark", SPEC)
    referee._run_benchmark(outcome)
    return outcome, referee


def test_a_miss_that_does_not_repeat_afresh_passes_and_keeps_the_first_attempt_on_record():
    outcome, referee = _judged([8.5, 0.2])
    assert outcome.status == "pass", outcome.reason
    assert referee.recalibrated == 1 and referee.warm_ups == 2
    assert referee.audits == 1  # the first benchmark spec is always audited, once timed
    assert len(referee.attempt_cycles) == 2
    first = outcome.integrity["first_attempt"]
    assert first["ok"] is False and abs(first["unaccounted_ns"] - 8.5 * MS) < 1e3
    assert first["clock"] == "wall-clock"
    assert outcome.integrity["ok"] is True


def test_an_honest_candidate_judged_against_a_stale_baseline_passes_against_a_fresh_one():
    """The H200 case: a do-nothing cycle calibrated on a loaded host came out 1.3 ms cheaper
    than a quiet one; the candidate's quiet cycles then looked 1.3 ms slow, beyond a small
    spec's allowance. Its cycles are the same on both attempts; only the baseline changes."""
    # The candidate's cycles cost 9 ms beyond its claim: 8.5 beyond a stale 0.5 ms (allowed 0.1
    # + 6.45 + 0.25), 6 beyond a fresh 3 ms (allowed 8.05).
    stale = replace(BASELINE, cycle_ns=0.5 * MS)
    outcome, _ = _judged([6.0, 6.0], baseline_per_attempt=[stale, BASELINE])
    assert outcome.status == "pass", outcome.reason
    assert outcome.integrity["first_attempt"]["baseline"]["cycle_ns"] == 0.5 * MS
    assert outcome.integrity["baseline"]["cycle_ns"] == 3 * MS


def test_a_miss_that_repeats_afresh_fails():
    outcome, referee = _judged([8.5, 8.5])
    assert outcome.status == "fail" and outcome.gate == "integrity"
    assert referee.recalibrated == 1 and len(referee.attempt_cycles) == 2


def test_a_gross_miss_is_cut_short_on_both_attempts():
    """Gross misses are timed afresh too (one honest one on an H200 was 3.2× its allowance, its
    baseline calibrated beside a compile), and each attempt still stops after a few cycles."""
    outcome, referee = _judged([80.0, 80.0])
    assert outcome.status == "fail" and outcome.gate == "integrity"
    assert referee.attempt_cycles == [4, 4]


def test_hidden_threads_fail_the_cpu_accounting_on_both_attempts():
    """50 ms of CPU beyond the wall clock outside every window: cut short each time, before
    any export, and timed afresh once like every integrity failure."""
    outcome, referee = _judged([0.0, 0.0], cpu_ms_per_cycle=50.0)
    assert outcome.status == "fail" and outcome.gate == "integrity"
    assert "CPU accounting" in outcome.reason
    assert referee.recalibrated == 1 and referee.attempt_cycles == [4, 4]
    assert outcome.integrity["first_attempt"]["clock"] == "CPU"


def test_a_cpu_failure_against_a_stale_export_share_is_timed_again_and_passes():
    """Exports that ran 60 ms of CPU beyond the wall clock each, against a share calibrated at
    10 ms: the fresh calibration measures 60 ms, and the same cycles pass."""
    stale, fresh = (
        replace(BASELINE, export_cpu_ns=10 * MS),
        replace(BASELINE, export_cpu_ns=2000 * MS),
    )
    outcome, referee = _judged(
        [0.0, 0.0], baseline_per_attempt=[stale, fresh], cpu_ms_per_export=2000
    )
    assert outcome.status == "pass", outcome.reason
    assert referee.recalibrated == 1
    first = outcome.integrity["first_attempt"]
    assert first["clock"] == "CPU" and first["cpu_baseline_ns"] > 0
    assert outcome.integrity["cpu_excess_ns"]["exported"] == 2000 * MS


def test_a_first_attempt_within_its_allowance_runs_no_do_nothing_cycle():
    outcome, referee = _judged([0.2], do_nothing_ms_per_attempt=(5.0,))
    assert outcome.status == "pass" and referee.do_nothing_cycles == [0]
    assert outcome.integrity["baseline"]["fresh_ns"] == 0.0
    assert outcome.integrity["do_nothing_beside"] == 0


def test_an_honest_harness_slowed_beside_the_candidate_passes_without_a_retry():
    """The H100 case: the harness ran slower in the candidate's process, 8.5 ms beyond a 3 ms
    do-nothing cycle calibrated before it loaded (allowed 8.05). From the first early look on,
    do-nothing cycles run between its own; they took 2.5 ms longer too, and 6 ms beyond them
    passes in the same contestant."""
    outcome, referee = _judged([8.5], do_nothing_ms_per_attempt=(2.5,))
    assert outcome.status == "pass", outcome.reason
    assert referee.recalibrated == 0 and outcome.integrity["first_attempt"] is None
    # after every BESIDE_EVERY-th of its cycles from the first early look on, but the last
    cycles = referee.attempt_cycles[0]
    beside = (cycles - 1) // BESIDE_EVERY - (ABORT_MIN_CYCLES - 1) // BESIDE_EVERY
    assert referee.do_nothing_cycles == [beside] and beside > 0
    assert outcome.integrity["do_nothing_beside"] == beside
    assert outcome.integrity["baseline"]["fresh_ns"] == 2.5 * MS
    assert outcome.integrity["beside_ns"]["harness"] == 5.5 * MS  # their median whole cycle
    assert abs(outcome.integrity["unaccounted_ns"] - 6.0 * MS) < 1e3


def test_a_retry_runs_do_nothing_cycles_from_its_start():
    outcome, referee = _judged([12.0, 8.5], do_nothing_ms_per_attempt=(0.0, 2.5))
    assert outcome.status == "pass", outcome.reason
    assert referee.recalibrated == 1
    assert referee.do_nothing_cycles[1] == (referee.attempt_cycles[1] - 1) // BESIDE_EVERY
    first = outcome.integrity["first_attempt"]
    assert first["do_nothing_beside"] > 0 and first["baseline"]["fresh_ns"] == 0.0
    assert outcome.integrity["baseline"]["fresh_ns"] == 2.5 * MS


def test_work_hidden_behind_the_candidates_calls_fails_beside_do_nothing_cycles():
    outcome, _ = _judged([12.0, 12.0], do_nothing_ms_per_attempt=(0.2, 0.2))
    assert outcome.status == "fail" and outcome.gate == "integrity"
    assert "prepare" in outcome.reason  # where it stretched, against the fresh cycles


def test_do_nothing_cycles_beside_raise_the_baseline_by_at_most_its_cap():
    """Work done in every cycle alike, the harness's own included (an operator patched below the
    harness's watch), runs in the do-nothing cycles too: they may add no more than the cap."""
    outcome, _ = _judged([20.0, 20.0], do_nothing_ms_per_attempt=(20.0, 20.0))
    assert outcome.status == "fail" and outcome.gate == "integrity"
    raised = outcome.integrity["baseline"]["fresh_ns"]
    assert raised == (FRESH_CAP - 1.0) * BASELINE.cycle_ns
    assert "do-nothing cycles beside its own ran +20.000 ms, 3.000 ms of it taken out" in (
        outcome.reason
    )
    assert abs(outcome.integrity["unaccounted_ns"] - (20.0 * MS - raised)) < 1e3


def test_do_nothing_cycles_faster_than_calibrated_never_make_an_attempt_harsher():
    outcome, referee = _judged([8.5, 7.5], do_nothing_ms_per_attempt=(-2.0, -2.0))
    assert outcome.status == "pass", outcome.reason
    assert referee.recalibrated == 1
    assert outcome.integrity["baseline"]["fresh_ns"] == 0.0
