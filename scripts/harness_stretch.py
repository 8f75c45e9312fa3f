"""Per benchmark spec of `qrsup bench --json` reports: what the do-nothing cycles' preparation and
inspection cost, how much longer the candidate's ran, how much of its allowance the wall-clock
accounting used, and which CPUs calibration and timing ended on; for each attempt of a spec
timed twice, failed, or past half its allowance.

On an H100 an honest 20×32 spec's harness ran either about as long as calibrated or 1.7 times
as long, and failed in the second case (docs/benchmarks.md, 2026-12-07, twenty-eighth session):
these rows, over many reports, say which runs were which.

Usage: python scripts/harness_stretch.py REPORT.json [REPORT.json ...]
"""

from __future__ import annotations

from pathlib import Path

from window_waits import load_report, ms, print_reports

SHOWN_SHARE = 0.5  # an attempt past this share of its allowance is shown even when it passed


def rows(path: Path) -> list[str]:
    report = load_report(path)
    lines = [f"{path.name}: {report['verdict']}"]
    for spec in report["specs"]:
        last = spec.get("integrity") or {}
        if spec["kind"] != "benchmark" or not last:
            continue
        first = last.get("first_attempt")
        attempts = [("first", first), ("last", last)] if first else [("only", last)]
        if first or spec["status"] != "pass" or _share(last) > SHOWN_SHARE:
            lines += [f"  {spec['label']:<22} {name:<5} {_attempt(a)}" for name, a in attempts]
    return lines


def _share(record: dict) -> float:
    allowed = record.get("allowed_ns") or 0.0
    return record.get("unaccounted_ns", 0.0) / allowed if allowed else 0.0


def _attempt(record: dict) -> str:
    base, stretch = record.get("baseline") or {}, record.get("stretch_ns") or {}
    phases = ", ".join(
        f"{phase} {ms(base.get(f'{phase}_ns'))} + {ms(stretch.get(phase))}"
        for phase in ("prepare", "inspect")
    )
    cpus = record.get("cpus") or {}
    placed = f"cpus {cpus.get('calibration', '?')} → {cpus.get('timed', '?')}" if cpus else ""
    verdict = "ok" if record.get("ok") else "FAIL"
    window = ms(stretch.get("window"))
    count, beside_ns = record.get("do_nothing_beside") or 0, record.get("beside_ns") or {}
    beside = ""
    if count:
        ran = ", ".join(f"{phase} {ms(beside_ns.get(phase))}" for phase in ("prepare", "inspect"))
        beside = f"{count} do-nothing beside ({ran}), taken out {ms(base.get('fresh_ns'))}; "
    return f"{verdict} share {_share(record):.2f}; {phases}, window + {window}; {beside}{placed}"


if __name__ == "__main__":
    print_reports(rows, __doc__)
