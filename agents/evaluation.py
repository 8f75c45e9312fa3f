"""The loop's use of the judge: a quick stage, a full stage, and interleaved re-timing.

quick: every test spec and every other benchmark spec, quick stopping rule; for a change
confined to some shape classes, their specs alone (affected_specs.py).
reference: every benchmark spec, quick stopping rule, no tests: the incumbent's figures that
quick stages are compared with.
full: every benchmark spec, the session's rule; for a change confined to some shape classes,
their specs alone, with the parent's full-stage figures standing for the rest (`Inherited`).
interleaved: incumbent and challenger timed alternately on fresh secret seeds, so a decision to
promote rests on a gain larger than the noise measured in the same run.
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.affected_specs import AffectedSpecs
from qrsup.agents.judge_executor import session_executor
from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.agents.settings import load_settings
from qrsup.agents.store import Store
from qrsup.kernels.executors.base import LOCAL, JudgeExecutor
from qrsup.kernels.judge.manifest import load_manifest, save_manifest, take_manifest
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.runner import JudgeConfig
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.judge.triton_cache import CacheChoice, per_source
from qrsup.kernels.schema import Inherited, Progress
from qrsup.kernels.suites import Spec, Suite, get_suite
from qrsup.kernels.timing import geomean

NOISE_FLOOR = 0.01


@dataclass(frozen=True)
class StageResult:
    """A judge report with its benchmark means mapped back to the full suite's indices (and,
    for a focused full stage, the parent's means on the specs it did not time)."""

    stage: str
    report: JudgeReport
    spec_means_ns: dict[int, float]
    inherited: Inherited | None = None

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def geomean_ns(self) -> float | None:
        """Over every spec the stage stands for, inherited ones included."""
        if self.inherited is None or not self.passed:
            return self.report.geomean_ns
        return geomean(list(self.spec_means_ns.values()))

    def geomean_over(self, indices: list[int]) -> float | None:
        return geomean_over(self.spec_means_ns, indices)

    def standing_for(self, base_id: str, base_means: Mapping[int, float]) -> StageResult:
        """Its figures over the whole suite: `base_id`'s stand for the specs it did not time."""
        others = tuple(i for i in base_means if i not in self.spec_means_ns)
        means = {**{i: base_means[i] for i in others}, **self.spec_means_ns}
        return StageResult(self.stage, self.report, means, Inherited(base_id, others))

    def store(self, store: Store, candidate_id: str, agent: str, iteration: int) -> None:
        store.add_evaluation(
            candidate_id,
            agent,
            iteration,
            self.stage,
            self.report.to_dict(),
            self.spec_means_ns,
            self.inherited,
            self.geomean_ns,
        )


def geomean_over(means: Mapping[int, float], indices: list[int]) -> float | None:
    """The geometric mean over some specs; None unless every one of them was timed."""
    if not indices or any(i not in means for i in indices):
        return None
    return geomean([means[i] for i in indices])


@dataclass(frozen=True)
class Comparison:
    """Interleaved re-timing: geomeans of each round over the re-timed specs, the gain and the
    noise it must beat there.

    A change confined to some specs (affected_specs.py) is re-timed on those alone: the others
    run identical kernels, so timing them adds noise and no signal. `share` is their part of
    the suite's specs, and the suite-level figures follow from it: the geomean over the whole
    suite moves by the re-timed specs' ratio to the power of their share."""

    incumbent_ns: list[float]
    challenger_ns: list[float]
    gain: float
    noise: float
    specs: tuple[int, ...] = ()  # the benchmark specs re-timed; empty: all of them
    share: float = 1.0
    incumbent_run: StageResult | None = None
    """The incumbent's per-spec means over the rounds, with its last round's report: fresher
    than the figures it was judged by before, and taken beside the challenger's."""

    @property
    def significant(self) -> bool:
        return self.gain > self.noise

    @property
    def suite_gain(self) -> float:
        return 1.0 - (1.0 - self.gain) ** self.share

    @property
    def suite_noise(self) -> float:
        return noise_over_share(self.noise, self.share)

    def describe(self, verdict: str) -> str:
        """`gain … beyond|within noise …`, with the re-timed specs' own figures when focused."""
        line = f"gain {self.suite_gain:.1%} {verdict} noise {self.suite_noise:.1%}"
        if self.share < 1.0:
            specs = ", ".join(str(i) for i in self.specs)
            line += f" (re-timed on specs {specs}: {self.gain:.1%} against {self.noise:.1%})"
        return line

    def to_dict(self) -> dict[str, object]:
        """Suite-level gain and noise, as a promotion's evidence shows them, and the re-timed
        specs' own."""
        return {
            "incumbent_ns": self.incumbent_ns,
            "challenger_ns": self.challenger_ns,
            "gain": self.suite_gain,
            "noise": self.suite_noise,
            "specs": list(self.specs),
            "share": self.share,
            "specs_gain": self.gain,
            "specs_noise": self.noise,
        }


