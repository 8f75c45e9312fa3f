"""The referee: the trusted judge process. It owns inputs, checks, clocks and the report.

Run as `python -m kernels.judge.referee REPORT_FD` with a JSON config line on stdin. No candidate
code ever runs here; the contestant is a child in its own process group, and nothing it sends is
unpickled or believed without a check.

Caching cannot help a candidate: every timed repetition gets inputs generated from fresh seeds the
referee draws from the OS's random source only when that repetition is prepared, so no input
object or input content is ever seen twice. Which repetitions' outputs are exported and checked is
decided after the repetition ran, so a candidate cannot know which answers will be looked at.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kernels.checker import check_factors
from kernels.generators import generate_input
from kernels.judge.contestant_process import ContestantFailure, ContestantProcess
from kernels.judge.integrity import Calibration, RepetitionTiming, judge_integrity
from kernels.judge.processes import become_subreaper, make_undumpable
from kernels.judge.protocol import sign, write_all
from kernels.suites import Spec
from kernels.timing import STOPPING_RULES, Stats, geomean, inputs_per_repetition

CALIBRATION_SPEC = Spec(batch=2, n=8, cond=0, case="dense", seed=0)
SAMPLED_RECHECK_PROBABILITY = 0.125


@dataclass
class SpecOutcome:
    """What the referee found for one spec; serialised into the report."""

    index: int
    kind: str
    spec: Spec
    status: str = "pass"
    reason: str = ""
    gate: str | None = None
    diagnostics: dict[str, float] = field(default_factory=dict)
    stats: Stats | None = None
    referee_mean_ns: float | None = None
    checks: int = 0
    count: int = 1
    integrity: dict[str, object] | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def fail(self, status: str, reason: str, gate: str | None = None) -> None:
        if self.status == "pass":
            self.status, self.reason, self.gate = status, reason, gate

    def to_dict(self) -> dict[str, object]:
        spec = self.spec
        return {
            "index": self.index,
            "kind": self.kind,
            "spec": {
                "batch": spec.batch,
                "n": spec.n,
                "cond": spec.cond,
                "case": spec.case,
                "seed": spec.seed,
            },
            "label": spec.label,
            "status": self.status,
            "reason": self.reason,
            "gate": self.gate,
            "diagnostics": self.diagnostics,
            "stats": self.stats.to_dict() if self.stats else None,
            "referee_mean_ns": self.referee_mean_ns,
            "checks": self.checks,
            "count": self.count,
            "integrity": self.integrity,
            "seconds": self.seconds,
        }


class Reporter:
    """Signed frames to the runner: progress as it happens, the report at the end."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd, self._key = fd, key

    def send(self, message: dict) -> None:
        write_all(self._fd, sign(self._key, message))

    def progress(self, **fields: object) -> None:
        self.send({"type": "progress", **fields})


