"""How often, across many judge reports, a candidate's preparations ran long against the do-nothing
cycles calibrated for them: per device and benchmark spec, the calibrated and the timed
preparation (10th, 50th and 90th percentiles over every attempt) and how many attempts ran
`SLOW` times the calibration or more.

On an H100 an honest 20×32 spec's preparation ran 1.7 times its calibration in some runs and
failed timing integrity (docs/benchmarks.md, 2026-12-07): this says whether that is one machine's
trait or the judge's, and on which specs.

Every *.json below a named folder is read; files that are not judge reports are skipped.

Usage: python scripts/stretch_census.py FOLDER_OR_REPORT [...]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from window_waits import as_report

SLOW = 1.4

Key = tuple[str, str]  # device, spec label


def reports(names: list[str]) -> list[dict]:
    """The judge reports among the named files and the *.json files below the named folders."""
    paths = [p for name in names for p in _files(Path(name))]
    found = []
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        report = as_report(data)
        if report is not None:
            found.append(report)
    return found


def _files(path: Path) -> list[Path]:
    return sorted(path.rglob("*.json")) if path.is_dir() else [path]


def preparations(found: list[dict]) -> dict[Key, list[tuple[float, float]]]:
    """(calibrated, timed) preparation in ms of every attempt, by device and spec."""
    census: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for report in found:
        device = report.get("device")
        name = device.get("name", "?") if isinstance(device, dict) else str(device)
        for spec in report["specs"]:
            last = spec.get("integrity") or {}
            for attempt in (last, last.get("first_attempt") or {}):
                calibrated = (attempt.get("baseline") or {}).get("prepare_ns")
                stretch = (attempt.get("stretch_ns") or {}).get("prepare")
                if calibrated and stretch is not None:
                    pair = (calibrated / 1e6, (calibrated + stretch) / 1e6)
                    census[(name, spec["label"])].append(pair)
    return census


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    return " ".join(f"{ordered[int(q * (len(ordered) - 1))]:6.2f}" for q in (0.1, 0.5, 0.9))


def main(names: list[str]) -> None:
    if not names:
        sys.exit(__doc__.strip().splitlines()[-1])
    if missing := [name for name in names if not Path(name).exists()]:
        sys.exit(f"no such file or folder: {', '.join(missing)}")
    census = preparations(reports(names))
    print(f"{'device':<24}{'spec':<24}{'n':>5}  calibrated p10/50/90  timed p10/50/90  ≥{SLOW}×")
    for (device, label), pairs in sorted(census.items()):
        slow = sum(timed >= SLOW * calibrated for calibrated, timed in pairs)
        calibrated = _quantiles([c for c, _ in pairs])
        timed = _quantiles([t for _, t in pairs])
        print(f"{device[:23]:<24}{label:<24}{len(pairs):>5}  {calibrated}  {timed}  {slow:>4}")


if __name__ == "__main__":
    main(sys.argv[1:])
