"""The referee: the trusted judge process. It owns inputs, checks, clocks and the report.

Started through `qrsup.kernels.judge.referee_main`, with a JSON config line on stdin. No candidate
code ever runs here; the contestant is a child in its own process group, and nothing it sends is
unpickled or believed without a check.

Caching cannot help a candidate: every timed repetition gets inputs generated from fresh seeds the
referee draws from the OS's random source only when that repetition is prepared, so no input
object or input content is ever seen twice. Which repetitions' outputs are exported and checked is
decided after the repetition ran, so a candidate cannot know which answers will be looked at.
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TypeVar

import torch
from qrsup.kernels.checker import check_factors
from qrsup.kernels.generators import generate_input
from qrsup.kernels.judge.candidate_threads import UNKNOWN_THREAD_NS
from qrsup.kernels.judge.checker_warmup import CheckerWarmup
from qrsup.kernels.judge.contestant_process import (
    ContestantFailure,
    ContestantProcess,
    Exchange,
)
from qrsup.kernels.judge.export_area import ExportArea
from qrsup.kernels.judge.integrity import (
    CPU_TOLERANCE,
    CUDA_TOLERANCE,
    Cycle,
    CycleBaseline,
    IntegrityVerdict,
    Tolerance,
    beside_phases,
    cpu_excess_by_kind,
    excusal_by_kind,
    export_cost_ns,
    export_cpu_cost_ns,
    fresh_baseline,
    judge_integrity,
    placement,
    spec_baseline,
    spread_ns,
    stretch_by_phase,
    where_it_stretched,
    window_waits_ns,
)
from qrsup.kernels.judge.outcome import SpecOutcome, assemble_report
from qrsup.kernels.judge.protocol import sign, write_all
from qrsup.kernels.judge.sandbox import isolation_summary
from qrsup.kernels.suites import Spec
from qrsup.kernels.timing import STOPPING_RULES, Stats, inputs_per_repetition

CALIBRATION_SPEC = Spec(batch=2, n=8, cond=0, case="dense", seed=0)
CALIBRATION_CYCLES = 9
CALIBRATION_CYCLES_PER_SPEC = 5
EXPORT_CALIBRATION_CYCLES = 3
SAMPLED_RECHECK_PROBABILITY = 0.125
# The audit of every operator's kernel (about 90 ms on an H200's host, 5% of a qr_v2 run when
# it followed every spec) follows the first and last benchmark specs and this share of the
# others, drawn after each spec: a kernel kept registered is caught before any spec's figure
# counts, and one registered later cannot know whether it will be looked for.
AUDIT_PROBABILITY = 0.25
# How much the contestant's other threads may run outside a window before its waits count as
# its own doing: a floor, or a share of the time outside the window.
OTHER_THREADS_SLACK_NS = 2_000_000
OTHER_THREADS_SHARE = 0.1
ABORT_MIN_CYCLES = 4
# A do-nothing cycle runs after every this many of the candidate's, in a retry from the start and
# in a first attempt once an early look finds it beyond its allowance (`_timed_repetitions`).
BESIDE_EVERY = 2
ABORT_FACTOR = 3.0
ABORT_FLOOR = 1.5
T = TypeVar("T")
FAILURE_STATUS = {
    "error": "error",
    "timeout": "timeout",
    "crash": "crash",
    "memory": "memory",
    "protocol": "fail",
    "tamper": "fail",
}


@dataclass(frozen=True)
class _Reading:
    """The contestant's CPU time, its other threads' time on a CPU, and its main thread's wait
    for one, read by the referee."""

    cpu_ns: int
    others_ns: int
    wait_ns: int

    @classmethod
    def of(cls, proc: ContestantProcess) -> _Reading:
        return cls(proc.cpu_time_ns(), *proc.thread_times_ns())

    def since(self, earlier: _Reading) -> _Reading:
        return _Reading(
            self.cpu_ns - earlier.cpu_ns,
            self.others_ns - earlier.others_ns,
            self.wait_ns - earlier.wait_ns,
        )

    def plus(self, other: _Reading) -> _Reading:
        return _Reading(
            self.cpu_ns + other.cpu_ns,
            self.others_ns + other.others_ns,
            self.wait_ns + other.wait_ns,
        )


def _split_s(cycles: list[Cycle], hello_ns: float) -> dict[str, float]:
    """Where calibration's wall clock went, in seconds: the judge's overhead per run is mostly
    calibration, and which exchange costs it decides what could be cut."""
    return {
        "hello": hello_ns / 1e9,
        "prepare": sum(c.prepare_ns for c in cycles) / 1e9,
        "go": sum(c.window_ns for c in cycles) / 1e9,
        "inspect": sum(c.inspect_ns for c in cycles) / 1e9,
        "referee": sum(c.bookkeeping_ns for c in cycles) / 1e9,
        "cycles": float(len(cycles)),
    }


class _Stop(Exception):
    """The current spec is over: its outcome already says why."""


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

    def __init__(
        self,
        config: dict,
        reporter: Reporter,
        contestant: ContestantProcess,
        relaunch: Callable[[], ContestantProcess],
    ) -> None:
        self.config = config
        self.relaunch = relaunch  # a new contestant behind the same boundary
        self.reporter = reporter
        self.device = torch.device("cuda:0" if config["device"].startswith("cuda") else "cpu")
        self.timeouts: dict[str, float] = config["timeouts"]
        self.rule = STOPPING_RULES[config["rule"]]
        self.recheck_all = config["recheck"] == "all"
        self.max_rechecks = int(config.get("max_rechecks", 6))
        self.random = secrets.SystemRandom()
        self.phases: dict[str, float] = {}
        self.go_overhead_ns = 0.0
        self.do_nothing_window_wait_ns = 0.0  # the most the contestant waited in such a window
        self.libraries_warmed: list[str] = []  # what the contestant warmed before the candidate
        self.calibration_split: dict[str, float] = {}  # where calibration's seconds went
        self.baselines: dict[Spec, CycleBaseline] = {}
        self.dead: ContestantFailure | None = None
        self.contestant = contestant
        self.warmup: CheckerWarmup | None = None
        self._taken: torch.Tensor | None = None  # the last export's outputs (take_export)

    def run(self) -> dict:
        started = time.monotonic()
        tests = [Spec(**d) for d in self.config["tests"]]
        benchmarks = [Spec(**d) for d in self.config["benchmarks"]]
        outcomes = [SpecOutcome(i, "test", s) for i, s in enumerate(tests)]
        outcomes += [SpecOutcome(i, "benchmark", s) for i, s in enumerate(benchmarks)]
        load_error = self._boundary_problem()
        if not load_error:
            try:
                # The split kept is this calibration's, the one `phases_s.calibrate` times; a
                # spec timed afresh calibrates again under `recalibrate`.
                self.calibration_split = self._phase(
                    "calibrate", lambda: self._calibrate(benchmarks)
                )
                if self.device.type == "cuda" and outcomes:
                    self.warmup = CheckerWarmup(outcomes[0].spec, self.device).start()
                load_error = self._phase("load", self._load)
            except ContestantFailure as failure:
                self.dead = failure
        totals = {"test": len(tests), "benchmark": len(benchmarks)}
        failed_test: SpecOutcome | None = None
        for outcome in outcomes:
            if load_error:
                outcome.fail("error", load_error)
            elif self.dead is not None:
                outcome.fail(FAILURE_STATUS[self.dead.kind], f"not run: {self.dead.reason}")
            elif failed_test is not None:
                label = f"{failed_test.kind} {failed_test.index} ({failed_test.spec.label})"
                outcome.fail("skipped", f"not run: {label} failed first")
            else:
                self._run_outcome(outcome, totals[outcome.kind])
                if outcome.kind == "test" and outcome.status != "pass":
                    failed_test = outcome
        if self.warmup is not None:
            self.warmup.join()
        self.contestant.close()
        self.phases["total"] = time.monotonic() - started
        extra = {
            "rule": self.rule.name,
            "recheck": "all" if self.recheck_all else "sampled",
            "calibration": {
                "go_overhead_ns": self.go_overhead_ns,
                "contestant_window_wait_max_ns": self.do_nothing_window_wait_ns,
                "libraries_warmed": self.libraries_warmed,
                "split_s": self.calibration_split,
            },
            "phases_s": self.phases,
            "isolation": isolation_summary(self.contestant.boundary),
        }
        return assemble_report(outcomes, load_error, self.device, extra)

    def _boundary_problem(self) -> str:
        """Why the contestant cannot be run as configured, or ""."""
        boundary = self.contestant.boundary
        if not boundary:
            return "the judge could not start the contestant (see the candidate's output)"
        missing = boundary.get("missing") or []
        if missing and self.config["isolation"]["mode"] == "required":
            return "the judge's isolation is required but incomplete: " + "; ".join(missing)
        return ""

    def _phase(self, name: str, body: Callable[[], T]) -> T:
        self.reporter.progress(phase=name)
        start = time.monotonic()
        try:
            return body()
        finally:
            self.phases[name] = time.monotonic() - start

    def _run_outcome(self, outcome: SpecOutcome, total: int) -> None:
        where = {"phase": outcome.kind, "index": outcome.index, "total": total}
        self.reporter.progress(**where, label=outcome.spec.label)
        start = time.monotonic()
        try:
            if outcome.kind == "test":
                self._run_test(outcome)
            else:
                self._run_benchmark(outcome)
        except _Stop:
            pass
        except ContestantFailure as failure:
            self.dead = failure
            gate = "tamper" if failure.kind == "tamper" else None
            outcome.fail(FAILURE_STATUS[failure.kind], failure.reason, gate)
        outcome.wall_s = time.monotonic() - start
        key = f"{outcome.kind}s"
        self.phases[key] = self.phases.get(key, 0.0) + outcome.wall_s
        mean_ns = outcome.stats.mean_ns if outcome.stats else None
        self.reporter.progress(
            **where, label=outcome.spec.label, status=outcome.status, mean_ns=mean_ns
        )

    def _ask(self, message: dict, timeout_key: str, phase: str) -> Exchange:
        return self.contestant.ask(message, self.timeouts[timeout_key], phase)

    def _calibrate(self, benchmarks: list[Spec]) -> dict[str, float]:
        """Harness costs, measured before any candidate code exists in the contestant; returns
        where its seconds went (`_split_s`)."""
        hello_exchange = self._ask({"op": "hello"}, "load", "start")
        hello = hello_exchange.reply
        self.libraries_warmed = [str(name) for name in hello.get("warmed") or []]
        every = [
            self._cycle(CALIBRATION_SPEC, [1, 2], lambda _: False, calibrate=True)
            for _ in range(CALIBRATION_CYCLES)
        ]
        settled = every[2:]
        overheads = [c.window_overhead_ns for c in settled]
        self.go_overhead_ns = statistics.median(c.window_ns - c.claimed_ns for c in settled)
        jitter = spread_ns([c.harness_ns for c in settled])
        window_jitter = spread_ns(overheads)
        # By the outputs' shape and count: what an export adds to the wall clock and to the CPU.
        export_ns: dict[tuple[int, int, int], tuple[float, float]] = {}
        calibration = list(settled)
        for spec in benchmarks:
            count = inputs_per_repetition(spec, self.rule)
            plain = [
                self._cycle(spec, self._fresh_seeds(count), lambda _: False, calibrate=True)
                for _ in range(CALIBRATION_CYCLES_PER_SPEC)
            ]
            outputs = (spec.batch, spec.n, count)
            if outputs not in export_ns:
                # The first export of a size is the first copy of its outputs into the export
                # area: it does not count. Of the others the dearest does, since exported cycles
                # are allowed only a small share beyond it.
                exports = [
                    self._cycle(spec, self._fresh_seeds(count), lambda _: True, calibrate=True)
                    for _ in range(EXPORT_CALIBRATION_CYCLES)
                ]
                every += exports
                exported = exports[1:]
                export_ns[outputs] = (
                    max(export_cost_ns(plain, cycle) for cycle in exported),
                    max(export_cpu_cost_ns(plain, cycle) for cycle in exported),
                )
            wall, cpu = export_ns[outputs]
            self.baselines[spec] = spec_baseline(plain, wall, jitter, window_jitter, cpu)
            calibration += plain
            every += plain
        waits = [c.contestant_window_wait_ns for c in calibration]
        self.do_nothing_window_wait_ns = max(waits, default=0.0)
        return _split_s(every, hello_exchange.elapsed_ns)

    def _load(self) -> str:
        source = self.config["source"].encode()  # the text the static checks passed
        self.contestant.source_path.write_bytes(source)
        path = self.contestant.boundary["candidate"]  # its copy, where the contestant sees it
        load = {"op": "load", "path": path, "size": len(source)}
        reply = self._ask(load, "load", "import").reply
        if reply.get("ok"):
            return ""
        return _raised("importing the candidate", str(reply.get("error", "")))

    def _fresh_seeds(self, count: int) -> list[int]:
        return [self.random.getrandbits(62) for _ in range(count)]

    def _cycle(
        self,
        spec: Spec,
        seeds: list[int],
        export_after: Callable[[int], bool],
        outcome: SpecOutcome | None = None,
        calibrate: bool = False,
        first_call: bool = False,
    ) -> Cycle:
        """prepare → go → inspect, bracketed by the referee's wall clock and CPU accounting.

        `export_after(claimed_ns)` decides whether the outputs come back for checking, only after
        the timed window has closed. A candidate error or rule violation ends the spec (_Stop).
        """
        proc = self.contestant
        start, wall_start = _Reading.of(proc), time.perf_counter_ns()
        shape = {"batch": spec.batch, "n": spec.n, "cond": spec.cond, "case": spec.case}
        prepare = {"op": "prepare", "spec": shape, "seeds": seeds}
        prepared = self._ask(prepare, "prepare", "prepare")
        reply = prepared.reply
        _refuse_tamper(reply, "prepared inputs")
        if not reply.get("ok"):
            raise ContestantFailure("crash", f"prepare: the harness failed: {reply.get('error')}")
        before_go = _Reading.of(proc)
        timeout_key = "first_call" if first_call else "call"
        went = self._ask({"op": "go", "calibrate": calibrate}, timeout_key, "custom_kernel")
        reply, window = went.reply, went.elapsed_ns
        after_go = _Reading.of(proc)
        if not reply.get("ok"):
            status = "memory" if reply.get("kind") == "memory" else "error"
            if outcome is None:
                raise _harness_failure(status, f"raised {reply.get('error', '')}")
            outcome.fail(status, _raised("custom_kernel", str(reply.get("error", ""))))
            raise _Stop
        if outcome is not None:
            if outcome.calls == 0:
                outcome.first_call_s = window / 1e9
            outcome.calls += 1
        claimed = _claimed_ns(reply, window)
        launch_wait = _launch_wait_ns(reply)
        exported = export_after(claimed)
        inspected = self._ask({"op": "inspect", "export": exported}, "inspect", "inspect")
        wall_end, end = time.perf_counter_ns(), _Reading.of(proc)
        _refuse_tamper(inspected.reply, "inspected outputs")
        if not inspected.reply.get("ok"):
            error = inspected.reply.get("error")
            raise ContestantFailure("error", f"inspect: the harness failed: {error}")
        problems = inspected.reply.get("problems") or []
        if problems:
            first = problems[0]
            reason = str(first.get("reason", "rule violated"))
            if outcome is None:
                raise _harness_failure("error", f"broke a rule: {reason}")
            outcome.fail("fail", reason, str(first.get("gate")))
            raise _Stop
        if exported and not calibrate:
            self._taken = take_export(self.contestant.exports, spec, len(seeds), self.device)
        cycle_ns = wall_end - wall_start
        exchanges = (prepared, went, inspected)
        own_wait = sum(exchange.waited_ns for exchange in exchanges)
        outside = before_go.since(start).plus(end.since(after_go))
        excused = self._excusable(outside, cycle_ns - window)
        inside = after_go.since(before_go)
        window_excused = self._excusable(inside, window - claimed)
        return Cycle(
            claimed_ns=float(claimed),
            window_ns=float(window),
            cycle_ns=float(cycle_ns),
            cpu_outside_ns=float(outside.cpu_ns),
            exported=exported,
            host_wait_ns=float(own_wait + outside.wait_ns) if excused else 0.0,
            window_wait_ns=float(went.waited_ns) if window_excused else 0.0,
            contestant_window_wait_ns=float(inside.wait_ns) if window_excused else 0.0,
            contestant_launch_wait_ns=launch_wait,
            prepare_ns=float(prepared.elapsed_ns),
            inspect_ns=float(inspected.elapsed_ns),
            bookkeeping_ns=float(cycle_ns - sum(exchange.elapsed_ns for exchange in exchanges)),
            waits_excused=excused,
            other_threads_ns=float(outside.others_ns),
            candidate_threads_ns=float(_threads_ns(reply) + _threads_ns(inspected.reply)),
            cpu=proc.cpu_num(),
        )

    def _excusable(self, stretch: _Reading, wall_ns: float) -> bool:
        """Whether a wait for a CPU during a stretch of the cycle (outside the window, or the
        window itself) is the host's toll. On a GPU the harness leaves the contestant's other
        threads idle; when they ran anyway, the contestant may be starving its own main thread
        (and the referee) to pass hidden work off as a busy host, so nothing is excused. On the
        CPU the harness itself is multi-threaded, so the two cannot be told apart and nothing is
        excused either."""
        slack = max(OTHER_THREADS_SLACK_NS, OTHER_THREADS_SHARE * wall_ns)
        return self.device.type == "cuda" and stretch.others_ns <= slack

    def _run_test(self, outcome: SpecOutcome) -> None:
        seeds = [outcome.spec.seed]
        self._cycle(outcome.spec, seeds, lambda _: True, outcome, first_call=True)
        self._check_exported(outcome, seeds)

    def _run_benchmark(self, outcome: SpecOutcome) -> None:
        spec = outcome.spec
        outcome.count = inputs_per_repetition(spec, self.rule)
        tolerance = CUDA_TOLERANCE if self.device.type == "cuda" else CPU_TOLERANCE
        self._warm_up(outcome)
        attempt = self._timed_repetitions(outcome, tolerance, beside_from_start=False)
        verdict = attempt.judged(tolerance)
        first_attempt = None
        if not verdict.ok:
            # The baseline, not the candidate, may be what is off: calibrated while another
            # process loaded the host, the do-nothing cycle came out cheaper than a quiet one
            # (on an H200 a compile beside calibration gave 20×32 a 1.57 ms cycle, against
            # 2.86 ms quiet, and an honest candidate failed twice against it). The CPU
            # accounting failed an honest 640×512 candidate once (its sampled exports ran
            # 172 ms of CPU beyond the wall clock; in the next run they ran less than it). The
            # spec is timed once more in a new contestant, calibrated as the host is now before
            # the candidate is loaded into it again, and beside do-nothing cycles from the
            # start (on an H100 an honest contestant's harness ran 1.7 times as long as
            # calibrated in both of its processes). Hidden work is systematic and fails again;
            # nothing the candidate started survives its old process.
            first_attempt = attempt.record(verdict)
            self._recalibrated_contestant(spec)
            self._warm_up(outcome)
            attempt = self._timed_repetitions(outcome, tolerance, beside_from_start=True)
            verdict = attempt.judged(tolerance)
        if self._audit_due(outcome):
            self._audit()
        cycles = attempt.cycles
        outcome.stats = Stats.from_durations(attempt.durations)
        windows = [max(0.0, c.window_ns - self.go_overhead_ns) / outcome.count for c in cycles]
        outcome.referee_mean_ns = sum(windows) / len(windows)
        record = attempt.record(verdict)
        outcome.integrity = {
            **record,
            "bookkeeping_ns": statistics.median(c.bookkeeping_ns for c in cycles),
            "window_waits_ns": window_waits_ns(cycles),
            "first_attempt": first_attempt,
        }
        if not verdict.ok:
            reason = f"{verdict.reason} ({len(cycles)} repetitions; {_where_it_ran(record)})"
            outcome.fail("fail", reason, "integrity")

    def _audit_due(self, outcome: SpecOutcome) -> bool:
        edge = outcome.index in (0, len(self.config["benchmarks"]) - 1)
        return edge or self.random.random() < AUDIT_PROBABILITY

    def _audit(self) -> None:
        """The contestant's look at every operator's kernel, once the spec's timing is done
        (45–90 ms, too dear for every cycle): a tamper ends the run like any other."""
        start = time.monotonic()
        reply = self._ask({"op": "audit"}, "inspect", "audit").reply
        self.phases["audit"] = self.phases.get("audit", 0.0) + time.monotonic() - start
        _refuse_tamper(reply, "was audited after the spec was timed")
        if not reply.get("ok"):
            raise ContestantFailure("error", f"audit: the harness failed: {reply.get('error')}")

    def _warm_up(self, outcome: SpecOutcome) -> None:
        """One checked call on the spec's public seeds before any is timed: the contestant's
        first call of the spec (compiles, caches), which the timing leaves out."""
        spec = outcome.spec
        seeds = [spec.seed + 42 * (i + 1) for i in range(outcome.count)]
        self._cycle(spec, seeds, lambda _: True, outcome, first_call=True)
        self._check_exported(outcome, seeds)

    def _recalibrated_contestant(self, spec: Spec) -> None:
        """The contestant closed and replaced by a new one, calibrated for `spec` before the
        candidate is loaded into it again."""
        started = time.monotonic()
        self.contestant.close()
        self.contestant = self.relaunch()
        problem = self._boundary_problem()
        if problem:
            raise ContestantFailure("crash", f"a contestant to calibrate afresh: {problem}")
        self._calibrate([spec])
        load_error = self._load()
        if load_error:
            raise ContestantFailure("error", f"loaded again to be timed afresh: {load_error}")
        self.phases["recalibrate"] = self.phases.get("recalibrate", 0.0) + (
            time.monotonic() - started
        )

    def _timed_repetitions(
        self, outcome: SpecOutcome, tolerance: Tolerance, beside_from_start: bool
    ) -> _Attempt:
        """Fresh inputs each repetition until the stopping rule is met, or until integrity is
        already far beyond saving. A do-nothing cycle follows every `BESIDE_EVERY`-th of the
        candidate's, from the start or once an early look finds the spec beyond its allowance,
        and the spec is judged against them too (`fresh_baseline`)."""
        spec, count = outcome.spec, outcome.count
        attempt = _Attempt(self.baselines[spec])
        started = time.perf_counter_ns()
        finished = False
        beside_now = beside_from_start

        def export_after(claimed_ns: int) -> bool:
            nonlocal finished
            attempt.durations.append(claimed_ns / count)
            finished = self.rule.should_stop(attempt.durations, time.perf_counter_ns() - started)
            return self._should_check(outcome, finished)

        while not finished:
            seeds = self._fresh_seeds(count)
            cycle = self._cycle(spec, seeds, export_after, outcome)
            attempt.cycles.append(cycle)
            if cycle.exported:
                self._check_exported(outcome, seeds)
            timed = len(attempt.cycles)
            if not finished and _abort_check_due(timed):
                verdict = attempt.judged(tolerance)
                finished = _far_beyond(verdict, timed)
                beside_now = beside_now or not verdict.ok
            if beside_now and not finished and timed % BESIDE_EVERY == 0:
                seeds = self._fresh_seeds(count)
                attempt.beside.append(self._cycle(spec, seeds, lambda _: False, calibrate=True))
        return attempt

    def _should_check(self, outcome: SpecOutcome, last: bool) -> bool:
        if self.recheck_all or last:
            return True
        within_budget = outcome.checks < self.max_rechecks
        return within_budget and self.random.random() < SAMPLED_RECHECK_PROBABILITY

    def _check_exported(self, outcome: SpecOutcome, seeds: list[int]) -> None:
        """The gates, here, on inputs regenerated here, for the outputs taken at the export."""
        start = time.monotonic()
        if self.warmup is not None:
            self.warmup.join()
        spec = outcome.spec
        h_numel, tau_numel = spec.output_floats
        taken, self._taken = self._taken, None
        if taken is None or len(taken) != spec.export_floats(len(seeds)):
            raise RuntimeError("the referee checks an export it did not take")  # a judge bug
        outcome.checks += 1
        offset = 0
        try:
            for i, seed in enumerate(seeds):
                a = generate_input(spec.reseeded(seed), self.device)
                h = taken[offset : offset + h_numel].view(spec.batch, spec.n, spec.n)
                offset += h_numel
                tau = taken[offset : offset + tau_numel].view(spec.batch, spec.n)
                offset += tau_numel
                # A spec's first check grades as the contest does; later ones (re-checks of
                # timed repetitions) look for wrong outputs with a cheaper float64 Q.
                exact = outcome.checks == 1
                result = check_factors(a, h, tau, exact_q=exact)
                outcome.merge_diagnostics(result.diagnostics)
                if not result.ok:
                    where = f" (input {i} of {len(seeds)})" if len(seeds) > 1 else ""
                    outcome.fail("fail", result.reason + where, result.gate)
                    raise _Stop
        finally:
            outcome.check_s += time.monotonic() - start


@dataclass
class _Attempt:
    """One attempt at timing a spec: the candidate's repetitions, and the do-nothing cycles run
    between them (`beside`), judged against the calibration they raise (`fresh_baseline`)."""

    calibrated: CycleBaseline
    durations: list[float] = field(default_factory=list)
    cycles: list[Cycle] = field(default_factory=list)
    beside: list[Cycle] = field(default_factory=list)

    @property
    def baseline(self) -> CycleBaseline:
        return fresh_baseline(self.calibrated, self.beside)

    def judged(self, tolerance: Tolerance) -> IntegrityVerdict:
        return judge_integrity(self.cycles, self.baseline, tolerance)

    def record(self, verdict: IntegrityVerdict) -> dict[str, object]:
        """Its verdict, the baseline it was judged against and where its time went."""
        baseline = self.baseline
        return {
            **verdict.to_dict(),
            "baseline": asdict(baseline),
            "do_nothing_beside": len(self.beside),
            "beside_ns": beside_phases(self.beside),
            "stretch_ns": stretch_by_phase(self.cycles, baseline),
            "cpu_excess_ns": cpu_excess_by_kind(self.cycles),
            "excusal": excusal_by_kind(self.cycles),
            "cpus": placement(self.cycles, baseline),
        }


def _where_it_ran(record: dict) -> str:
    """Where an attempt's cycles ran beyond the calibration, what the do-nothing cycles beside
    them ran beyond it, and how much of that was taken out (`fresh_baseline`): read from the
    attempt's record, which has just computed each."""
    said = where_it_stretched(record["stretch_ns"])
    beside = record["do_nothing_beside"]
    if not beside:
        return said
    baseline = record["baseline"]  # the calibration, with only fresh_ns raised
    ran = record["beside_ns"]["harness"] - baseline["cycle_ns"]
    return (
        f"{said}; {beside} do-nothing cycles beside its own ran "
        f"{ran / 1e6:+.3f} ms, {baseline['fresh_ns'] / 1e6:.3f} ms of it taken out"
    )