class Referee:
    """Drives one contestant through calibration, loading, tests and benchmarks."""

    def __init__(self, config: dict, reporter: Reporter) -> None:
        self.config = config
        self.reporter = reporter
        self.device = torch.device("cuda:0" if config["device"].startswith("cuda") else "cpu")
        self.work_dir = Path(config["work_dir"])
        self.timeouts: dict[str, float] = config["timeouts"]
        self.rule = STOPPING_RULES[config["rule"]]
        self.recheck_all = config["recheck"] == "all"
        self.max_rechecks = int(config.get("max_rechecks", 6))
        self.random = secrets.SystemRandom()
        self.phases: dict[str, float] = {}
        self.calibration = Calibration(0.0, 0.0)
        self.prepare_baseline_ns: dict[tuple[Spec, int], float] = {}
        self.contestant = ContestantProcess(
            str(self.device),
            self.work_dir / "candidate-output.log",
            int(config["memory_limit_bytes"]),
        )
        self.dead: ContestantFailure | None = None
        self.export_path = self.work_dir / "outputs.f32"

    def run(self) -> dict:
        started = time.monotonic()
        tests = [self._spec(d) for d in self.config["tests"]]
        benchmarks = [self._spec(d) for d in self.config["benchmarks"]]
        outcomes = [SpecOutcome(i, "test", s) for i, s in enumerate(tests)]
        outcomes += [SpecOutcome(i, "benchmark", s) for i, s in enumerate(benchmarks)]
        load_error = ""
        try:
            self._timed_phase("calibrate", lambda: self._calibrate(tests, benchmarks))
            load_error = self._timed_phase("load", self._load)
        except ContestantFailure as failure:
            self.dead = failure
        for outcome in outcomes:
            if load_error:
                outcome.fail("error", load_error)
            elif self.dead is not None:
                outcome.fail("skipped", f"not run: {self.dead.reason}")
            else:
                self._run_outcome(outcome, len(tests), len(benchmarks))
        self.contestant.close()
        self.phases["total"] = time.monotonic() - started
        return self._report(outcomes, load_error)

    def _spec(self, data: dict) -> Spec:
        return Spec(**data)

    def _timed_phase(self, name: str, body):
        self.reporter.progress(phase=name)
        start = time.monotonic()
        try:
            return body()
        finally:
            self.phases[name] = time.monotonic() - start

    def _run_outcome(self, outcome: SpecOutcome, n_tests: int, n_benchmarks: int) -> None:
        total = n_tests if outcome.kind == "test" else n_benchmarks
        self.reporter.progress(
            phase=outcome.kind, index=outcome.index, total=total, label=outcome.spec.label
        )
        start = time.monotonic()
        try:
            if outcome.kind == "test":
                self._run_test(outcome)
            else:
                self._run_benchmark(outcome)
        except ContestantFailure as failure:
            self.dead = failure
            outcome.fail(failure.kind, failure.reason)
        key = "tests" if outcome.kind == "test" else "benchmarks"
        self.phases[key] = self.phases.get(key, 0.0) + time.monotonic() - start
        self.reporter.progress(
            phase=outcome.kind,
            index=outcome.index,
            total=total,
            label=outcome.spec.label,
            status=outcome.status,
            mean_ns=outcome.stats.mean_ns if outcome.stats else None,
            reason=outcome.reason,
        )

    def _ask(self, message: dict, timeout_key: str, phase: str) -> tuple[dict, int]:
        exchange = self.contestant.ask(message, self.timeouts[timeout_key], phase)
        return exchange.reply, exchange.elapsed_ns

    def _prepare(self, spec: Spec, seeds: list[int]) -> int:
        shape = {"batch": spec.batch, "n": spec.n, "cond": spec.cond, "case": spec.case}
        reply, elapsed = self._ask(
            {"op": "prepare", "spec": shape, "seeds": seeds}, "prepare", "prepare"
        )
        if not reply.get("ok"):
            raise ContestantFailure("crash", f"prepare: harness failed: {reply.get('error', '')}")
        return elapsed

    def _calibrate(self, tests: list[Spec], benchmarks: list[Spec]) -> None:
        """Harness costs measured before any candidate code exists in the contestant."""
        self._ask({"op": "hello"}, "prepare", "start")
        overheads = []
        for _ in range(9):
            self._prepare(CALIBRATION_SPEC, [1, 2])
            reply, window = self._ask({"op": "go", "calibrate": True}, "call", "calibrate")
            overheads.append(window - reply["elapsed_ns"])
        self.calibration = Calibration.from_samples(overheads[2:])
        for spec in benchmarks:
            count = inputs_per_repetition(spec, self.rule)
            seeds = [self.random.getrandbits(62) for _ in range(count)]
            self.prepare_baseline_ns[(spec, count)] = min(
                self._prepare(spec, seeds) for _ in range(2)
            )

    def _load(self) -> str:
        message = {"op": "load", "path": self.config["candidate"]}
        reply, _ = self._ask(message, "load", "import")
        if reply.get("ok"):
            return ""
        return f"importing the candidate failed:\n{reply.get('error', '')}"

    def _run_test(self, outcome: SpecOutcome) -> None:
        spec = outcome.spec
        self._prepare(spec, [spec.seed])
        if self._go(outcome, "first_call") is None:
            return
        self._inspect_and_check(outcome, [spec.seed], export=True)

    def _run_benchmark(self, outcome: SpecOutcome) -> None:
        spec = outcome.spec
        count = inputs_per_repetition(spec, self.rule)
        outcome.count = count
        warmup_seeds = [spec.seed + 42 * (i + 1) for i in range(count)]
        self._prepare(spec, warmup_seeds)
        if self._go(outcome, "first_call") is None:
            return
        if not self._inspect_and_check(outcome, warmup_seeds, export=True):
            return
        reps: list[RepetitionTiming] = []
        durations: list[float] = []
        windows: list[float] = []
        baseline = self.prepare_baseline_ns.get((spec, count), 0.0)
        started = time.perf_counter_ns()
        while True:
            seeds = [self.random.getrandbits(62) for _ in range(count)]
            prepare_ns = self._prepare(spec, seeds)
            go = self._go(outcome, "call")
            if go is None:
                return
            claimed_ns, window_ns = go
            reps.append(RepetitionTiming(claimed_ns, window_ns, prepare_ns, baseline))
            durations.append(claimed_ns / count)
            windows.append(max(0.0, window_ns - self.calibration.go_overhead_median_ns) / count)
            elapsed = time.perf_counter_ns() - started
            last = self.rule.should_stop(durations, elapsed)
            if not self._inspect_and_check(
                outcome, seeds, export=self._should_check(outcome, last)
            ):
                return
            if last:
                break
        outcome.stats = Stats.from_durations(durations)
        outcome.referee_mean_ns = sum(windows) / len(windows)
        verdict = judge_integrity(reps, self.calibration)
        outcome.integrity = verdict.to_dict()
        if not verdict.ok:
            outcome.fail("fail", verdict.reason, "integrity")

    def _should_check(self, outcome: SpecOutcome, last: bool) -> bool:
        if self.recheck_all or last:
            return True
        budget_left = outcome.checks < self.max_rechecks
        return budget_left and self.random.random() < SAMPLED_RECHECK_PROBABILITY

    def _go(self, outcome: SpecOutcome, timeout_key: str) -> tuple[int, int] | None:
        reply, window = self._ask({"op": "go"}, timeout_key, "custom_kernel")
        if reply.get("ok"):
            return int(reply["elapsed_ns"]), window
        kind = reply.get("kind", "error")
        outcome.fail(
            "memory" if kind == "memory" else "error",
            f"custom_kernel raised:\n{reply.get('error', '')}",
        )
        return None

    def _inspect_and_check(self, outcome: SpecOutcome, seeds: list[int], export: bool) -> bool:
        """Rule checks in the contestant, then (when exporting) the gates here on our own inputs."""
        start = time.monotonic()
        message = {"op": "inspect", "export": str(self.export_path) if export else None}
        reply, _ = self._ask(message, "inspect", "inspect")
        problems = reply.get("problems") or []
        if problems:
            first = problems[0]
            outcome.fail("fail", str(first.get("reason", "rule violated")), str(first.get("gate")))
            return False
        if export:
            ok = self._check_exported(outcome, seeds)
            outcome.checks += 1
            outcome.seconds["check"] = outcome.seconds.get("check", 0.0) + time.monotonic() - start
            return ok
        return True

    def _check_exported(self, outcome: SpecOutcome, seeds: list[int]) -> bool:
        spec = outcome.spec
        h_numel, tau_numel = spec.batch * spec.n * spec.n, spec.batch * spec.n
        total = (h_numel + tau_numel) * len(seeds)
        path = self.export_path
        if not path.exists() or path.stat().st_size != total * 4:
            outcome.fail("fail", "exported outputs have the wrong size", "shape")
            return False
        flat = torch.from_file(str(path), shared=False, size=total, dtype=torch.float32)
        path.unlink()
        offset = 0
        for i, seed in enumerate(seeds):
            a = generate_input(spec.reseeded(seed), self.device)
            h = flat[offset : offset + h_numel].view(spec.batch, spec.n, spec.n).to(self.device)
            offset += h_numel
            tau = flat[offset : offset + tau_numel].view(spec.batch, spec.n).to(self.device)
            offset += tau_numel
            result = check_factors(a, h, tau)
            _merge_worst(outcome.diagnostics, result.diagnostics)
            if not result.ok:
                where = f" (input {i} of {len(seeds)})" if len(seeds) > 1 else ""
                outcome.fail("fail", result.reason + where, result.gate)
                return False
        return True

    def _report(self, outcomes: list[SpecOutcome], load_error: str) -> dict:
        failed = [o for o in outcomes if o.status != "pass"]
        benchmarks = [o for o in outcomes if o.kind == "benchmark"]
        means = [o.stats.mean_ns for o in benchmarks if o.stats is not None]
        complete = bool(benchmarks) and len(means) == len(benchmarks) and not failed
        if load_error:
            verdict, reason = "error", load_error
        elif failed:
            first = failed[0]
            verdict = first.status
            reason = f"{first.kind} {first.index} ({first.spec.label}): {first.reason}"
        else:
            verdict, reason = "pass", ""
        return {
            "type": "report",
            "verdict": verdict,
            "reason": reason,
            "device": _device_info(self.device),
            "versions": _versions(),
            "rule": self.rule.name,
            "recheck": "all" if self.recheck_all else "sampled",
            "calibration": self.calibration.to_dict(),
            "phases_s": self.phases,
            "geomean_ns": geomean(means) if complete else None,
            "specs": [o.to_dict() for o in outcomes],
        }


def _merge_worst(into: dict[str, float], new: dict[str, float]) -> None:
    for key, value in new.items():
        into[key] = max(value, into.get(key, value))


def _device_info(device: torch.device) -> dict[str, str]:
    if device.type == "cuda":
        return {"type": "cuda", "name": torch.cuda.get_device_name(device)}
    return {"type": "cpu", "name": platform.processor() or platform.machine()}


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = "absent"
    if torch.version.cuda:
        versions["cuda"] = torch.version.cuda
    return versions


def main() -> None:
    make_undumpable()
    become_subreaper()
    report_fd = int(sys.argv[1])
    config = json.loads(sys.stdin.readline())
    key = bytes.fromhex(config.pop("key"))
    sys.stdin.close()
    reporter = Reporter(report_fd, key)
    report = Referee(config, reporter).run()
    reporter.send(report)
    os.close(report_fd)


if __name__ == "__main__":
    main()
