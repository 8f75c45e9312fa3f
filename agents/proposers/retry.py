"""Bounded retries with exponential backoff and jitter for a model endpoint.

Server errors (5xx) and lost connections are retried; after the last attempt the endpoint is
declared dead and the agent pauses with the reason shown, instead of spinning. Rate limits (429)
are retried too, and when they outlast the attempts (or the account is out of quota, which no
quick retry fixes) the failure is `quota`, carrying how long to wait: the agent waits that long
and resumes by itself. A timeout is not retried: the reply was slow, and another slow try would
only double the wait. Any other refusal of the request (401, 404, 400 …) needs a human, so it
pauses at once.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from qrsup.agents.proposal import ProposalFailure

if TYPE_CHECKING:  # imported where used: it costs an agent 0.6 s to start, and tuners never call
    import openai

T = TypeVar("T")

_RESET_HEADERS = ("retry-after", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


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
    quota_wait_s: float = 300.0
    """How long the agent waits for quota after a 429 whose reply names no reset time."""


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
    import openai

    retryable = (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError)
    last = ""
    for attempt in range(1, policy.attempts + 1):
        try:
            return request()
        except openai.APITimeoutError as exc:
            return ProposalFailure("timeout", describe(exc))
        except retryable as exc:
            last = describe(exc)
            if attempt == policy.attempts or _out_of_quota(exc):
                if isinstance(exc, openai.RateLimitError):
                    return quota_failure(exc, last, policy)
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


def quota_failure(exc: openai.RateLimitError, text: str, policy: RetryPolicy) -> ProposalFailure:
    """A `quota` failure: wait for the reset the reply names, else the policy's quota wait."""
    hints = [_duration_s(exc.response.headers.get(name)) for name in _RESET_HEADERS]
    known = [hint for hint in hints if hint is not None]
    wait_s = max(known) if known else policy.quota_wait_s
    return ProposalFailure("quota", f"rate-limited or out of quota: {text}", wait_s=wait_s)


def _out_of_quota(exc: BaseException) -> bool:
    """OpenAI's 429 for an exhausted account or plan: retrying within seconds cannot help."""
    import openai

    body = getattr(exc, "body", None)
    code = body.get("code") if isinstance(body, dict) else None
    return isinstance(exc, openai.RateLimitError) and code == "insufficient_quota"


def _duration_s(value: str | None) -> float | None:
    """`30` (seconds), `1.5s`, `6m0s`, `20ms` → seconds; None for anything else."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value.strip():
            return None
        return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds, when it sent a number."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return None
    return _duration_s(exc.response.headers.get("retry-after"))
