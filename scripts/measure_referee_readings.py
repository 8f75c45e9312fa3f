"""What one of the referee's readings of a contestant costs, by the contestant's thread count.

The referee reads the contestant's CPU time, its other threads' times and its main thread's wait
four times a timed cycle, two of them between the exchanges. Each thread is one more /proc file
(kept open between readings since 2026-12-04), so a contestant that gains threads after
calibration (thread pools, the candidate's imports) makes every later cycle's bookkeeping
dearer. Run: python scripts/measure_referee_readings.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import psutil
from qrsup.kernels.judge.processes import ThreadTimes, schedstat


def reading_us(process: psutil.Process, repeats: int) -> float:
    """Median µs of one reading as the referee takes it (CPU times, threads, the main wait)."""
    costs = []
    threads = ThreadTimes(process.pid)
    for _ in range(repeats):
        start = time.perf_counter_ns()
        process.cpu_times()
        threads.other_threads_ran_ns()
        schedstat(process.pid)
        costs.append((time.perf_counter_ns() - start) / 1e3)
    threads.close()
    return statistics.median(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8, 32, 64, 200])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    process, never = psutil.Process(os.getpid()), threading.Event()
    print("threads  µs per reading  µs per cycle (2 readings between exchanges)")
    for wanted in sorted(args.threads):
        for _ in range(wanted - threading.active_count()):
            threading.Thread(target=never.wait, daemon=True).start()
        cost = reading_us(process, args.repeats)
        print(f"{threading.active_count():7d}  {cost:14.1f}  {2 * cost:14.1f}")


if __name__ == "__main__":
    main()
