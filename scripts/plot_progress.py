"""Plot a session's best full-stage geomean against time, from its store, as a PNG.

Usage: python scripts/plot_progress.py (--workspace W [--session default] | --store S) --out PNG
Prints the curve's summary (start, best, gain, promotions) as one JSON line. Needs matplotlib
(`pip install -e '.[plot]'`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrsup.agents.store import Store
from qrsup.supervisor.progress_curve import ProgressCurve, progress_curve
from qrsup.supervisor.store_arguments import add_store_arguments, store_path


def plot(curve: ProgressCurve, out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 4.5), dpi=120)
    minutes = [p.minutes for p in curve.best]
    millis = [p.geomean_ns / 1e6 for p in curve.best]
    axes.step(
        [*minutes, curve.end_minutes], [*millis, millis[-1]], where="post", label="best so far"
    )
    if curve.promotions:
        axes.plot(
            [p.minutes for p in curve.promotions],
            [p.geomean_ns / 1e6 for p in curve.promotions],
            "o",
            label="promoted",
        )
    axes.axhline(curve.start.geomean_ns / 1e6, linestyle=":", color="grey", label="start")
    axes.set_xlabel("minutes since the first evaluation")
    axes.set_ylabel("geomean (ms)")
    axes.set_title(f"{title}: best full-stage figure {curve.gain:.1%} below the start")
    axes.legend()
    figure.tight_layout()
    figure.savefig(out)
    pyplot.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_store_arguments(parser)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with Store.reader(store_path(args)) as store:
        curve = progress_curve(store.evaluations(), store.promotions())
    plot(curve, args.out, f"session {args.session}")
    print(json.dumps(curve.summary()))


if __name__ == "__main__":
    main()
