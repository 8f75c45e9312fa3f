"""Per benchmark spec of a `qrsup bench --json` report: the window's stretch and the CPU waits
excused in it, the referee's and the contestant's, beside the most a do-nothing window waited.

On an H200 beside one busy loop per core, a side-queue cheater passed because the contestant's
wait while launching was excused in its window. The branch `judge-window-wait-cap` excuses it
only up to the do-nothing maximum; these figures, from an honest bench and the cheater under the
same load, say whether that holds.

Where a spec was timed twice or failed, it also says, per attempt and kind of cycle, in what
share of the cycles a busy host's toll was taken out at all, and how long the contestant's other
threads ran outside the window (over their allowance, nothing is excused).

Usage: python scripts/window_waits.py REPORT.json [REPORT.json ...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path


def as_report(data: object) -> dict | None:
    """The judge report in a file's parsed JSON (`qrsup bench --json` wraps it), or None."""
    if isinstance(data, dict) and isinstance(data.get("report"), dict):
        data = data["report"]
    if isinstance(data, dict) and {"verdict", "specs"} <= data.keys():
        return data
    return None


def load_report(path: Path) -> dict:
    """The judge report in `path`, or a one-line exit."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: cannot read it ({type(error).__name__}: {error})") from None
    report = as_report(data)
    if report is None:
        raise SystemExit(f"{path}: not a judge report (no verdict and specs)")
    return report


def rows(path: Path) -> list[str]:
    report = load_report(path)
    ceiling = (report.get("calibration") or {}).get("contestant_window_wait_max_ns")
    lines = [f"{path.name}: {report['verdict']}, do-nothing window wait max {ms(ceiling)}"]
    for spec in report["specs"]:
        integrity = spec.get("integrity") or {}
        if spec["kind"] != "benchmark" or not integrity:
            continue
        waits = integrity.get("window_waits_ns") or {}
        stretch = (integrity.get("stretch_ns") or {}).get("window")
        lines.append(
            f"  {spec['label']:<22} {spec['status']:<6} window stretch {ms(stretch)}, "
            f"waits referee {ms(waits.get('referee'))} contestant {ms(waits.get('contestant'))}"
            f" (launching, not excused: {ms(waits.get('contestant_launching'))})"
        )
        first = integrity.get("first_attempt")
        if first or spec["status"] != "pass":
            attempts = (("first attempt", first), ("last attempt", integrity))
            lines += [f"    {name}: {_excusal(record)}" for name, record in attempts if record]
    return lines


def _excusal(record: dict) -> str:
    """In what share of the cycles a busy host's toll was taken out, and how long the
    contestant's other threads ran outside the window (the median), by kind of cycle."""
    excusal = record.get("excusal")
    if not excusal:
        return "no excusal record (a report from before it was kept)"
    shares, others = excusal.get("excused_share", {}), excusal.get("other_threads_ns", {})
    return "; ".join(
        f"{kind} cycles excused {shares[kind]:.0%}, other threads {ms(others.get(kind))}"
        for kind in ("plain", "exported")
        if kind in shares
    )


def ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:.3f} ms"


def print_reports(rows_of: Callable[[Path], list[str]], usage: str) -> None:
    """`rows_of` each report named on the command line, or the usage line without one."""
    if len(sys.argv) < 2:
        sys.exit(usage.strip().splitlines()[-1])
    for name in sys.argv[1:]:
        print("\n".join(rows_of(Path(name))))


if __name__ == "__main__":
    print_reports(rows, __doc__)
