"""The caller's side of the judge: static checks, then a referee process group, then a report.

The referee (`referee_process.py`, started for this run or ahead of it) gets the run and a fresh
HMAC key on stdin and reports over a pipe only it holds; frames that fail the signature, a
referee that dies, or one that overruns the deadline all become verdicts. Whatever the candidate
left running is killed before `evaluate` returns.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from qrsup.kernels.judge.contestant_launch import ContestantLaunch
from qrsup.kernels.judge.device_turns import DeviceTurns, turn_file
from qrsup.kernels.judge.manifest import changed_files
from qrsup.kernels.judge.referee_process import RefereeProcess, read_output
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.judge.shipped_seed import start_seed_if_it_pays
from qrsup.kernels.judge.static_checks import (
    CONTEST_FORBIDDEN_WORDS,
    StaticCheck,
    check_candidate_file,
)
from qrsup.kernels.judge.triton_cache import tidy_kept_cache
from qrsup.kernels.schema import Progress, ProgressUpdate
from qrsup.kernels.suites import Spec, Suite
from qrsup.kernels.timing import STOPPING_RULES, inputs_per_repetition

MIN_FILE_LIMIT_BYTES = 256 * 2**20  # room for the candidate's log and a profile trace
TAMPERED_REASON = "the judge's own files changed since the session started"
SEEDING = "compiling the shipped kernels"


@dataclass(frozen=True)
class Timeouts:
    """Per-phase limits in seconds; `total` bounds the whole judge run."""

    prepare: float = 120.0
    load: float = 180.0
    first_call: float = 300.0
    call: float = 60.0
    inspect: float = 180.0
    total: float | None = None

    def to_dict(self) -> dict[str, float]:
        return {
            "prepare": self.prepare,
            "load": self.load,
            "first_call": self.first_call,
            "call": self.call,
            "inspect": self.inspect,
        }


@dataclass(frozen=True)
class JudgeConfig:
    """How to judge: which specs, where, how strictly."""

    suite: Suite
    mode: str = "test"  # "test": the suite's tests; "bench": its benchmarks; "all": both
    device: str = "cpu"
    seed: int | None = None
    rule: str = "contest"
    recheck: str = "sampled"  # or "all"
    memory_limit_bytes: int = 16 * 2**30
    forbidden_words: tuple[str, ...] = CONTEST_FORBIDDEN_WORDS
    timeouts: Timeouts = field(default_factory=Timeouts)
    device_turns: Path | None = None  # default: the GPU's turn file (device_turns.py)
    isolation: IsolationSettings = field(default_factory=IsolationSettings)
    manifest: Mapping[str, str] | None = None  # the judge's files as the session started
    # Compiled kernels kept across runs. A candidate can write what later runs load from here,
    # so only runs of code that trusts each other may share one: the same source, or sources
    # qrsup generated itself (the tuner's config points of the shipped kernel).
    triton_cache: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("test", "bench", "all"):
            raise ValueError(f"mode must be 'test', 'bench' or 'all', not {self.mode!r}")
        if self.rule not in STOPPING_RULES:
            raise ValueError(f"unknown stopping rule {self.rule!r}")
        if self.recheck not in ("sampled", "all"):
            raise ValueError(f"recheck must be 'sampled' or 'all', not {self.recheck!r}")

    def judged_suite(self) -> Suite:
        return self.suite if self.seed is None else self.suite.with_secret_seed(self.seed)

    def total_timeout_s(self) -> float:
        if self.timeouts.total is not None:
            return self.timeouts.total
        tests, benchmarks = self.judged_specs()
        rule = STOPPING_RULES[self.rule]
        per_spec = self.timeouts.first_call + 4 * self.timeouts.inspect
        per_benchmark = per_spec + rule.max_elapsed_ns / 1e9
        return 120 + self.timeouts.load + len(tests) * per_spec + len(benchmarks) * per_benchmark

    def max_file_bytes(self) -> int:
        """The contestant's file-size limit: its largest export of factors, or the floor."""
        tests, benchmarks = self.judged_specs()
        rule = STOPPING_RULES[self.rule]
        exports = [4 * s.export_floats(1) for s in tests]
        exports += [4 * s.export_floats(inputs_per_repetition(s, rule)) for s in benchmarks]
        return max([MIN_FILE_LIMIT_BYTES, *exports]) + MIN_FILE_LIMIT_BYTES

    def contestant_launch(self) -> ContestantLaunch:
        """The contestant's boundary for this run: all a referee needs before the candidate.
        (Its work directory is the referee's own, set when one starts.)"""
        return ContestantLaunch(
            device=self.device,
            work_dir=Path(),
            memory_limit_bytes=self.memory_limit_bytes,
            max_file_bytes=self.max_file_bytes(),
            isolation=self.isolation,
            triton_cache=self.triton_cache,
        )

    def judged_specs(self) -> tuple[tuple[Spec, ...], tuple[Spec, ...]]:
        """(tests, benchmarks) this mode runs, with the secret seed applied."""
        suite = self.judged_suite()
        tests = suite.tests if self.mode in ("test", "all") else ()
        benchmarks = suite.benchmarks if self.mode in ("bench", "all") else ()
        return tests, benchmarks


