"""Timing integrity: does the referee's own accounting agree with the time the contestant claims?

Before the candidate is imported, the referee runs whole repetition cycles (prepare, timed
window, inspect) through the contestant's harness with a kernel that does no work, once per
spec; that is the harness's own cost (`CycleBaseline`). Afterwards, every timed cycle should cost
about that plus the claimed kernel time. Time beyond it is unaccounted: a patched timer, work on
a side stream, a forged early reply, or work deferred into preparation or inspection. On the CPU
a background thread can hide work on a spare core, so CPU time spent outside the timed window
is accounted the same way, less what the calibration found an export of the same outputs adds
(on an H200 an honest candidate's exports ran more CPU than wall time outside the window).

The referee's own work between the exchanges (reading the contestant's CPU and thread times,
the stopping rule's arithmetic) is left out of the cycle: it costs more as the contestant gains
threads, which the candidate's imports and first calls add after calibration, and as repetitions
accumulate, so a candidate was charged for the referee's reading (`bookkeeping_ns`).

On a GPU the timed window itself is looked at too: from the referee's `go` to the contestant's
reply, which the contestant sends only after the whole device has drained, the time beyond the
claimed kernel time should be the calibrated message overhead. Work queued on a side stream
finishes inside that window but outside the candidate's events, so it shows there against a
small baseline, not against a whole cycle whose input generation dwarfs it.

A busy host stretches every cycle without any hidden work: each message between referee and
contestant wakes a process that then waits for a CPU. On a GPU the kernel's count of that wait
(schedstat's run delay) for the referee's thread and the contestant's main thread is taken out of
the cycle before the comparison, in the timed window too. There only the contestant's wait outside
its kernel's launches counts: a wait while launching either lengthens the claimed time or overlaps
the device's work, so excusing it twice let a side-queue cheater pass beside one busy loop per core
on an H200. The contestant's harness reads that launch-time wait off its own thread as it records
the closing event (`launch_wait_ns`). Reports give the window's excused waits by whose they were
(`window_waits_ns`). No wait is excused in a cycle where the contestant's
other threads ran outside the window, since a contestant could starve its own main thread (and the
referee) to pass hidden work off as a busy host. On the CPU the harness itself is multi-threaded, so
nothing is excused there.

A median alone lets hidden work through in a minority of the cycles: a thread that held the
interpreter's lock for 30 ms after a third of the windows left the median untouched and passed
two runs in twelve. Each group's mean (plain cycles, exported ones), from 8 cycles on, is judged
against the same allowance too, less the dearest 5% of them (at least one): a busy host's rare
long stall is noise, work hidden in every third cycle is not.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

# CPU time is read in scheduler ticks (10 ms): it is judged over the sum of all repetitions,
# with room for the tick noise of two readings per repetition.
MIN_CPU_SLACK_NS = 20_000_000
CPU_TICK_NS = 10_000_000
RELATIVE_CPU_SLACK = 0.5

# A candidate's own threads may run while the harness holds its inputs or outputs in this many
# repetitions, and this share of them, without failing: an honest library's idle thread may wake
# now and then (tqdm's monitor every 10 s); work hidden there has to be in most repetitions to pay.
THREAD_CYCLES_ALLOWED = 1
THREAD_SHARE_ALLOWED = 0.05

# The mean of a group's unaccounted time is judged from this many cycles on, without its dearest
# share of them (at least one).
MEAN_MIN_CYCLES = 8
MEAN_TRIMMED_SHARE = 0.05


# Do-nothing cycles between the candidate's (`fresh_baseline`) may raise an attempt's baseline to
# this many times the one calibrated before the candidate loaded, no more.
FRESH_CAP = 2.0


@dataclass(frozen=True)
class Tolerance:
    """Slack for unaccounted wall time.

    The larger of a floor and a share of the claimed time, plus a share of the harness's own
    calibrated cycle: on a loaded host every phase stretches, the harness's included.
    """

    min_slack_ns: float
    relative_slack: float
    harness_slack: float
    check_window: bool
    """Whether the window from `go` to the reply is judged on its own (see the module's text)."""
    window_relative_slack: float = 0.0
    """The window's share of the claimed time. An honest window's overhead (draining after the
    last event, the reply) does not grow with the kernel's time; hidden work does. On a loaded
    H200 a side-queue cheater's claimed time (its launching, slowed by the load) was four times
    its hidden work, inside the whole cycle's 25%."""
    export_slack: float = 0.0
    """The share of the calibrated export cost an exported cycle may run beyond it. A candidate
    learns that its outputs will be checked only after its window, so work it defers to the
    export is judged here: at `harness_slack` an H200's 8×2048 export (80 ms, when it went
    through a file) hid that spec's whole kernel."""


# A GPU host is quiet while the device works; CPU cycles share cores with the candidate's own
# threads and with whatever else the host runs, so they get far more room.
# On the CPU nothing drains after the window, and hidden threads are charged by CPU accounting.
# A GPU export is a DMA of fixed size that a busy host does not slow (its wake-up is excused).
CUDA_TOLERANCE = Tolerance(
    min_slack_ns=500_000,
    relative_slack=0.25,
    harness_slack=0.5,
    check_window=True,
    window_relative_slack=0.05,
    export_slack=0.1,
)
CPU_TOLERANCE = Tolerance(
    min_slack_ns=3_000_000,
    relative_slack=0.5,
    harness_slack=2.0,
    check_window=False,
    export_slack=2.0,
)


@dataclass(frozen=True)
class Cycle:
    """One repetition as the referee saw it, in nanoseconds."""

    claimed_ns: float  # the contestant's events over the timed window
    window_ns: float  # referee's clock, `go` sent → reply read
    cycle_ns: float  # referee's clock over prepare + go + inspect
    cpu_outside_ns: float  # contestant CPU time spent outside the timed window
    exported: bool
    # Time the referee, and the contestant outside its window, spent runnable but waiting for a
    # CPU: a busy host's toll, which the kernel counts and no process can inflate for free.
    host_wait_ns: float = 0.0
    window_wait_ns: float = 0.0  # the referee's own toll between `go` and the reply
    contestant_window_wait_ns: float = 0.0  # the contestant's main thread's, in the same span
    contestant_launch_wait_ns: float = 0.0  # of which it reports it waited while launching
    prepare_ns: float = 0.0  # the referee's clock over the prepare exchange
    inspect_ns: float = 0.0  # and over the inspect exchange
    # The referee's own work between the exchanges (reading the contestant's CPU and thread
    # times, the stopping rule), while the contestant waits for its next command. It grows with
    # the contestant's threads and the repetitions run, not with any work of the candidate's.
    bookkeeping_ns: float = 0.0
    waits_excused: bool = True  # whether the toll outside the window was taken out (_excusable)
    other_threads_ns: float = 0.0  # CPU the contestant's other threads ran outside the window
    # CPU the candidate's own Python threads ran while the harness held its inputs or outputs
    # outside the window, as the contestant read it (candidate_threads.py)
    candidate_threads_ns: float = 0.0
    cpu: int = -1  # the CPU the contestant's main thread ran on last, as the cycle ended

    @property
    def contestant_launching_wait_ns(self) -> float:
        """The reported launch-time wait, within what the kernel counted for the window: a
        report can move wait between launching and the rest, never add any."""
        return min(max(self.contestant_launch_wait_ns, 0.0), self.contestant_window_wait_ns)

    @property
    def contestant_excused_wait_ns(self) -> float:
        """The contestant's wait in the window less what fell while it launched."""
        return self.contestant_window_wait_ns - self.contestant_launching_wait_ns

    @property
    def window_overhead_ns(self) -> float:
        """What the window cost beyond the claimed kernel time and the host's toll in it."""
        waits = self.window_wait_ns + self.contestant_excused_wait_ns
        return self.window_ns - self.claimed_ns - waits

    @property
    def harness_ns(self) -> float:
        """What the cycle cost beyond the claimed kernel time, the host's toll (in the window
        too, as the window's own accounting excuses it) and the referee's own bookkeeping.
        Beside one busy loop per core on an H200 an honest 640×512 spec failed the quick rule
        on this accounting, 4.49 ms against 2.44 allowed: its contestant had waited one
        scheduler tick (4.0 ms) for a CPU after its launches, in the window, where only the
        window's accounting took it out."""
        toll = self.host_wait_ns + self.contestant_excused_wait_ns
        return self.cycle_ns - self.claimed_ns - toll - self.bookkeeping_ns

    @property
    def wall_outside_ns(self) -> float:
        return self.cycle_ns - self.window_ns

    @property
    def cpu_excess_ns(self) -> float:
        """The contestant's CPU time outside the window beyond the wall clock there: more than
        one thread at work outside the window."""
        return self.cpu_outside_ns - self.wall_outside_ns


@dataclass(frozen=True)
class CycleBaseline:
    """The same cycle with a kernel that does nothing, measured before the candidate loaded."""

    cycle_ns: float
    export_cycle_ns: float
    jitter_ns: float
    window_ns: float = 0.0
    """The window's own overhead: `go` sent to reply read, less the claimed time."""
    prepare_ns: float = 0.0
    inspect_ns: float = 0.0
    window_jitter_ns: float = 0.0
    """The window overhead's own spread: a whole cycle's (input generation and all) is far
    larger, and would hide milliseconds of work drained after the candidate's events."""
    export_cpu_ns: float = 0.0
    """What an export adds to the contestant's CPU time beyond the wall clock outside the
    window (`export_cpu_cost_ns`)."""
    cpus: tuple[int, ...] = ()
    """The CPUs the do-nothing cycles ended on (`placement`)."""
    fresh_ns: float = 0.0
    """How much longer do-nothing cycles run between the candidate's own took than the cycle
    calibrated before it loaded (`fresh_baseline`): taken out of the candidate's cycles like
    the cycle, but given no slack of its own."""


@dataclass(frozen=True)
class IntegrityVerdict:
    """`ok` is False when unaccounted time exceeds what noise explains."""

    ok: bool
    unaccounted_ns: float
    allowed_ns: float
    cpu_unaccounted_ns: float
    cpu_allowed_ns: float
    reason: str
    host_wait_ns: float = 0.0  # median per repetition, already taken out of `unaccounted_ns`
    clock: str = ""
    """The accounting that failed: `wall-clock` or `timed-window` (both against the do-nothing
    baseline), or `CPU` (against the wall time outside the window, less the exports' share)."""
    cpu_baseline_ns: float = 0.0
    """What a failed CPU accounting took out for the calibrated exports."""
    statistic: str = "median"
    """How the repetitions' unaccounted times were summed up: their `median`, or their
    `trimmed mean` (`trimmed_mean`); the CPU accounting is a `total`."""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def export_cost_ns(plain: Sequence[Cycle], exported: Cycle) -> float:
    """What handing the outputs back adds to a spec's do-nothing cycle. It depends on the
    outputs' size alone, so specs of one shape share one measurement: on an H200 a 640×512
    batch's export costs about 13 ms (0.2 to 0.6 s through a file), against 3 ms for the cycle."""
    return exported.harness_ns - statistics.median(c.harness_ns for c in plain)


def export_cpu_cost_ns(plain: Sequence[Cycle], exported: Cycle) -> float:
    """What handing the outputs back adds to the contestant's CPU time beyond the wall clock.
    On an H200 an honest 640×512 candidate, whose 5 sampled exports were its only cycles with
    more CPU than wall time outside the window, failed the CPU accounting (172 ms against 123
    allowed) until the exports' own share was calibrated like their wall-clock cost."""
    return exported.cpu_excess_ns - statistics.median(c.cpu_excess_ns for c in plain)


def by_kind(
    cycles: Sequence[Cycle],
    value: Callable[[Cycle], float],
    summary: Callable[[list[float]], float] = statistics.median,
) -> dict[str, float]:
    """`value` summed up (its median, by default) over the plain and over the exported cycles."""
    kinds = {"plain": False, "exported": True}
    groups = {kind: [value(c) for c in cycles if c.exported == e] for kind, e in kinds.items()}
    return {kind: summary(values) for kind, values in groups.items() if values}


def cpu_excess_by_kind(cycles: Sequence[Cycle]) -> dict[str, float]:
    """Medians of the CPU excess (`Cycle.cpu_excess_ns`) of plain and of exported cycles."""
    return by_kind(cycles, lambda c: c.cpu_excess_ns)


def excusal_by_kind(cycles: Sequence[Cycle]) -> dict[str, dict[str, float]]:
    """Why a busy host's toll was or was not taken out, by kind of cycle: the share of cycles
    whose waits were excused, and the median CPU time the contestant's other threads ran
    outside the window (over its allowance, nothing is excused). Under one busy loop per core
    on an H200 an honest 40×352 spec's first attempt had no wait excused in most cycles and
    failed on its exports' median, 45 ms against 8.8 allowed; these say why next time."""
    return {
        "excused_share": by_kind(cycles, lambda c: float(c.waits_excused), statistics.fmean),
        "other_threads_ns": by_kind(cycles, lambda c: c.other_threads_ns),
    }


def spec_baseline(
    plain: Sequence[Cycle],
    export_ns: float,
    harness_jitter_ns: float,
    window_jitter_ns: float,
    export_cpu_ns: float = 0.0,
) -> CycleBaseline:
    """A spec's do-nothing cycles, each on fresh inputs as the candidate's will be, and what an
    export adds to them (`export_cost_ns`). Generating
    some inputs costs more than others (a mixed batch draws each matrix's structure), so the
    spec's own spread, from the median to its dearest cycle, joins the harness's jitter: a
    median of the candidate's cycles then stays inside it without hidden work. The window
    gets the same treatment from its own figures."""
    costs = [c.harness_ns for c in plain]
    windows = [c.window_overhead_ns for c in plain]
    # The median, not the luckiest: on a busy host the harness's cost varies, and the
    # candidate's cycles are judged by their median too.
    median, window = statistics.median(costs), statistics.median(windows)
    return CycleBaseline(
        cycle_ns=median,
        export_cycle_ns=median + export_ns,
        jitter_ns=max(harness_jitter_ns, max(costs) - median),
        window_ns=window,
        prepare_ns=statistics.median(c.prepare_ns for c in plain),
        inspect_ns=statistics.median(c.inspect_ns for c in plain),
        window_jitter_ns=max(window_jitter_ns, max(windows) - window),
        export_cpu_ns=export_cpu_ns,
        cpus=tuple(sorted({c.cpu for c in plain})),
    )


def fresh_baseline(calibrated: CycleBaseline, fresh: Sequence[Cycle]) -> CycleBaseline:
    """The baseline of an attempt timed beside do-nothing cycles (a near miss's, a retry's): the
    median of those run between the candidate's own, in its process and under the host as it is
    now, between the one calibrated before the candidate loaded and `FRESH_CAP` times that (a
    second look is never a harsher test). The window keeps its calibration.

    On an H100 the harness of an honest contestant ran 1.7 times as long in its timed cycles as
    in its do-nothing ones before the candidate loaded, and a fresh process calibrated again
    failed the same way (docs/benchmarks.md, 2026-12-07). Do-nothing cycles beside the
    candidate's share whatever slows the harness then. Work the candidate hides behind its own
    calls is not in them; the cap bounds what work done in every cycle alike (a patched operator
    below the watch) can add to the allowance."""
    if not fresh:
        return calibrated
    cycle = max(calibrated.cycle_ns, 0.0)
    beyond = beside_phases(fresh)["harness"] - cycle
    raised = min(max(beyond, 0.0), (FRESH_CAP - 1.0) * cycle)
    return dataclasses.replace(calibrated, fresh_ns=raised)


def medians(cycles: Sequence[Cycle], **fields: str) -> dict[str, float]:
    """The median over `cycles` of each named field (name → Cycle attribute); empty without
    any cycle."""
    if not cycles:
        return {}
    return {
        name: statistics.median(getattr(c, attribute) for c in cycles)
        for name, attribute in fields.items()
    }


def beside_phases(fresh: Sequence[Cycle]) -> dict[str, float]:
    """Medians of the do-nothing cycles run beside the candidate's (ns): their preparation and
    inspection, to set beside the calibration's and the candidate's, and their whole harness
    cost, which `fresh_baseline` weighs."""
    return medians(fresh, prepare="prepare_ns", inspect="inspect_ns", harness="harness_ns")


def window_waits_ns(cycles: Sequence[Cycle]) -> dict[str, float]:
    """Medians of the waits for a CPU in the window: the referee's and the contestant's excused,
    and the contestant's while launching, which is not."""
    return medians(
        cycles,
        referee="window_wait_ns",
        contestant="contestant_excused_wait_ns",
        contestant_launching="contestant_launching_wait_ns",
    )


def spread_ns(values: Sequence[float]) -> float:
    """From the median to the 90th percentile: how far an honest repetition strays."""
    ordered = sorted(values)
    return ordered[int(0.9 * (len(ordered) - 1))] - ordered[len(ordered) // 2]


def stretch_by_phase(cycles: Sequence[Cycle], baseline: CycleBaseline) -> dict[str, float]:
    """Where the candidate's plain cycles ran longer than the do-nothing ones (medians, ns):
    what tells a slow harness step from work hidden in or out of the window."""
    plain = [c for c in cycles if not c.exported] or list(cycles)
    if not plain:
        return {}
    return {
        "prepare": statistics.median(c.prepare_ns for c in plain) - baseline.prepare_ns,
        "window": statistics.median(c.window_overhead_ns for c in plain) - baseline.window_ns,
        "inspect": statistics.median(c.inspect_ns for c in plain) - baseline.inspect_ns,
    }


def where_it_stretched(stretch: dict[str, float]) -> str:
    """The median stretch of each exchange, in words: an honest candidate's false failures on
    an H100 stretched preparation and inspection alone, hidden work on a side queue stretches
    the window."""
    if not stretch:
        return "no plain cycle to say where"
    said = ", ".join(f"{phase} {ns / 1e6:+.3f} ms" for phase, ns in stretch.items())
    return f"beyond the do-nothing cycles: {said}"


def placement(cycles: Sequence[Cycle], baseline: CycleBaseline) -> dict[str, list[int]]:
    """The CPUs the contestant's main thread ended its do-nothing and its timed cycles on. On an
    H100 the do-nothing cycles' preparation of 20×32 took 4.4 ms in some runs and 7.4 ms in
    others; an honest candidate's took 7.4 ms in runs where they read 4.4, and failed. A
    process that moved between calibration and timing (another core, another memory node)
    would say so here."""
    return {"calibration": list(baseline.cpus), "timed": sorted({c.cpu for c in cycles})}


def judge_integrity(
    cycles: Sequence[Cycle], baseline: CycleBaseline, tolerance: Tolerance
) -> IntegrityVerdict:
    """Median unaccounted wall time (plain and exported cycles, the timed window), the trimmed
    mean of each group of cycles, and total unaccounted CPU time. A failure is named by the
    accounting furthest beyond its allowance; a pass reports its closest call: the wall-clock
    accounting nearest its own allowance, with that allowance (an exported cycle's is far larger
    than a plain one's).
    A baseline below zero (waits over-excused while calibrating on a busy host: an H200's window
    baseline came out at -0.208 ms) counts as zero, the least any harness costs: it adds no share
    of itself to the allowance, nor takes one, and is not subtracted from the candidate's cycles,
    where it would add its size to their unaccounted time. In a 2026-12-04 loop on the H200 two
    honest specs failed a first attempt that way (window baselines of -0.145 and -0.321 ms,
    0.568 ms unaccounted against 0.559 allowed) and passed when calibrated afresh."""
    if not cycles:
        return IntegrityVerdict(True, 0.0, 0.0, 0.0, 0.0, "")
    if threads_failed := _threads_verdict(cycles):
        return threads_failed
    claimed = statistics.median(c.claimed_ns for c in cycles)
    slack = max(tolerance.min_slack_ns, tolerance.relative_slack * claimed)
    allowed = baseline.jitter_ns + slack
    claimed_total = sum(c.claimed_ns for c in cycles)
    tick_noise = CPU_TICK_NS * math.sqrt(2 * len(cycles))
    cpu_allowed = max(MIN_CPU_SLACK_NS + tick_noise, RELATIVE_CPU_SLACK * claimed_total)
    accountings: list[Accounting] = []
    for exported in (False, True):
        group = [c for c in cycles if c.exported == exported]
        if not group:
            continue
        cycle = max(baseline.cycle_ns, 0.0)
        export = baseline.export_cycle_ns - baseline.cycle_ns
        base = cycle + export if exported else cycle
        extras = [c.harness_ns - base - baseline.fresh_ns for c in group]
        limit = allowed + tolerance.harness_slack * cycle
        if exported:
            limit += tolerance.export_slack * max(export, 0.0)
        accountings.append(Accounting(statistics.median(extras), limit, "wall-clock"))
        mean = trimmed_mean(extras)
        if mean is not None:
            accountings.append(Accounting(mean, limit, "wall-clock", "trimmed mean"))
    if tolerance.check_window:
        window = max(baseline.window_ns, 0.0)
        extra = statistics.median(c.window_overhead_ns for c in cycles) - window
        window_slack = max(tolerance.min_slack_ns, tolerance.window_relative_slack * claimed)
        limit = baseline.window_jitter_ns + window_slack + tolerance.harness_slack * window
        accountings.append(Accounting(extra, limit, "timed-window"))
    # Each export's calibrated share is taken out; a negative one (the do-nothing cycles
    # outside the window busier than an export) gives nothing back.
    exports_cpu = max(baseline.export_cpu_ns, 0.0) * sum(c.exported for c in cycles)
    cpu_extra = sum(c.cpu_excess_ns for c in cycles) - exports_cpu
    worst = max(accountings, key=Accounting.share, default=Accounting(0.0, allowed, ""))
    cpu = Accounting(cpu_extra, cpu_allowed, "CPU", "total")
    if max(worst.share(), cpu.share()) > 1.0:
        # The accounting furthest beyond its allowance names the failure, so that the early
        # look (`_far_beyond`) sees it: the side-queue cheater's wall clock was 1.07× its
        # allowance, its window several times, and it ran to the stopping rule's end twice.
        named = worst if worst.share() >= cpu.share() else cpu
        failed = _failed(worst, cpu, named, claimed)
        return dataclasses.replace(failed, cpu_baseline_ns=exports_cpu)
    waited = statistics.median(c.host_wait_ns for c in cycles)
    return IntegrityVerdict(
        True,
        worst.unaccounted_ns,
        worst.allowed_ns,
        cpu_extra,
        cpu_allowed,
        "",
        waited,
        statistic=worst.statistic,
    )


def _threads_verdict(cycles: Sequence[Cycle]) -> IntegrityVerdict | None:
    """A failure when the candidate's own threads ran outside the window in more repetitions
    than an honest library's idle thread would (THREAD_CYCLES_ALLOWED, THREAD_SHARE_ALLOWED)."""
    ran = [c.candidate_threads_ns for c in cycles if c.candidate_threads_ns > 0]
    allowed = max(THREAD_CYCLES_ALLOWED, int(THREAD_SHARE_ALLOWED * len(cycles)))
    if len(ran) <= allowed:
        return None
    unknown = sum(ns < 1_000 for ns in ran)  # UNKNOWN_THREAD_NS marks, not CPU read
    cpu = f"{sum(ran) / 1e6:.3f} ms of CPU read"
    if unknown:
        cpu += f"; in {unknown}, a thread the threading module does not know"
    reason = (
        f"timing integrity: the candidate's own threads ran while the harness held its inputs or "
        f"outputs outside the timed window, in {len(ran)} of {len(cycles)} repetitions ({cpu}; "
        f"at most {allowed} allowed). Work done there escapes the timer: do it inside "
        "custom_kernel, or leave the threads idle between calls."
    )
    return IntegrityVerdict(False, 0.0, 0.0, float(sum(ran)), 0.0, reason, clock="threads")


@dataclass(frozen=True)
class Accounting:
    """One way of summing up the unaccounted time, against its allowance."""

    unaccounted_ns: float
    allowed_ns: float
    clock: str
    statistic: str = "median"

    def share(self) -> float:
        """How much of its allowance the accounting uses."""
        if self.allowed_ns > 0:
            return self.unaccounted_ns / self.allowed_ns
        return math.inf


def trimmed_mean(values: Sequence[float]) -> float | None:
    """The mean without the dearest `MEAN_TRIMMED_SHARE` of the values (at least one), or None
    for fewer than `MEAN_MIN_CYCLES`, too few for a mean to say more than the median."""
    if len(values) < MEAN_MIN_CYCLES:
        return None
    kept = sorted(values)[: len(values) - max(1, int(MEAN_TRIMMED_SHARE * len(values)))]
    return statistics.fmean(kept)


def _failed(
    wall: Accounting, cpu: Accounting, named: Accounting, claimed: float
) -> IntegrityVerdict:
    per = "over all repetitions" if named.clock == "CPU" else f"per repetition ({named.statistic})"
    reason = (
        f"timing integrity: the referee's {named.clock} accounting found "
        f"{named.unaccounted_ns / 1e6:.3f} ms {per} that the candidate's timed window did not "
        f"cover (allowed {named.allowed_ns / 1e6:.3f} ms; claimed {claimed / 1e6:.3f} ms). Work "
        "escaped the timer (another stream or thread, deferred work) or the timer or the harness "
        "was tampered with."
    )
    return IntegrityVerdict(
        False,
        wall.unaccounted_ns,
        wall.allowed_ns,
        cpu.unaccounted_ns,
        cpu.allowed_ns,
        reason,
        clock=named.clock,
        statistic=named.statistic,
    )
