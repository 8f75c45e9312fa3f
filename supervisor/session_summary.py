"""Where a session's judge time went, and how many candidates it bought per hour, from its store.

A judge run's wall is split by the referee's own phases: what comes before its first phase is
start-up (interpreters, torch, the device, the sandbox), then calibration, loading the
candidate, the test specs and the benchmark specs. Inside those, the candidate's timed calls
(mean × runs × calls per repetition, over every timed spec) are the only time spent on the
kernel itself; the rest of the wall is the judge's overhead.

The specs' own time (tests and benchmarks) is split further, because that is where the next
saving must come from: the correctness checks, the timed calls, the harness's repetition
cycles (fresh inputs, messages; each repetition costs its spec's calibrated cycle), the exports
of a benchmark spec's checked repetitions (each costs what calibration measured an export to add
to the cycle: on an H200 13 ms at 640×512, 190 ms when exports went through a file, where a plain
cycle is 3 ms), the first call of each spec (where compilation lands; reports before it was
recorded leave it in the rest), and the rest.

Outside the judge, each candidate may also have kept its loop waiting for its kernels to
compile (what a compile started during the previous judge run had not finished): the summary
gives the mean over the candidates whose records say, and the longest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from qrsup.kernels.schema import Evaluation, Iteration

PHASES = ("startup", "calibrate", "load", "tests", "benchmarks")


@dataclass(frozen=True)
class SessionSummary:
    minutes: float  # from the first evaluation's end to the last's
    candidates: int  # iterations that reached the judge
    judge_runs: int
    judge_wall_s: float
    timed_kernel_s: float
    phases_s: dict[str, float]  # summed over the judge runs
    warm_runs: int  # judge runs whose referee had been started ahead
    specs_s: dict[str, float]  # tests + benchmarks, split as the module's text says
    integrity: dict[str, int]  # see `_integrity_counts`
    compile_waits_s: tuple[float, ...] = ()  # per candidate, where its iteration recorded one

    @property
    def candidates_per_hour(self) -> float | None:
        return self.candidates / self.minutes * 60 if self.minutes > 0 else None

    @property
    def judge_runs_per_hour(self) -> float | None:
        return self.judge_runs / self.minutes * 60 if self.minutes > 0 else None

    @property
    def overhead_share(self) -> float | None:
        """The judge's wall outside the candidate's timed calls, as a share of that wall."""
        return 1 - self.timed_kernel_s / self.judge_wall_s if self.judge_wall_s else None

    @property
    def overhead_share_beyond_checks(self) -> float | None:
        """The same with the correctness checks counted as work too: issue 14's measure of the
        judge's overhead (its wall outside timed windows and checks)."""
        if not self.judge_wall_s:
            return None
        return 1 - (self.timed_kernel_s + self.specs_s["checks"]) / self.judge_wall_s

    def to_dict(self) -> dict[str, object]:
        per_run = max(self.judge_runs, 1)
        return {
            "minutes": round(self.minutes, 2),
            "candidates": self.candidates,
            "candidates_per_hour": _round(self.candidates_per_hour),
            "judge_runs": self.judge_runs,
            "judge_runs_per_hour": _round(self.judge_runs_per_hour),
            "judge_wall_s": round(self.judge_wall_s, 1),
            "timed_kernel_s": round(self.timed_kernel_s, 1),
            "overhead_share": _round(self.overhead_share, 3),
            "overhead_share_beyond_checks": _round(self.overhead_share_beyond_checks, 3),
            "seconds_per_judge_run": {
                name: round(total / per_run, 2) for name, total in self.phases_s.items()
            },
            "seconds_per_judge_run_in_specs": {
                name: round(total / per_run, 2) for name, total in self.specs_s.items()
            },
            "warm_runs": self.warm_runs,
            "integrity": self.integrity,
            "compile_wait_s": {
                "candidates": len(waits := self.compile_waits_s),
                "mean": round(sum(waits) / len(waits), 2) if waits else None,
                "longest": round(max(waits), 1) if waits else None,
            },
        }


