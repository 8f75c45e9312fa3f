"""Judge runs with and without warm referees: the same stages on the same candidate, in turn.

Usage: python scripts/measure_warm_referees.py [--rounds 5] [--suite smoke] [--device cpu]
[--rule quick] [--gap 2] [--candidate kernels/candidates/fast_geqrf.py]

Each round judges the candidate's quick stage and then its full stage, as the loop does for a
promising candidate, with `--gap` seconds before each round standing for the loop's own work
(proposing, recording, committing). The full stage runs under `--rule` (quick by default: the
start-up cost is the same under every rule, and a shorter run shows it). Prints one JSON line
per mode: seconds per judge run from the caller's side, the referee's wall from the handover,
the part of that wall spent before the referee's first phase (its start-up, left to wait for),
and how long the referee had been loading before its run (`started_ahead`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from qrsup.agents.evaluation import Evaluator
from qrsup.kernels.executors.base import LocalExecutor
from qrsup.kernels.suites import get_suite

ROOT = Path(__file__).resolve().parent.parent


def measure(
    warm: bool, rounds: int, suite: str, device: str, rule: str, gap_s: float, path: Path
) -> dict:
    executor = LocalExecutor(warm=warm)
    evaluator = Evaluator(get_suite(suite), device, rule, executor=executor)
    caller, walls, startup, ahead, verdicts = [], [], [], [], []
    try:
        for _ in range(rounds):
            time.sleep(gap_s)
            for stage in (evaluator.quick, evaluator.full):
                started = time.monotonic()
                report = stage(path).report
                caller.append(time.monotonic() - started)
                walls.append(report.phases_s.get("wall", 0.0))
                # The referee's own phases start once it is up: the rest of the wall is start-up.
                startup.append(walls[-1] - report.phases_s.get("total", 0.0))
                ahead.append(report.phases_s.get("started_ahead", 0.0))
                verdicts.append(report.verdict)
    finally:
        executor.close()
    return {
        "warm": warm,
        "runs": len(caller),
        "verdicts": sorted(set(verdicts)),
        "gap_s": gap_s,
        "rule": rule,
        "caller_s_per_run": round(statistics.mean(caller), 2),
        "caller_s_median": round(statistics.median(caller), 2),
        "referee_wall_s_per_run": round(statistics.mean(walls), 2),
        "startup_in_wall_s": [round(s, 2) for s in startup],
        "started_ahead_s_mean": round(statistics.mean(ahead), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rule", default="quick")
    parser.add_argument("--gap", type=float, default=2.0)
    parser.add_argument("--candidate", type=Path, default=ROOT / "kernels/candidates/fast_geqrf.py")
    args = parser.parse_args()
    for warm in (False, True):
        result = measure(
            warm, args.rounds, args.suite, args.device, args.rule, args.gap, args.candidate
        )
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