def take_export(area: ExportArea, spec: Spec, count: int, device: torch.device) -> torch.Tensor:
    """The exported outputs, copied out of the shared area the moment the contestant has
    answered, and the area's τ values poisoned behind them. The contestant can still write the
    area afterwards: a candidate whose timed calls returned zeros once passed by writing the
    right answers there from a thread while the referee regenerated inputs."""
    exported = area.floats(spec.export_floats(count))
    try:
        taken = exported.to(device, copy=True)
        h_numel, tau_numel = spec.output_floats
        for offset in range(h_numel, len(exported), h_numel + tau_numel):
            # A later export that writes nothing must not pass on what this one left.
            exported[offset : offset + tau_numel].fill_(math.nan)
        return taken
    finally:
        del exported  # a view of the shared area, which must not outlive it


def _harness_failure(kind: str, what: str) -> ContestantFailure:
    """A do-nothing cycle that failed: the harness's own kernel, so nothing but what the
    candidate left in the process (memory it holds, a thread that wrote the inputs) breaks
    one once it is loaded. Its spec, and the rest, fail with it; before it loads, the run."""
    return ContestantFailure(kind, f"the harness's do-nothing cycle {what}")


def _refuse_tamper(reply: dict, when: str) -> None:
    """A contestant that saw its harness changed ends the run: its timings and answers came
    from tools the candidate may have replaced."""
    if reply.get("kind") == "tamper":
        reason = f"the candidate reached into the judge's harness, seen as it {when}: "
        raise ContestantFailure("tamper", reason + str(reply.get("error")))


