"""How long the TUI waits to read the store while agents write it: a writer's handle (what every
reader opened before the read-only handle: it starts a write transaction to create the schema)
against the read-only handle, each opening the store and reading what a leaderboard refresh reads.

`python scripts/measure_store_reads.py [--reads 200] [--candidates 3000] [--writers 3]`: the
writers are processes that record iterations as fast as agents at full speed would (one
transaction each, FULL sync); prints one line per handle and the medians, p95 and max in ms.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict

WRITE_PAUSE_S = 0.01


def _fill(path: Path, candidates: int) -> None:
    with Store(path) as store:
        for i in range(candidates):
            cid = f"c-{i:010d}"
            store.add_candidate(
                Candidate(
                    cid, cid, f"X = {i}\n", None, "a1", "exploit", "f", "h", None, time.time()
                )
            )
            report = {"verdict": "pass", "geomean_ns": 1e6 + i, "reason": ""}
            store.add_evaluation(cid, "a1", i + 1, "full", report, {0: 1e6 + i})
            record = Iteration("a1", i + 1, Verdict.PASS, Decision.REJECTED, cid, geomean_ns=1e6)
            store.record_iteration(record)


def _write(path: Path, agent: str, stop_at: float) -> None:
    with Store(path) as store:
        number = 0
        while time.time() < stop_at:
            number += 1
            cid = f"c-{agent}-{number:08d}"
            store.add_candidate(
                Candidate(cid, cid, f"Y = {number}\n", None, agent, "exploit", "f", "h", None, 0.0)
            )
            store.record_iteration(Iteration(agent, number, Verdict.FAIL, Decision.REJECTED, cid))
            time.sleep(WRITE_PAUSE_S)


def _read(path: Path, read_only: bool) -> float:
    started = time.perf_counter()
    with Store(path, read_only=read_only) as store:
        store.iterations(limit=64)
        store.beam()
        store.promotions()
        store.candidate("c-0000000042")
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=3000)
    parser.add_argument("--writers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "store.sqlite"
        _fill(path, args.candidates)
        stop_at = time.time() + 3600
        writers = [
            multiprocessing.Process(target=_write, args=(path, f"w{i}", stop_at), daemon=True)
            for i in range(args.writers)
        ]
        for writer in writers:
            writer.start()
        time.sleep(1.0)
        samples: dict[str, list[float]] = {"writer handle": [], "read-only handle": []}
        for _ in range(args.reads):
            for name, read_only in (("writer handle", False), ("read-only handle", True)):
                samples[name].append(_read(path, read_only))
        for writer in writers:
            writer.terminate()
    print(f"{args.reads} reads each, {args.candidates} candidates, {args.writers} writers")
    print(f"{'handle':18} {'median':>8} {'p95':>8} {'max':>8}  (ms)")
    for name, values in samples.items():
        values.sort()
        p95 = values[int(0.95 * (len(values) - 1))]
        print(f"{name:18} {statistics.median(values):8.2f} {p95:8.2f} {max(values):8.2f}")


if __name__ == "__main__":
    main()
