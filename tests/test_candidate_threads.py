"""The harness's reading of the candidate's own threads (kernels/judge/candidate_threads.py)."""

from __future__ import annotations

import _thread
import os
import threading
import time

from qrsup.kernels.judge.candidate_threads import UNKNOWN_THREAD_NS, ThreadSpan, ran_ns, reading
from qrsup.kernels.judge.processes import ThreadTimes


def test_idle_threads_run_nothing_and_a_busy_one_is_read_in_cpu_time() -> None:
    """Read thread by thread: this process may hold other tests' threads, which may wake."""
    idle, stop = threading.Event(), threading.Event()
    sleepers = [threading.Thread(target=idle.wait, daemon=True) for _ in range(3)]
    for thread in sleepers:
        thread.start()
    time.sleep(0.05)  # past their first steps into the wait
    times = ThreadTimes(os.getpid())
    before = reading(times)
    time.sleep(0.02)
    after = reading(times)
    assert all(after[t.ident] == before[t.ident] > 0 for t in sleepers)

    def spin() -> None:
        while not stop.is_set():
            sum(range(10_000))

    busy = threading.Thread(target=spin, daemon=True)
    busy.start()
    time.sleep(0.05)
    ran = ran_ns(after, reading(times))
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
    ident = _thread.start_new_thread(hidden, ())
    started.wait()
    try:
        assert reading(ThreadTimes(os.getpid()))[ident] == -UNKNOWN_THREAD_NS
        assert span.ran_ns() >= UNKNOWN_THREAD_NS  # with any other test's thread that woke
    finally:
        release.set()


def test_a_thread_gone_between_two_readings_ran_to_its_end_in_between() -> None:
    assert ran_ns({1: 500, 2: 700}, {2: 700}) == UNKNOWN_THREAD_NS
    assert ran_ns({2: 700}, {2: 900, 3: 50}) == 250
    assert ran_ns({2: 700}, {2: 600}) == 0  # a new thread under a reused ident: no negatives
