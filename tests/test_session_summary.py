"""A session's summary splits each judge run's wall by the referee's phases and counts the
candidates that reached the judge, per hour."""

from __future__ import annotations

import pytest
from qrsup.kernels.schema import Decision, Evaluation, Iteration, Verdict
from qrsup.supervisor.session_summary import summarize


def _run(at_s: float, wall: float, total: float, ahead: float = 0.0) -> Evaluation:
    phases = {"wall": wall, "total": total, "calibrate": 1.0, "load": 0.5, "tests": 2.0}
    phases |= {"benchmarks": 3.0, "started_ahead": ahead}
    # One timed spec: 2 ms a call, 4 calls a repetition, 250 repetitions: 2 s of kernel time;
    # its harness cycle is 1 ms (0.25 s in all), its checks 0.4 s, the test's check 0.1 s; two
    # of its repetitions were exported, each 50 ms dearer than a plain cycle.
    spec = {"kind": "benchmark", "count": 4, "stats": {"mean_ns": 2e6, "runs": 250}}
    baseline = {"cycle_ns": 1e6, "export_cycle_ns": 51e6}
    spec |= {"check_s": 0.4, "checks": 2, "integrity": {"baseline": baseline}}
    test = {"kind": "test", "count": 1, "check_s": 0.1, "first_call_s": 1.5}
    report = {"phases_s": phases, "specs": [spec, test]}
    return Evaluation(0, "c", "a1", 1, "quick", Verdict.PASS, 1.0, {}, "", report, at_s)


def test_a_runs_wall_is_start_up_then_the_referees_phases_and_the_rest_is_other():
    runs = [_run(0, 10.0, 7.0), _run(1800, 8.0, 7.5, ahead=4.0)]
    iterations = [
        Iteration("a1", 1, Verdict.PASS, Decision.REJECTED, evaluated=True, compile_wait_s=82.0),
        Iteration("a1", 2, Verdict.REJECTED, Decision.SKIPPED),  # never reached the judge
        Iteration("a1", 3, Verdict.PASS, Decision.REJECTED, evaluated=True, compile_wait_s=2.0),
    ]
    summary = summarize(runs, iterations)
    assert (summary.minutes, summary.candidates, summary.judge_runs) == (30.0, 2, 2)
    assert summary.candidates_per_hour == pytest.approx(4.0)
    waits = {"candidates": 2, "mean": 42.0, "longest": 82.0}
    assert summary.to_dict()["compile_wait_s"] == waits
    assert summary.judge_runs_per_hour == pytest.approx(4.0)
    assert summary.phases_s["startup"] == pytest.approx(3.0 + 0.5)
    assert summary.phases_s["calibrate"] == pytest.approx(2.0)
    assert summary.phases_s["other"] == pytest.approx((10 - 3 - 6.5) + (8 - 0.5 - 6.5))
    assert sum(summary.phases_s.values()) == pytest.approx(summary.judge_wall_s)
    assert summary.timed_kernel_s == pytest.approx(4.0)
    assert summary.overhead_share == pytest.approx(1 - 4.0 / 18.0)
    assert summary.overhead_share_beyond_checks == pytest.approx(1 - (4.0 + 1.0) / 18.0)
    assert summary.warm_runs == 1
    assert summary.to_dict()["seconds_per_judge_run"]["startup"] == 1.75
    # Each run's tests + benchmarks (5 s): checks 0.5, timed 2, cycles 0.25, exports 0.1, the
    # test's first call 1.5, the rest 0.65.
    assert summary.specs_s == pytest.approx(
        {
            "checks": 1.0,
            "timed": 4.0,
            "harness cycles": 0.5,
            "exports": 0.2,
            "first calls": 3.0,
            "rest": 1.3,
        }
    )


def test_a_single_run_has_no_rate():
    summary = summarize([_run(0, 10.0, 7.0)], [])
    assert summary.minutes == 0.0 and summary.candidates_per_hour is None


def test_integrity_failures_and_second_attempts_are_counted_by_candidate_and_spec():
    missed_once = {"first_attempt": {"ok": False}, "baseline": {"cycle_ns": 1e6}}
    twice = {"kind": "benchmark", "gate": "integrity", "integrity": missed_once}
    again = {"kind": "benchmark", "integrity": missed_once}

    def run(candidate: str, specs: list[dict]) -> Evaluation:
        report = {"phases_s": {"wall": 1.0, "total": 1.0}, "specs": specs}
        return Evaluation(0, candidate, "a1", 1, "quick", Verdict.PASS, 1.0, {}, "", report, 0.0)

    runs = [run("c1", [twice, again]), run("c1", [twice]), run("c2", [again]), run("c3", [])]
    summary = summarize(runs, [])
    assert summary.integrity == {
        "candidates_failed": 1,
        "specs_failed": 2,
        "specs_timed_again": 4,
    }
    assert summary.to_dict()["integrity"] == summary.integrity
