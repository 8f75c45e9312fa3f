"""CPU time the candidate's own Python threads run while the harness holds its inputs or outputs.

Inputs exist from the start of a preparation, outputs until their inspection ends, and only the
timed window between is meant for the candidate's work. A thread can do that work elsewhere: one
that kept the harness object found while its module was imported, and polled the attribute that
holds the prepared inputs, factored them before the referee's `go` arrived, and the timed call
handed the answers back (the smoke suite's 20×32 passed at 2.4 times torch.geqrf's speed on this
CPU). The referee's clock over a cycle misses such work wherever the spec's whole kernel fits in
the cycle's noise, as a small one does.

So the harness reads, at each end of those two stretches, the CPU time (schedstat's, in ns) of
every thread that runs Python but the main one. The threading module names the ones it started;
a thread that runs Python behind its back (started with `_thread`, or struck from its table) has
no known kernel thread to read, and counts as having run. An idle thread (blocked on a lock, a
read, a sleep) runs nothing. The threads of torch, OpenMP and the CUDA driver run no Python and
are not read here; the referee's CPU accounting covers them.
"""

from __future__ import annotations

import os
import sys
import threading

from qrsup.kernels.judge.processes import ThreadTimes

# Captured before any candidate code is imported: rebinding the names later changes nothing here.
_running_python = sys._current_frames
_started_by_threading = threading.enumerate
_MAIN = threading.main_thread().ident
UNKNOWN_THREAD_NS = 1  # what a thread whose CPU time cannot be read counts for: that it ran


def reading(times: ThreadTimes) -> dict[int, int]:
    """Each thread running Python, but the main one, by ident: its CPU time so far (0 once it
    has ended), or a negative mark for one the threading module does not know."""
    known = {thread.ident: thread.native_id for thread in _started_by_threading()}
    found = {}
    for ident in _running_python():
        if ident != _MAIN:
            native_id = known.get(ident)
            unknown = native_id is None
            found[ident] = -UNKNOWN_THREAD_NS if unknown else times.task_ran_ns(str(native_id))
    return found


def ran_ns(before: dict[int, int], now: dict[int, int]) -> int:
    """CPU time the threads ran between two readings. A thread first seen now counts all of its
    time; one unknown to the threading module at either reading, or gone by now (it ran to its
    end in between), counts UNKNOWN_THREAD_NS."""
    total = UNKNOWN_THREAD_NS * len(before.keys() - now.keys())
    for ident, cpu in now.items():
        was = before.get(ident, 0)
        if cpu < 0 or was < 0:
            total += UNKNOWN_THREAD_NS
        else:
            total += max(cpu - was, 0)
    return total


class ThreadSpan:
    """The candidate's threads' CPU time over one stretch outside the timed window. Each
    thread's schedstat file stays open between readings (ThreadTimes): 200 idle threads' files
    opened anew cost about 5 ms a reading on this project's CI CPU, four readings a repetition."""

    def __init__(self) -> None:
        self._times = ThreadTimes(os.getpid())
        self._start: dict[int, int] = {}

    def start(self) -> None:
        self._start = reading(self._times)

    def ran_ns(self) -> int:
        """What they ran since `start`; the next stretch starts at its own `start`."""
        return ran_ns(self._start, reading(self._times))
