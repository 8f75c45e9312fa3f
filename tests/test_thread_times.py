"""The referee's reading of a contestant's other threads: the same figures as reading each
thread's file afresh, with threads that come and go, and never more than its share of
descriptors."""

from __future__ import annotations

import os
import threading
import time

from qrsup.kernels.judge.processes import ThreadTimes, schedstat_of


def _spin(seconds: float) -> None:
    """Run for `seconds` of this thread's own CPU time: on a loaded host a wall-clock spin got
    only 36 of the 40 ms the test below asks for."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def _afresh(pid: int) -> int:
    tasks = [t for t in os.listdir(f"/proc/{pid}/task") if t != str(pid)]
    return sum(schedstat_of(f"/proc/{pid}/task/{t}/schedstat")[0] for t in tasks)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_kept_descriptors_read_what_a_fresh_open_reads_as_threads_come_and_go():
    times = ThreadTimes(os.getpid())
    first = threading.Thread(target=_spin, args=(0.05,))
    first.start()
    first.join()
    # The spun thread has ended: neither reading counts it, and its descriptor is let go.
    assert abs(times.other_threads_ran_ns() - _afresh(os.getpid())) < 5_000_000
    steps = [threading.Event() for _ in range(4)]  # spun once, go on, spun twice, end

    def spin_twice() -> None:
        _spin(0.05)
        steps[0].set()
        steps[1].wait()
        _spin(0.05)
        steps[2].set()
        steps[3].wait()

    second = threading.Thread(target=spin_twice)
    second.start()
    steps[0].wait()
    once = times.other_threads_ran_ns()  # opens the new thread's file
    assert once >= 40_000_000 and abs(once - _afresh(os.getpid())) < 5_000_000
    steps[1].set()
    steps[2].wait()
    twice = times.other_threads_ran_ns()  # reads it again through the kept descriptor
    assert twice - once >= 40_000_000 and abs(twice - _afresh(os.getpid())) < 5_000_000
    steps[3].set()
    second.join()
    times.close()


def test_a_process_with_more_threads_than_it_keeps_costs_opens_not_descriptors():
    times = ThreadTimes(os.getpid())
    times.KEPT_OPEN = 4
    release = threading.Event()
    waiting = [threading.Thread(target=release.wait) for _ in range(12)]
    for thread in waiting:
        thread.start()
    before = _open_fds()
    total = times.other_threads_ran_ns()
    assert _open_fds() - before <= 4
    assert abs(total - _afresh(os.getpid())) < 5_000_000
    release.set()
    for thread in waiting:
        thread.join()
    times.close()
    assert _open_fds() <= before