@dataclass(frozen=True)
class RetimingFailure:
    """A re-timing run that failed, and whose it was: `incumbent` or `challenger`."""

    side: str
    result: StageResult


class Evaluator:
    """Runs the stages for one suite and device, on this host or through `executor`."""

    def __init__(
        self,
        suite: Suite,
        device: str,
        rule: str,
        isolation: IsolationSettings | None = None,
        manifest: Mapping[str, str] | None = None,
        triton_cache: CacheChoice | None = None,
        executor: JudgeExecutor = LOCAL,
    ) -> None:
        self.suite = suite
        self.device = device
        self.rule = rule
        self.isolation = isolation or IsolationSettings()
        self.manifest = manifest
        self.triton_cache = triton_cache
        self.executor = executor
        self.quick_indices = list(range(0, len(suite.benchmarks), 2))

    @classmethod
    def for_session(
        cls,
        paths: RunPaths,
        session: SessionConfig,
        device: str,
        cache: CacheChoice | None = None,
        executor: JudgeExecutor | None = None,
    ) -> Evaluator:
        """The session's suite, rule and executor, the workspace's judge settings, and the
        judge's files as they were when the session started (taken now for a session that
        predates that). Compiled kernels are kept per candidate source unless `cache` says
        otherwise."""
        if not paths.judge_manifest.exists():
            save_manifest(paths.judge_manifest, take_manifest())
        return cls(
            get_suite(session.suite),
            device,
            session.rule,
            load_settings(session.workspace).judge,
            load_manifest(paths.judge_manifest),
            cache or per_source(paths.triton_caches),
            executor or session_executor(paths, session),
        )

    def _config(
        self, path: Path, suite: Suite, mode: str, rule: str, seed: int | None = None
    ) -> JudgeConfig:
        return JudgeConfig(
            suite=suite,
            mode=mode,
            device=self.device,
            rule=rule,
            seed=seed,
            isolation=self.isolation,
            manifest=self.manifest,
            triton_cache=self.cache_for(path),
        )

    def cache_for(self, path: Path) -> Path | None:
        """Where the judge keeps this candidate's compiled kernels between runs."""
        return self.triton_cache(path) if self.triton_cache else None

    def quick(
        self, path: Path, progress: Progress | None = None, focus: AffectedSpecs | None = None
    ) -> StageResult:
        if focus is None:
            return self._quick_rule(path, self.suite.tests, self.quick_indices, progress)
        return self._quick_rule(path, self._focus_tests(focus), list(focus.benchmarks), progress)

    def judged_specs(self, focus: AffectedSpecs | None = None) -> tuple[Spec, ...]:
        """The specs a candidate's stages can run its own kernels on: with a focus, the focus
        alone (the other specs run its parent's kernels)."""
        if focus is None:
            return self.suite.tests + self.suite.benchmarks
        benchmarks = tuple(self.suite.benchmarks[i] for i in focus.benchmarks)
        return self._focus_tests(focus) + benchmarks

    def _focus_tests(self, focus: AffectedSpecs) -> tuple[Spec, ...]:
        return tuple(self.suite.tests[i] for i in focus.tests)

    def reference(self, path: Path, progress: Progress | None = None) -> StageResult:
        """Recorded as a quick stage: the same rule, every benchmark spec, no tests."""
        indices = list(range(len(self.suite.benchmarks)))
        return self._quick_rule(path, (), indices, progress)

    def _quick_rule(
        self,
        path: Path,
        tests: tuple[Spec, ...],
        indices: list[int],
        progress: Progress | None,
    ) -> StageResult:
        subset = Suite(
            name=f"{self.suite.name}-quick",
            tests=tests,
            benchmarks=tuple(self.suite.benchmarks[i] for i in indices),
        )
        config = self._config(path, subset, "all" if tests else "bench", "quick")
        report = self.executor.evaluate(path, config, progress)
        means = {indices[i]: m for i, m in report.spec_means_ns().items()}
        return StageResult("quick", report, means)

    def full(
        self,
        path: Path,
        progress: Progress | None = None,
        seed: int | None = None,
        benchmarks: Sequence[int] = (),
    ) -> StageResult:
        """Every benchmark spec under the session's rule; `benchmarks`, those alone."""
        indices = list(benchmarks) or list(range(len(self.suite.benchmarks)))
        chosen = tuple(self.suite.benchmarks[i] for i in indices)
        suite = Suite(name=self.suite.name, tests=(), benchmarks=chosen)
        report = self.executor.evaluate(
            path, self._config(path, suite, "bench", self.rule, seed), progress
        )
        means = {indices[i]: m for i, m in report.spec_means_ns().items()}
        return StageResult("full", report, means)

    def focused_full(
        self,
        path: Path,
        focus: AffectedSpecs,
        parent_id: str,
        parent_means: Mapping[int, float],
        progress: Progress | None = None,
    ) -> StageResult:
        """The full stage on the specs a change reaches, the parent's figures standing for the
        others; every spec timed when the parent lacks a figure for one of them."""
        others = tuple(i for i in range(len(self.suite.benchmarks)) if i not in focus.benchmarks)
        if any(i not in parent_means for i in others):
            return self.full(path, progress)
        timed = self.full(path, progress, benchmarks=focus.benchmarks)
        if not timed.passed:
            return timed
        return timed.standing_for(parent_id, {i: parent_means[i] for i in others})

    def revalidate(self, path: Path, progress: Progress | None = None) -> StageResult:
        """Every test, hardening case and benchmark spec on a fresh secret seed: the gate before
        a promotion."""
        config = self._config(path, self.suite.hardened(), "all", self.rule, secrets.randbits(31))
        report = self.executor.evaluate(path, config, progress)
        return StageResult("revalidate", report, report.spec_means_ns())

    def interleaved(
        self,
        incumbent: Path,
        challenger: Path,
        rounds: int = 2,
        progress: Progress | None = None,
        benchmarks: Sequence[int] = (),
    ) -> Comparison | RetimingFailure:
        """Alternate incumbent and challenger on `benchmarks` (default: all); a failing run is
        returned instead of a comparison."""
        times: dict[str, list[float]] = {"incumbent": [], "challenger": []}
        incumbent_runs: list[StageResult] = []
        for _ in range(rounds):
            seed = secrets.randbits(31)
            for name, path in (("incumbent", incumbent), ("challenger", challenger)):
                result = self.full(path, progress, seed=seed, benchmarks=benchmarks)
                if not result.passed or result.report.geomean_ns is None:
                    return RetimingFailure(name, result)
                times[name].append(result.report.geomean_ns)
                if name == "incumbent":
                    incumbent_runs.append(result)
        inc, cha = times["incumbent"], times["challenger"]
        noise = max(NOISE_FLOOR, _spread(inc), _spread(cha))
        gain = 1.0 - geomean(cha) / geomean(inc)
        share = len(benchmarks) / len(self.suite.benchmarks) if benchmarks else 1.0
        means = {
            spec: statistics.fmean(run.spec_means_ns[spec] for run in incumbent_runs)
            for spec in incumbent_runs[0].spec_means_ns
        }
        run = StageResult("full", incumbent_runs[-1].report, means)
        return Comparison(inc, cha, gain, noise, tuple(benchmarks), share, run)


def noise_over_share(noise: float, share: float) -> float:
    """The suite geomean's noise when only a `share` of its specs vary, each by `noise`: the
    others cancel, and the geomean moves by the varying specs' ratio to the power of their
    share."""
    return (1.0 + noise) ** share - 1.0


def _spread(values: list[float]) -> float:
    """Relative range of repeated measurements of the same candidate."""
    if len(values) < 2:
        return 0.0
    return (max(values) - min(values)) / min(values)
