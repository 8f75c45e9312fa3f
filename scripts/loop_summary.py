"""A session's throughput, where its judge time went, and its best-so-far curve, as one JSON.

Usage: python scripts/loop_summary.py (--workspace W [--session default] | --store STORE)
Candidates per hour count iterations that reached the judge, over the time from the first
judge run's end to the last's; `seconds_per_judge_run` splits a run's wall into the referee's
start-up, calibration, loading, test specs and benchmark specs.
"""

from __future__ import annotations

import argparse
import json

from qrsup.agents.store import Store
from qrsup.supervisor.progress_curve import NoFigures, progress_curve
from qrsup.supervisor.session_summary import summarize
from qrsup.supervisor.store_arguments import add_store_arguments, store_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_store_arguments(parser)
    args = parser.parse_args()
    with Store.reader(store_path(args)) as store:
        evaluations, promotions = store.evaluations(), store.promotions()
        summary = summarize(evaluations, store.iterations()).to_dict()
    try:
        summary["curve"] = progress_curve(evaluations, promotions).summary()
    except NoFigures as exc:
        summary["curve"] = str(exc)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
