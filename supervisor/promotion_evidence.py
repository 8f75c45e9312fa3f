"""What a person sees before promoting: the diff against the incumbent, the measured gain with
its noise band, and the correctness evidence (specs passed, outputs re-checked, seeds).

Read from the store and the agents' `noise` events on the caller's thread; no Textual here, so
the command line prints the same lines the TUI's dialog shows.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.records import format_ms
from qrsup.agents.session_noise import DEFAULT_NOISE, latest_suite_noise, noise_events
from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Evaluation

STAGES = ("quick", "full", "revalidate")
ASKS_AGAIN = "a slower figure asks again before anything is committed"


@dataclass(frozen=True)
class PromotionEvidence:
    """The case for one candidate against the incumbent."""

    candidate: Candidate
    incumbent: Candidate | None
    noise: float
    noise_source: str
    stages: tuple[str, ...]
    """One line per judge run of the candidate: verdict, specs, checks, seed, rule."""
    diff: str

    @property
    def gain(self) -> float | None:
        """Fraction faster than the incumbent (negative: slower), full-stage figures."""
        new, old = self.candidate.geomean_ns, self.incumbent.geomean_ns if self.incumbent else None
        return 1 - new / old if new and old else None

    def lines(self, if_slower: str = ASKS_AGAIN) -> list[str]:
        """The evidence in a few lines, diff excluded; `if_slower` says what a revalidation
        measured slower than the incumbent leads to where these lines are shown."""
        c, inc = self.candidate, self.incumbent
        lines = [f"{c.id} by {c.agent} ({c.role}): {c.hypothesis}"]
        if inc is None:
            lines.append("no incumbent yet")
        else:
            lines.append(f"against the incumbent {inc.id}")
        gain = self.gain
        if gain is not None and inc is not None:
            verdict = "beyond the noise" if gain > self.noise else "within the noise"
            if gain < -self.noise:
                verdict = "slower beyond the noise"
            faster = f"{gain:.1%} faster" if gain >= 0 else f"{-gain:.1%} slower"
            lines.append(
                f"gain: {format_ms(c.geomean_ns)} vs {format_ms(inc.geomean_ns)}, {faster}; "
                f"noise band ±{self.noise:.1%} ({self.noise_source}): {verdict}"
            )
            lines.append(f"per spec: {_per_spec(c, inc)}")
        lines += self.stages or ["no judge run of it is recorded"]
        lines.append(
            "on confirming: revalidated on every test and benchmark spec with a fresh secret "
            f"seed; {if_slower}"
        )
        return lines

    def text(self) -> str:
        return "\n".join(self.lines())


def read_evidence(
    store_path: Path, events: Iterable[Path], candidate_id: str, session: str
) -> PromotionEvidence | str:
    """The evidence for `candidate_id`, or why there is none."""
    with Store.reader(store_path) as store:
        candidate = store.candidate(candidate_id)
        if candidate is None:
            return f"no candidate {candidate_id!r} in session {session}"
        incumbent = store.candidate(store.incumbent_id() or "")
        runs = [_stage_line(evaluation) for evaluation in store.evaluations(candidate_id)]
    noise, source = noise_band(events, candidate_id)
    old = incumbent.source if incumbent else ""
    diff = "\n".join(
        difflib.unified_diff(
            old.splitlines(),
            candidate.source.splitlines(),
            fromfile=f"incumbent {incumbent.id}" if incumbent else "(no incumbent)",
            tofile=candidate_id,
            n=2,
            lineterm="",
        )
    )
    return PromotionEvidence(candidate, incumbent, noise, source, tuple(r for r in runs if r), diff)


def noise_band(events: Iterable[Path], candidate_id: str) -> tuple[float, str]:
    """The noise measured when this candidate was re-timed, else the session's latest over a
    whole suite, else the loop's assumed default."""
    noise = list(noise_events(events))  # read once for both
    own = [e for e in noise if e.get("candidate_id") == candidate_id]
    if own:
        return float(own[-1]["noise"]), "measured in its interleaved re-timing"
    latest = latest_suite_noise(noise)
    if latest is not None:
        of = latest.get("candidate_id")
        return float(latest["noise"]), f"the session's latest re-timing, of {of}"
    return DEFAULT_NOISE, "assumed: nothing re-timed yet"


def _stage_line(evaluation: Evaluation) -> str:
    stage, report = evaluation.stage, evaluation.report
    specs: Sequence[dict] = [s for s in report.get("specs") or [] if isinstance(s, dict)]
    tests = [s for s in specs if s.get("kind") == "test"]
    benchmarks = [s for s in specs if s.get("kind") == "benchmark"]
    checks = sum(int(s.get("checks") or 0) for s in specs)
    parts = [f"{stage}: {evaluation.verdict}"]
    if tests:
        passed = sum(1 for s in tests if s.get("status") == "pass")
        parts.append(f"{passed}/{len(tests)} test specs passed")
    if benchmarks:
        timed = sum(1 for s in benchmarks if s.get("status") == "pass")
        parts.append(f"{timed}/{len(benchmarks)} benchmark specs")
    if checks:
        parts.append(f"{checks} outputs checked (re-checks {report.get('recheck') or '?'})")
    for key, label in (("seed", "seed"), ("rule", "rule")):
        if report.get(key) is not None and report.get(key) != "":
            parts.append(f"{label} {report[key]}")
    if stage not in STAGES and len(parts) == 1:
        return ""
    return " · ".join(parts)


def _per_spec(candidate: Candidate, incumbent: Candidate) -> str:
    mine, theirs = candidate.spec_means_ns or {}, incumbent.spec_means_ns or {}
    shown = []
    for index in sorted(mine):
        if theirs.get(index):
            change = mine[index] / theirs[index] - 1
            shown.append(f"{index}: {mine[index] / 1e6:.4g} ms ({change:+.1%})")
    return ", ".join(shown) or "—"