def summarize(evaluations: Iterable[Evaluation], iterations: Iterable[Iteration]) -> SessionSummary:
    runs = sorted(evaluations, key=lambda e: e.created_at)
    phases = dict.fromkeys((*PHASES, "other"), 0.0)
    parts = ("checks", "timed", "harness cycles", "exports", "first calls", "rest")
    in_specs = dict.fromkeys(parts, 0.0)
    wall = kernel = 0.0
    warm = 0
    for run in runs:
        recorded = run.report.get("phases_s", {})
        run_wall = recorded.get("wall", 0.0)
        wall += run_wall
        warm += recorded.get("started_ahead", 0.0) > 0
        inside = {name: recorded.get(name, 0.0) for name in PHASES[1:]}
        startup = max(0.0, run_wall - recorded.get("total", run_wall))
        phases["startup"] += startup
        for name, seconds in inside.items():
            phases[name] += seconds
        phases["other"] += max(0.0, run_wall - startup - sum(inside.values()))
        specs = run.report.get("specs", [])
        timed = sum(_timed_s(spec) for spec in specs)
        kernel += timed
        split = {
            "checks": sum(spec.get("check_s", 0.0) for spec in specs),
            "timed": timed,
            "harness cycles": sum(_cycles_s(spec) for spec in specs),
            "exports": sum(_exports_s(spec) for spec in specs),
            "first calls": sum(spec.get("first_call_s", 0.0) for spec in specs),
        }
        split["rest"] = max(0.0, inside["tests"] + inside["benchmarks"] - sum(split.values()))
        for name, seconds in split.items():
            in_specs[name] += seconds
    minutes = (runs[-1].created_at - runs[0].created_at) / 60 if len(runs) > 1 else 0.0
    iterations = list(iterations)
    candidates = sum(1 for i in iterations if i.evaluated)
    integrity = _integrity_counts(runs)
    waits = tuple(i.compile_wait_s for i in iterations if i.compile_wait_s is not None)
    return SessionSummary(
        minutes, candidates, len(runs), wall, kernel, phases, warm, in_specs, integrity, waits
    )


def _integrity_counts(runs: list[Evaluation]) -> dict[str, int]:
    """Verdicts of the timing-integrity check: the candidates and specs it failed, and the
    specs it missed once and timed again in a fresh contestant (passed or not), which an honest
    loop should rarely need."""
    failed: set[str] = set()
    counts = {"candidates_failed": 0, "specs_failed": 0, "specs_timed_again": 0}
    for run in runs:
        for spec in run.report.get("specs", []):
            if spec.get("gate") == "integrity":
                counts["specs_failed"] += 1
                failed.add(run.candidate_id)
            if (spec.get("integrity") or {}).get("first_attempt"):
                counts["specs_timed_again"] += 1
    counts["candidates_failed"] = len(failed)
    return counts


def _timed_s(spec: dict) -> float:
    stats = spec.get("stats")
    return stats["mean_ns"] * stats["runs"] * spec["count"] / 1e9 if stats else 0.0


def _cycles_s(spec: dict) -> float:
    """The harness's share of a timed spec's repetitions: its calibrated do-nothing cycle each."""
    stats, integrity = spec.get("stats"), spec.get("integrity") or {}
    cycle_ns = (integrity.get("baseline") or {}).get("cycle_ns")
    return stats["runs"] * cycle_ns / 1e9 if stats and cycle_ns else 0.0


def _exports_s(spec: dict) -> float:
    """What a benchmark spec's checked repetitions cost beyond their cycles: one export each,
    at the extra cost its calibration measured (test specs have no calibration: left in the
    rest)."""
    baseline = (spec.get("integrity") or {}).get("baseline") or {}
    extra_ns = baseline.get("export_cycle_ns", 0.0) - baseline.get("cycle_ns", 0.0)
    return spec.get("checks", 0) * max(0.0, extra_ns) / 1e9


def _round(value: float | None, digits: int = 1) -> float | None:
    return round(value, digits) if value is not None else None
