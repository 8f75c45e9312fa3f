"""A session's throughput, where its judge time went, and its best-so-far curve, as one JSON.

Usage: python scripts/loop_summary.py (--workspace W [--session default] | --store STORE)
Candidates per hour count iterations that reached the judge, over the time from the first
judge run's end to the last's; `seconds_per_judge_run` splits a run's wall into the referee's
start-up, calibration, loading, test specs and benchmark specs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrsup.agents.session import RunPaths
from qrsup.agents.store import Store
from qrsup.supervisor.progress_curve import NoFigures, progress_curve
from qrsup.supervisor.session_summary import summarize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--workspace", type=Path)
    where.add_argument("--store", type=Path, help="a store file brought back on its own")
    parser.add_argument("--session", default="default")
    args = parser.parse_args()
    path = args.store or RunPaths.of(args.workspace.resolve(), args.session).store
    with Store.reader(path) as store:
        evaluations, promotions = store.evaluations(), store.promotions()
        summary = summarize(evaluations, store.iterations()).to_dict()
    try:
        summary["curve"] = progress_curve(evaluations, promotions).summary()
    except NoFigures as exc:
        summary["curve"] = str(exc)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
