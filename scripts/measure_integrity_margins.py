"""How close honest candidates come to the timing-integrity allowance, and whether cheaters fail:
each file judged `--runs` times on a suite's benchmark specs (its tests left out), alone or beside
one busy loop per CPU core (`--busy`). A run prints its verdict and, per spec, the accounting
nearest its allowance as `share statistic` (a share above 1 fails); the summary gives each file's
verdicts and its closest pass.

`python scripts/measure_integrity_margins.py FILE... [--runs 8] [--suite smoke] [--device cpu]
[--rule quick] [--busy]`
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from qrsup.kernels.judge.runner import JudgeConfig, evaluate
from qrsup.kernels.suites import get_suite


@contextmanager
def busy_host(on: bool) -> Iterator[None]:
    """One spinning process per CPU core while the block runs."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range((os.cpu_count() or 1) if on else 0)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def shares(report_specs: list[dict]) -> list[tuple[float, str]]:
    """Each benchmarked spec's closest call: its unaccounted time over its allowance."""
    found = []
    for spec in report_specs:
        integrity = spec.get("integrity") or {}
        allowed = integrity.get("allowed_ns") or 0.0
        if allowed > 0:
            found.append((integrity["unaccounted_ns"] / allowed, integrity.get("statistic", "")))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rule", default="quick", choices=["quick", "contest"])
    parser.add_argument("--busy", action="store_true", help="one busy loop per CPU core")
    args = parser.parse_args()
    suite = dataclasses.replace(get_suite(args.suite), tests=())
    config = JudgeConfig(suite=suite, mode="bench", device=args.device, rule=args.rule)
    summary: dict[str, tuple[Counter, float]] = {}
    with busy_host(args.busy):
        for path in args.files:
            verdicts, closest = Counter(), 0.0
            for run in range(args.runs):
                report = evaluate(path, config)
                found = shares(report.specs)
                verdicts[report.verdict] += 1
                if report.verdict == "pass":
                    closest = max([closest, *(share for share, _ in found)])
                calls = " ".join(f"{share:.2f} {statistic}" for share, statistic in found)
                print(f"{path.name} run {run}: {report.verdict} | {calls}", flush=True)
            summary[path.name] = (verdicts, closest)
    print(f"suite {args.suite}, device {args.device}, rule {args.rule}, busy {args.busy}")
    for name, (verdicts, closest) in summary.items():
        counts = ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
        print(f"{name}: {counts}; closest pass {closest:.2f} of the allowance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
