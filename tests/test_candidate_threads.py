"""The harness's reading of the candidate's own threads (kernels/judge/candidate_threads.py)."""

from __future__ import annotations

import _thread
import threading
import time

from qrsup.kernels.judge.candidate_threads import UNKNOWN_THREAD_NS, ThreadSpan, ran_ns


def test_idle_threads_run_nothing_and_a_busy_one_is_read_in_cpu_time() -> None:
    idle, stop = threading.Event(), threading.Event()
    for _ in range(3):
        threading.Thread(target=idle.wait, daemon=True).start()
    span = ThreadSpan()
    span.start()
    time.sleep(0.02)
    assert span.ran_ns() == 0

    def spin() -> None:
        while not stop.is_set():
            sum(range(10_000))

    busy = threading.Thread(target=spin, daemon=True)
    span.start()
    busy.start()
    time.sleep(0.05)
    ran = span.ran_ns()
    stop.set()
    busy.join()
    idle.set()
    assert ran > 1_000_000  # a spinning thread, first seen at the end: all of its time counts


def test_a_thread_the_threading_module_does_not_know_counts_as_having_run() -> None:
    started, release = threading.Event(), threading.Event()

    def hidden() -> None:
        started.set()
        release.wait()

    span = ThreadSpan()
    span.start()
    _thread.start_new_thread(hidden, ())
    started.wait()
    try:
        assert span.ran_ns() == UNKNOWN_THREAD_NS
    finally:
        release.set()


def test_a_thread_gone_between_two_readings_ran_to_its_end_in_between() -> None:
    assert ran_ns({1: 500, 2: 700}, {2: 700}) == UNKNOWN_THREAD_NS
    assert ran_ns({2: 700}, {2: 900, 3: 50}) == 250
    assert ran_ns({2: 700}, {2: 600}) == 0  # a new thread under a reused ident: no negatives
