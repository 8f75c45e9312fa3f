"""A stall: N evaluations in a row without a gain beyond the noise; what the judge never ran does
not count."""

from __future__ import annotations

from qrsup.agents.stall import stall_start, stalled_for

from tests.proposal_contexts import outcome


def test_gains_within_the_noise_do_not_end_a_stall():
    history = [
        outcome(1, "pass", 10e6),
        outcome(2, "pass", 9.9e6),  # 1% faster: within 2% noise
        outcome(3, "fail"),
        outcome(4, "pass", 9.85e6),
    ]
    assert stall_start(history, 3, noise=0.02) == 1
    assert stalled_for(history, noise=0.02) == 3
    assert stall_start(history, 3, noise=0.0) is None  # without noise, 4 was a gain


def test_proposals_duplicates_and_static_rejections_do_not_count():
    history = [outcome(1, "pass", 10e6), *(outcome(i, v) for i, v in
               enumerate(["proposal", "duplicate", "rejected", "proposal"], start=2))]  # fmt: skip
    assert stalled_for(history) == 0
    assert stall_start([*history, outcome(6), outcome(7)], 2) == 1


def test_a_gain_beyond_the_noise_ends_the_stall():
    history = [outcome(1, "pass", 10e6), outcome(2), outcome(3), outcome(4, "pass", 9e6)]
    assert stall_start(history[:3], 2, noise=0.02) == 1
    assert stall_start(history, 2, noise=0.02) is None
