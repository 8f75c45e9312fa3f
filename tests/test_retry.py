"""Backoff waits: exponential, jittered within bounds, honouring Retry-After up to the cap."""

from __future__ import annotations

import random

from qrsup.agents.proposers.retry import RetryPolicy, backoff_delay_s

POLICY = RetryPolicy(attempts=6, base_delay_s=1.0, max_delay_s=10.0, jitter=0.25)


def test_waits_double_after_each_failure_within_the_jitter_band():
    rng = random.Random(1)
    for failures, nominal in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)):
        delay = backoff_delay_s(POLICY, failures, rng)
        assert 0.75 * nominal <= delay <= 1.25 * nominal


def test_waits_never_exceed_the_cap():
    rng = random.Random(2)
    assert all(backoff_delay_s(POLICY, failures, rng) <= 10.0 for failures in range(1, 30))


def test_jitter_spreads_agents_that_failed_together():
    delays = {round(backoff_delay_s(POLICY, 3, random.Random(seed)), 6) for seed in range(20)}
    assert len(delays) == 20


def test_retry_after_lengthens_the_wait_but_not_past_the_cap():
    rng = random.Random(3)
    assert backoff_delay_s(POLICY, 1, rng, retry_after_s=5.0) == 5.0
    assert backoff_delay_s(POLICY, 1, rng, retry_after_s=60.0) == 10.0