def _claimed_ns(reply: dict, window_ns: int) -> int:
    """The contestant's events over its window, if the referee's own clock allows them: more
    than nothing and no more than the window around them (clocks may differ by 0.1% and
    10 µs). A claim of nothing once killed the referee, whose geomean took its log."""
    claimed = reply.get("elapsed_ns")
    if type(claimed) is int and 0 < claimed <= window_ns * 1.001 + 10_000:
        return claimed
    reason = (
        f"the harness claimed {claimed!r} ns for a timed window the referee's clock measured "
        f"at {window_ns} ns: the timer or the harness was tampered with"
    )
    raise ContestantFailure("tamper", reason)


def _threads_ns(reply: dict) -> int:
    """The CPU time the contestant read off the candidate's own threads for a stretch outside the
    window; a missing or malformed figure counts as a thread that ran."""
    value = reply.get("threads_ns")
    return value if type(value) is int and value >= 0 else UNKNOWN_THREAD_NS


def _launch_wait_ns(reply: dict) -> float:
    """The wait the contestant reports for its launches; where the report is missing or not a
    count, all of its wait in the window is taken as launching, so none of it is excused."""
    value = reply.get("launch_wait_ns")
    if type(value) is int and value >= 0:
        return float(value)
    return math.inf


def _raised(what: str, trace: str) -> str:
    """The exception on the first line, where logs and the leaderboard show it, then the trace.
    (A trace's own first line is only "Traceback (most recent call last):".)"""
    lines = [line.strip() for line in trace.splitlines() if line.strip()]
    return f"{what} raised {lines[-1] if lines else 'an exception'}:\n{trace}"