def evaluate(
    candidate: Path, config: JudgeConfig, on_progress: Progress | None = None
) -> JudgeReport:
    """Judge one candidate file; never raises for anything the candidate does."""
    return JudgeReport.from_dict(run_judge(candidate, config, on_progress))


def run_judge(
    candidate: Path,
    config: JudgeConfig,
    on_progress: Progress | None = None,
    extra: dict | None = None,
    keep: dict[str, Path] | None = None,
    warm: RefereeProcess | None = None,
) -> dict:
    """The referee's report as a dict; never raises for anything the candidate does.

    `extra` joins the referee's config (a profile run asks for its flow that way); `keep` maps
    names of files in the private work dir to where they are copied before it is removed.
    `warm`, a referee started ahead of time, judges this run if its boundary serves it; it is
    closed either way.
    """
    candidate = candidate.resolve()
    suite = config.judged_suite()
    static = check_candidate_file(candidate, config.forbidden_words)
    base = {
        "candidate": str(candidate),
        "source_sha256": hashlib.sha256(static.source.encode()).hexdigest() if static.ok else "",
        "suite": suite.name,
        "mode": config.mode,
        "seed": config.seed,
    }
    refused = _refused(static, config.manifest)
    if refused is not None:
        if warm is not None:
            warm.close()
        return {**refused, **base}
    specs = [spec for group in config.judged_specs() for spec in group]
    seeding = start_seed_if_it_pays(static.source, config.triton_cache, config.device, specs)
    if seeding is not None and on_progress is not None:
        on_progress(ProgressUpdate(phase=SEEDING))
    device = "GPU" if config.device.startswith("cuda") else "CPU"
    waiting = ProgressUpdate(phase=f"waiting for the {device}")
    on_wait = partial(on_progress, waiting) if on_progress else None
    turns = DeviceTurns(config.device_turns or turn_file(config.device, os.environ), on_wait)
    launch = config.contestant_launch()
    try:
        with turns.turn():
            if warm is not None and not warm.ready_for(launch):
                warm.close()
                warm = None
            referee = warm or RefereeProcess(launch)
            try:
                seeded = seeding.wait() if seeding is not None else None
                run = _run_config(candidate, static.source, config, extra or {})
                key = secrets.token_bytes(32)
                data = referee.judge(run, key, config.total_timeout_s(), on_progress)
                output = read_output(referee.work_dir / "candidate-output.log")
                for name, destination in (keep or {}).items():
                    _copy_out(referee.work_dir / name, destination)
            finally:
                referee.close()
    finally:
        if seeding is not None:
            seeding.stop()  # ended already, unless the run failed before it waited
        removed = tidy_kept_cache(config.triton_cache)
    if removed:
        data["triton_cache_removed"] = removed
    phases = data.setdefault("phases_s", {})
    # How long its referee had been loading before the run began: 0 for one started for it.
    phases["started_ahead"] = referee.handed_over - referee.started if referee is warm else 0.0
    if turns.path is not None:
        phases["device_wait"] = turns.waited_s
    if seeded is not None:
        phases["seed"] = seeded.seconds
        data["seeded"] = seeded.summary
    data.pop("type", None)
    return {**data, **base, "candidate_output": output}


def _refused(static: StaticCheck, manifest: Mapping[str, str] | None) -> dict | None:
    """The verdict reached before any process starts, if any: a file the static checks reject,
    or the judge's own files changed since the session started."""
    if not static.ok:
        return {"verdict": "rejected", "reason": static.reason}
    changed = changed_files(manifest) if manifest is not None else []
    if changed:
        reason = f"{TAMPERED_REASON}: {', '.join(changed)}; nothing was judged"
        return {"verdict": "tampered", "reason": reason}
    return None


def _run_config(candidate: Path, source: str, config: JudgeConfig, extra: dict) -> dict:
    """What the referee learns when the run starts: the candidate and how to judge it."""
    tests, benchmarks = config.judged_specs()
    return {
        **extra,
        "candidate": str(candidate),
        "source": source,
        "rule": config.rule,
        "recheck": config.recheck,
        "timeouts": config.timeouts.to_dict(),
        "tests": [_spec_dict(s) for s in tests],
        "benchmarks": [_spec_dict(s) for s in benchmarks],
    }


def _spec_dict(spec: Spec) -> dict:
    return {
        "batch": spec.batch,
        "n": spec.n,
        "cond": spec.cond,
        "case": spec.case,
        "seed": spec.seed,
    }


def _copy_out(source: Path, destination: Path) -> None:
    """Copy a regular file the run left (never a planted link), gzipped for a `.gz` name."""
    if source.is_file() and not source.is_symlink():
        destination.parent.mkdir(parents=True, exist_ok=True)
        opener = gzip.open if destination.suffix == ".gz" else open
        with open(source, "rb") as kept, opener(destination, "wb") as copy:
            shutil.copyfileobj(kept, copy)
