"""Bounded retries with exponential backoff and jitter for a model endpoint.

Rate limits (429), server errors (5xx) and lost connections are retried; after the last attempt
the endpoint is declared dead and the agent pauses with the reason shown, instead of spinning.
A timeout is not retried: the reply was slow, and another slow try would only double the wait.
Any other refusal of the request (401, 404, 400 …) needs a human, so it pauses at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import openai
from qrsup.agents.proposal import ProposalFailure

T = TypeVar("T")

_RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a failed request."""

    attempts: int = 5
    """Requests in all, the first included."""
    base_delay_s: float = 1.0
    """Wait after the first failure; doubled after each further one."""
    max_delay_s: float = 30.0
    """No single wait is longer, a server's Retry-After included."""
    jitter: float = 0.25
    """Each wait is scaled by a uniform factor in [1 − jitter, 1 + jitter]."""


def backoff_delay_s(
    policy: RetryPolicy, failures: int, rng: random.Random, retry_after_s: float | None = None
) -> float:
    """The wait after `failures` failed attempts (1 for the first), honouring Retry-After."""
    delay = policy.base_delay_s * 2 ** (failures - 1)
    delay *= rng.uniform(1 - policy.jitter, 1 + policy.jitter)
    if retry_after_s is not None:
        delay = max(delay, retry_after_s)
    return min(delay, policy.max_delay_s)


def call_with_retries(
    request: Callable[[], T],
    policy: RetryPolicy,
    describe: Callable[[BaseException], str],
    rng: random.Random,
    on_retry: Callable[[str], None] = lambda note: None,
    sleep: Callable[[float], None] = time.sleep,
) -> T | ProposalFailure:
    """`request()`'s result, or the failure that ended the attempts.

    `describe` turns an error into safe text (no secrets); `on_retry` hears each retried error.
    """
    last = ""
    for attempt in range(1, policy.attempts + 1):
        try:
            return request()
        except openai.APITimeoutError as exc:
            return ProposalFailure("timeout", describe(exc))
        except _RETRYABLE as exc:
            last = describe(exc)
            if attempt == policy.attempts:
                break
            delay = backoff_delay_s(policy, attempt, rng, _retry_after_s(exc))
            on_retry(f"attempt {attempt} failed ({last}); retrying in {delay:.2f} s")
            sleep(delay)
        except openai.APIStatusError as exc:
            return ProposalFailure("endpoint", describe(exc), pause=True)
    return ProposalFailure(
        "endpoint",
        f"endpoint failed {policy.attempts} times in a row; last: {last}",
        pause=True,
    )


def _retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds, when it sent a number."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    value = exc.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
