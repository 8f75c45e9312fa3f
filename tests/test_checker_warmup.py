"""The referee's checker warm-up finishes on its own and never raises into the referee."""

from __future__ import annotations

import threading

import torch
from qrsup.kernels.judge.checker_warmup import CheckerWarmup
from qrsup.kernels.suites import Spec

SPEC = Spec(batch=640, n=16, cond=2, case="mixed", seed=3)


def warmup_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("checker-warmup")]


def test_a_warmup_that_was_never_started_joins_at_once():
    CheckerWarmup(SPEC, torch.device("cpu")).join()
    assert warmup_threads() == []


def test_the_warmup_checks_in_its_own_thread_and_ends():
    warmup = CheckerWarmup(SPEC, torch.device("cpu")).start()
    assert len(warmup_threads()) <= 1
    warmup.join()
    assert warmup_threads() == []


def test_a_warmup_that_cannot_run_ends_quietly():
    """The meta device has no generator: the warm-up fails inside its thread, and joining it
    neither raises nor hangs."""
    failures: list[threading.ExceptHookArgs] = []
    previous, threading.excepthook = threading.excepthook, failures.append
    try:
        CheckerWarmup(SPEC, torch.device("meta")).start().join()
    finally:
        threading.excepthook = previous
    assert failures == []
    assert warmup_threads() == []