def _abort_check_due(cycles: int) -> bool:
    """Integrity is looked at early after 4, 8, 16, … repetitions: cheap, and soon enough."""
    return cycles >= ABORT_MIN_CYCLES and cycles & (cycles - 1) == 0


def abort_factor(cycles: int) -> float:
    """How far past its allowance a spec must be after `cycles` repetitions to stop early: 3×
    at the first look, less as the median rests on more cycles (÷√2 a doubling), never under
    1.5×. With one fixed 3×, the side-queue cheater beside one busy loop per core on an H200
    stood at 2.7× (its hidden work partly overlapped its slowed launching) and ran on past the
    first look. (Most of that verdict's 34 s was compiling: shipped_seed.py.)"""
    return max(ABORT_FLOOR, ABORT_FACTOR * math.sqrt(ABORT_MIN_CYCLES / cycles))


def _far_beyond(verdict: IntegrityVerdict, cycles: int) -> bool:
    """Unaccounted time so far past the allowance after `cycles` repetitions that more cannot
    change the verdict: a spec hiding its work fails in seconds, not at the stopping rule's
    time cap."""
    factor = abort_factor(cycles)
    wall = verdict.unaccounted_ns > factor * verdict.allowed_ns
    cpu = verdict.cpu_unaccounted_ns > factor * verdict.cpu_allowed_ns
    return not verdict.ok and (wall or cpu or verdict.clock == "threads")
