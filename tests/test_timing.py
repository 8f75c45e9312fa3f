"""Timing statistics and stopping rules, as plain functions."""

from __future__ import annotations

import pytest
from qrsup.kernels.suites import Spec
from qrsup.kernels.timing import CONTEST_RULE, QUICK_RULE, Stats, geomean, inputs_per_repetition


def test_stats_match_hand_computation():
    stats = Stats.from_durations([1.0, 2.0, 3.0, 4.0])
    assert stats.mean_ns == 2.5
    assert stats.std_ns == pytest.approx(1.2909944)
    assert stats.err_ns == pytest.approx(1.2909944 / 2)
    assert (stats.best_ns, stats.worst_ns, stats.runs) == (1.0, 4.0, 4)


def test_contest_rule_needs_three_runs_and_100_ms():
    precise = [1e6] * 3
    assert not CONTEST_RULE.should_stop(precise[:2], elapsed_ns=1e9)
    assert not CONTEST_RULE.should_stop(precise, elapsed_ns=5e7)
    assert CONTEST_RULE.should_stop(precise, elapsed_ns=2e8)


def test_contest_rule_stops_on_kernel_budget_or_wall_budget():
    noisy = [1e9, 3e9, 2e9, 5e9]  # mean × runs > 10 s
    assert CONTEST_RULE.should_stop(noisy, elapsed_ns=2e8)
    assert CONTEST_RULE.should_stop([1.0, 5.0, 9.0], elapsed_ns=121e9)
    assert not CONTEST_RULE.should_stop([1.0, 5.0, 9.0], elapsed_ns=2e8)


def test_inputs_per_repetition_follows_the_contest_and_the_rule_cap():
    assert inputs_per_repetition(Spec(640, 512, 2, "dense", 0)) == 1
    assert inputs_per_repetition(Spec(20, 32, 1, "dense", 0)) == 50
    assert inputs_per_repetition(Spec(20, 32, 1, "dense", 0), QUICK_RULE) == 8
    assert inputs_per_repetition(Spec(2, 4096, 1, "dense", 0)) == 2


def test_geomean():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        geomean([])


def test_every_rule_takes_at_least_its_minimum_runs_even_past_the_budget():
    assert not QUICK_RULE.should_stop([5e9], elapsed_ns=10e9)
    assert QUICK_RULE.should_stop([5e9] * 3, elapsed_ns=10e9)
