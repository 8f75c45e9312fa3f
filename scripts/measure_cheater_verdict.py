"""Where the side-queue cheater's verdict spends its time under the contest rule (issue 14 asks
for it in under 30 s): the judge's phases, both integrity attempts, and a timeline of progress.
Its compiled kernels are kept per source in a fresh directory, as `qrsup bench` keeps them: the
first run finds the shipped kernels it hides compiled into the new cache before it starts
(`seeded`, phase `seed`), and later runs find the cache as the first left it.

`python scripts/measure_cheater_verdict.py [--runs N]` on a GPU machine; prints one block a run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from qrsup.kernels.judge.runner import JudgeConfig, evaluate
from qrsup.kernels.judge.triton_cache import CacheChoice, per_source
from qrsup.kernels.schema import ProgressUpdate
from qrsup.kernels.suites import Spec, Suite

CHEATER = (
    Path(__file__).resolve().parents[1] / "tests" / "cheaters" / "hides_work_on_a_side_queue.py"
)
SUITE = Suite("hidden", tests=(), benchmarks=(Spec(8, 512, 1, "dense", 5),))


def _attempt(record: dict | None) -> dict[str, object] | None:
    if not record:
        return None
    keys = ("ok", "clock", "unaccounted_ns", "allowed_ns", "cpu_unaccounted_ns", "cpu_allowed_ns")
    return {key: record.get(key) for key in keys}


def run_once(cache: CacheChoice) -> dict[str, object]:
    started = time.monotonic()
    timeline: list[tuple[float, str]] = []

    def on_progress(update: ProgressUpdate) -> None:
        timeline.append((round(time.monotonic() - started, 2), update.describe()))

    config = JudgeConfig(
        suite=SUITE, mode="bench", device="cuda", rule="contest", triton_cache=cache(CHEATER)
    )
    report = evaluate(CHEATER, config, on_progress)
    spec = report.specs[0]
    integrity = spec.get("integrity") or {}
    return {
        "verdict": report.verdict,
        "first_call_s": spec.get("first_call_s"),
        "check_s": spec.get("check_s"),
        "repetitions": (spec.get("stats") or {}).get("runs"),
        "wall_s": round(time.monotonic() - started, 2),
        "phases_s": {key: round(value, 2) for key, value in report.phases_s.items()},
        "seeded": report.seeded,
        "first_attempt": _attempt(integrity.get("first_attempt")),
        "final": _attempt(integrity),
        "timeline": timeline,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2)
    with tempfile.TemporaryDirectory() as root:
        for _ in range(parser.parse_args().runs):
            print(json.dumps(run_once(per_source(Path(root))), indent=1), flush=True)


if __name__ == "__main__":
    main()
