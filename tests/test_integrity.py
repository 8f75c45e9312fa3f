"""Timing integrity on recorded cycles: a busy host is not hidden work, hidden work is."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from qrsup.kernels.judge.contestant_process import ContestantFailure
from qrsup.kernels.judge.integrity import (
    CPU_TOLERANCE,
    CUDA_TOLERANCE,
    Cycle,
    CycleBaseline,
    cpu_excess_by_kind,
    excusal_by_kind,
    export_cost_ns,
    export_cpu_cost_ns,
    judge_integrity,
    placement,
    spec_baseline,
    spread_ns,
    stretch_by_phase,
    where_it_stretched,
    window_waits_ns,
)
from qrsup.kernels.judge.referee import (
    _abort_check_due,
    _claimed_ns,
    _far_beyond,
    _launch_wait_ns,
    abort_factor,
)

MS = 1_000_000
BASELINE = CycleBaseline(cycle_ns=2 * MS, export_cycle_ns=3 * MS, jitter_ns=0.1 * MS)


def _cycles(claimed_ms: float, stretch_ms: float, waited_ms: float, count: int = 20) -> list:
    """Repetitions whose harness ran `stretch_ms` longer than calibrated, `waited_ms` of it
    spent runnable but waiting for a CPU (the allowance here is 1.6 ms)."""
    cycle_ns = (claimed_ms + stretch_ms) * MS + BASELINE.cycle_ns
    return [
        Cycle(claimed_ms * MS, claimed_ms * MS, cycle_ns, 0.0, False, waited_ms * MS)
        for _ in range(count)
    ]


def test_a_busy_host_that_delays_every_wakeup_is_not_hidden_work():
    busy = judge_integrity(_cycles(0.1, 2.5, 2.5), BASELINE, CUDA_TOLERANCE)
    assert busy.ok, busy.reason
    assert busy.host_wait_ns == 2.5 * MS


def test_the_same_stretch_without_a_cpu_wait_is_unaccounted_time():
    hidden = judge_integrity(_cycles(0.1, 2.5, 0.0), BASELINE, CUDA_TOLERANCE)
    assert not hidden.ok
    assert "did not cover" in hidden.reason


def test_a_wait_explains_only_itself_not_more_hidden_work():
    partly = judge_integrity(_cycles(0.1, 8.0, 2.5), BASELINE, CUDA_TOLERANCE)
    assert not partly.ok
    assert abs(partly.unaccounted_ns - 5.5 * MS) < 0.01 * MS


def test_far_beyond_the_allowance_stops_early_but_a_near_miss_does_not():
    gross = judge_integrity(_cycles(0.1, 20.0, 0.0, count=4), BASELINE, CUDA_TOLERANCE)
    near = judge_integrity(_cycles(0.1, 1.8, 0.0, count=4), BASELINE, CUDA_TOLERANCE)
    assert not gross.ok and _far_beyond(gross, 4)
    assert not near.ok and not _far_beyond(near, 4)
    honest = judge_integrity(_cycles(0.1, 0.0, 0.0, count=4), BASELINE, CUDA_TOLERANCE)
    assert not _far_beyond(honest, 4)


def test_the_early_look_asks_less_margin_as_the_cycles_accumulate():
    """2.7× the allowance (the side-queue cheater beside a busy host) runs on at the first look
    and stops at the second; 1.2× never stops early, however many cycles."""
    assert [round(abort_factor(n), 2) for n in (4, 8, 16, 32, 64)] == [3.0, 2.12, 1.5, 1.5, 1.5]
    stretched = judge_integrity(_cycles(0.1, 4.3, 0.0, count=8), BASELINE, CUDA_TOLERANCE)
    assert stretched.unaccounted_ns / stretched.allowed_ns == pytest.approx(2.7, abs=0.05)
    assert not _far_beyond(stretched, 4) and _far_beyond(stretched, 8)
    slight = judge_integrity(_cycles(0.1, 1.9, 0.0, count=64), BASELINE, CUDA_TOLERANCE)
    assert not slight.ok and not _far_beyond(slight, 64)


def _stalled(cycles: list[Cycle], every: int, stall_ms: float) -> list[Cycle]:
    """The same repetitions with `stall_ms` more harness time in every `every`-th one."""
    return [
        replace(c, cycle_ns=c.cycle_ns + stall_ms * MS) if i % every == 0 else c
        for i, c in enumerate(cycles)
    ]


def test_work_hidden_in_a_third_of_the_cycles_fails_on_their_mean_though_the_median_is_clean():
    stalled = judge_integrity(
        _stalled(_cycles(0.1, 0.0, 0.0, 90), 3, 30.0), BASELINE, CPU_TOLERANCE
    )
    assert not stalled.ok
    assert (stalled.clock, stalled.statistic) == ("wall-clock", "trimmed mean")
    assert "wall-clock accounting" in stalled.reason and "(trimmed mean)" in stalled.reason
    # The cycles' mean less the dearest 4 of the 90: 26 stalls of 30 ms over 86 cycles.
    assert stalled.unaccounted_ns == pytest.approx(26 * 30 * MS / 86)


def test_a_busy_hosts_rare_long_stalls_are_trimmed_from_the_mean():
    rare = judge_integrity(_stalled(_cycles(0.1, 0.0, 0.0, 90), 30, 500.0), BASELINE, CPU_TOLERANCE)
    assert rare.ok, rare.reason
    assert rare.statistic == "median" and rare.unaccounted_ns == 0.0


def test_too_few_cycles_for_a_mean_are_judged_by_their_median_alone():
    few = judge_integrity(_stalled(_cycles(0.1, 0.0, 0.0, 7), 3, 30.0), BASELINE, CPU_TOLERANCE)
    assert few.ok, few.reason
    enough = judge_integrity(_stalled(_cycles(0.1, 0.0, 0.0, 8), 3, 30.0), BASELINE, CPU_TOLERANCE)
    assert not enough.ok and enough.statistic == "trimmed mean"


def test_integrity_is_looked_at_early_on_a_doubling_schedule():
    assert [n for n in range(1, 70) if _abort_check_due(n)] == [4, 8, 16, 32, 64]


WINDOW_BASELINE = CycleBaseline(
    cycle_ns=6 * MS, export_cycle_ns=7 * MS, jitter_ns=0.1 * MS, window_ns=0.2 * MS
)


def _side_queue_cycles(hidden_ms: float, window_wait_ms: float = 0.0) -> list[Cycle]:
    """A kernel that claims 0.05 ms while `hidden_ms` of device work drains after its events:
    the reply, and so the referee's window, waits for it."""
    claimed = 0.05 * MS
    window = claimed + 0.2 * MS + (hidden_ms + window_wait_ms) * MS
    cycle = WINDOW_BASELINE.cycle_ns + window
    return [
        Cycle(claimed, window, cycle, 0.0, False, window_wait_ns=window_wait_ms * MS)
        for _ in range(20)
    ]


def _waited_in_the_window(wait_ms: float, launching_ms: float) -> list[Cycle]:
    """An honest 6.3 ms kernel whose contestant waited `wait_ms` for a CPU in the window,
    `launching_ms` of it while launching (which the claimed time already holds)."""
    claimed = 6.3 * MS
    window = claimed + 0.2 * MS + (wait_ms - launching_ms) * MS
    cycle = WINDOW_BASELINE.cycle_ns + window
    return [
        Cycle(claimed, window, cycle, 0.0, False, 0.0, 0.0, wait_ms * MS, launching_ms * MS)
        for _ in range(3)
    ]


def test_a_contestants_wait_for_a_cpu_in_the_window_is_the_hosts_toll_in_the_cycle_too():
    """A scheduler tick (4 ms) lost after the launches: the window excused it, the whole cycle
    did not, and an honest spec failed beside a busy host."""
    verdict = judge_integrity(_waited_in_the_window(4.0, 0.0), WINDOW_BASELINE, CUDA_TOLERANCE)
    assert verdict.ok, verdict.reason
    hidden = [replace(c, cycle_ns=c.cycle_ns + 8 * MS) for c in _waited_in_the_window(4.0, 0.0)]
    caught = judge_integrity(hidden, WINDOW_BASELINE, CUDA_TOLERANCE)
    assert not caught.ok and caught.clock == "wall-clock", "a wait excuses only itself"


def test_a_wait_while_launching_is_not_excused_twice():
    """Waiting while launching lengthens the claimed time; excused again, it would hide as
    much work elsewhere in the cycle."""
    cycles = _waited_in_the_window(4.0, 4.0)
    assert cycles[0].harness_ns == pytest.approx(WINDOW_BASELINE.cycle_ns + 0.2 * MS)


def test_work_draining_after_the_events_fails_the_window_though_the_cycle_hides_it():
    """2.4 ms hidden beside a 6 ms harness cycle is inside the cycle's slack (0.6 + 3 ms)."""
    verdict = judge_integrity(_side_queue_cycles(2.4), WINDOW_BASELINE, CUDA_TOLERANCE)
    assert not verdict.ok
    assert "timed-window" in verdict.reason
    assert abs(verdict.unaccounted_ns - 2.4 * MS) < 0.01 * MS


def test_the_waits_excused_in_a_window_are_reported_by_whose_they_were():
    cycles = [
        Cycle(50 * MS, 66 * MS, 80 * MS, 0.0, False, 0.0, wait * MS, 26.0 * MS)
        for wait in (0.5, 1.0, 3.0)
    ]
    assert window_waits_ns(cycles) == {
        "referee": 1.0 * MS,
        "contestant": 26.0 * MS,
        "contestant_launching": 0.0,
    }
    assert cycles[0].window_overhead_ns == pytest.approx((66 - 50 - 0.5 - 26) * MS)
    assert window_waits_ns([]) == {}


def test_a_failure_is_named_by_the_accounting_furthest_beyond_its_allowance():
    """4 ms hidden: the whole cycle is 1.2× its allowance, the window 6.7× its own. Named by
    the cycle, the early look saw a near miss, and the H200's side-queue cheater ran to the
    stopping rule's end on both attempts (31–37 s)."""
    verdict = judge_integrity(_side_queue_cycles(4.0), WINDOW_BASELINE, CUDA_TOLERANCE)
    assert not verdict.ok and verdict.clock == "timed-window"
    assert verdict.unaccounted_ns == pytest.approx(4.0 * MS)
    assert _far_beyond(verdict, 4)


def test_an_honest_window_and_a_busy_hosts_toll_in_it_pass():
    assert judge_integrity(_side_queue_cycles(0.0), WINDOW_BASELINE, CUDA_TOLERANCE).ok
    busy = judge_integrity(_side_queue_cycles(0.0, 3.0), WINDOW_BASELINE, CUDA_TOLERANCE)
    assert busy.ok, busy.reason


def test_the_window_is_judged_against_its_own_spread_not_the_whole_cycles():
    """The side-queue cheater passed on an H200: its hidden work drained inside the window, but
    the window's allowance then included the whole cycle's jitter (input generation and all,
    milliseconds on a loaded host), which swallowed it."""
    calibration = [
        Cycle(0.0, (0.2 + extra) * MS, (6.0 + jitter) * MS, 0.0, False)
        for extra, jitter in ((0.0, 0.0), (0.05, 3.0), (0.1, 6.0), (0.0, 1.0), (0.05, 2.0))
    ]
    exported = Cycle(0.0, 0.2 * MS, 7.0 * MS, 0.0, True)
    export = export_cost_ns(calibration, exported)
    baseline = spec_baseline(calibration, export, 6.0 * MS, spread_ns([0.0, 0.02 * MS]))
    assert baseline.jitter_ns == 6.0 * MS
    assert baseline.window_jitter_ns == pytest.approx(0.05 * MS)
    hidden = judge_integrity(_side_queue_cycles(2.4), baseline, CUDA_TOLERANCE)
    assert not hidden.ok and "timed-window" in hidden.reason
    honest = judge_integrity(_side_queue_cycles(0.3), baseline, CUDA_TOLERANCE)
    assert honest.ok, honest.reason  # within the 0.5 ms floor of what a window may stray


def test_the_cpu_judges_no_window_of_its_own():
    """On the CPU hidden threads are charged by CPU accounting; the window is not looked at."""
    assert judge_integrity(_side_queue_cycles(2.4), WINDOW_BASELINE, CPU_TOLERANCE).ok


def _mixed_cycles(prepare_ms: list[float], claimed_ms: float, hidden_ms: float = 0.0) -> list:
    """Cycles whose input generation costs what `prepare_ms` says (a mixed batch's varies)."""
    return [
        Cycle(claimed_ms * MS, claimed_ms * MS, (cost + claimed_ms + hidden_ms) * MS, 0.0, False)
        for cost in prepare_ms
    ]


def test_a_spec_whose_inputs_cost_more_on_some_seeds_is_calibrated_with_that_spread():
    """The H200 case: 640×512 mixed generates in 40–100 ms; an honest median of three unlucky
    repetitions once landed 34 ms above a fixed-seed baseline and failed."""
    calibration = _mixed_cycles([40.0, 55.0, 70.0, 85.0, 100.0], 0.0)
    exported = _mixed_cycles([70.0], 0.0)[0]
    baseline = spec_baseline(
        calibration, export_cost_ns(calibration, exported), 0.1 * MS, window_jitter_ns=0.0
    )
    assert baseline.cycle_ns == 70.0 * MS
    assert baseline.jitter_ns == 30.0 * MS
    unlucky = judge_integrity(_mixed_cycles([95.0, 100.0, 104.0], 8.7), baseline, CUDA_TOLERANCE)
    assert unlucky.ok, unlucky.reason
    hidden = judge_integrity(
        _mixed_cycles([40.0, 70.0, 100.0], 8.7, hidden_ms=80.0), baseline, CUDA_TOLERANCE
    )
    assert not hidden.ok


def test_the_stretch_is_told_by_phase():
    """An honest H200 run failed with 8 ms unaccounted; the record now says in which exchange."""
    base = CycleBaseline(
        10 * MS, 12 * MS, 0.1 * MS, window_ns=0.2 * MS, prepare_ns=6 * MS, inspect_ns=2 * MS
    )
    slow_prepare = Cycle(
        5 * MS, 5.2 * MS, 23 * MS, 0.0, False, prepare_ns=14 * MS, inspect_ns=2 * MS
    )
    assert stretch_by_phase([slow_prepare], base) == {
        "prepare": 8 * MS,
        "window": 0.0,
        "inspect": 0.0,
    }


def test_the_record_says_which_cpus_calibration_and_timing_ended_on():
    """Whether a process that ran its harness slower than calibrated had moved, next time."""

    def on(cycles: list[Cycle], cpus: tuple[int, ...]) -> list[Cycle]:
        return [replace(c, cpu=cpu) for c, cpu in zip(cycles, cpus, strict=True)]

    base = spec_baseline(on(_cycles(0.0, 0.0, 0.0, 3), (3, 3, 5)), 0.0, 0.1 * MS, 0.1 * MS)
    timed = on(_cycles(0.1, 3.0, 0.0, 3), (9, 11, 9))
    assert placement(timed, base) == {"calibration": [3, 5], "timed": [9, 11]}


def _loaded_cycles(hidden_ms: float, launch_wait_ms: float, report: float | None = None) -> list:
    """A 2 ms kernel on a loaded host: its contestant waited `launch_wait_ms` for a CPU while
    launching (inside the claimed time) and 0.1 ms after the device finished, with `hidden_ms`
    draining after its events. `report` is the launch wait it reports (its true one if None)."""
    claimed = (2.0 + launch_wait_ms) * MS
    window = claimed + 0.2 * MS + 0.1 * MS + hidden_ms * MS
    waited = (launch_wait_ms + 0.1) * MS
    reported = launch_wait_ms * MS if report is None else report
    cycle = WINDOW_BASELINE.cycle_ns + window
    return [
        Cycle(claimed, window, cycle, 0.0, False, 0.0, 0.0, waited, reported) for _ in range(20)
    ]


def test_a_wait_while_launching_is_not_excused_a_second_time():
    """Beside one busy loop per core on an H200 a side-queue cheater passed: its wait while
    launching was taken out of its window though its claimed time held it."""
    cheat = judge_integrity(_loaded_cycles(2.0, 4.0), WINDOW_BASELINE, CUDA_TOLERANCE)
    assert not cheat.ok and "timed-window" in cheat.reason
    honest = judge_integrity(_loaded_cycles(0.0, 4.0), WINDOW_BASELINE, CUDA_TOLERANCE)
    assert honest.ok, honest.reason
    assert window_waits_ns(_loaded_cycles(0.0, 4.0)) == {
        "referee": 0.0,
        "contestant": pytest.approx(0.1 * MS),
        "contestant_launching": 4.0 * MS,
    }


def test_a_launch_wait_report_can_move_wait_but_never_add_any():
    """Understating it excuses at most what the kernel counted (the harness reads it, so a
    candidate would have to tamper with the harness); overstating it, or a report that is not a
    count, excuses nothing."""
    understated = _loaded_cycles(2.0, 4.0, report=0.0)
    assert understated[0].contestant_excused_wait_ns == pytest.approx(4.1 * MS)
    overstated = _loaded_cycles(0.0, 4.0, report=1e12)
    assert overstated[0].contestant_excused_wait_ns == 0.0
    assert not judge_integrity(_loaded_cycles(2.0, 4.0, 1e12), WINDOW_BASELINE, CUDA_TOLERANCE).ok
    for garbled in ({}, {"launch_wait_ns": "0"}, {"launch_wait_ns": -5}, {"launch_wait_ns": 1.5}):
        assert _launch_wait_ns(garbled) == math.inf
    assert _launch_wait_ns({"launch_wait_ns": 7}) == 7.0


def test_the_window_gets_a_smaller_share_of_the_claimed_time_than_the_cycle():
    """The loaded H200's side-queue cheater: 539 ms claimed per repetition (its launching, slowed
    by the load), 128 ms hidden after its events; the cycle's 25% would let that pass."""
    claimed, hidden = 539 * MS, 128 * MS
    window = claimed + 0.2 * MS + hidden
    cycles = [Cycle(claimed, window, 6 * MS + window, 0.0, False) for _ in range(20)]
    verdict = judge_integrity(cycles, WINDOW_BASELINE, CUDA_TOLERANCE)
    assert not verdict.ok and "timed-window" in verdict.reason
    assert CUDA_TOLERANCE.window_relative_slack < CUDA_TOLERANCE.relative_slack
    honest = [Cycle(claimed, claimed + 0.5 * MS, 6.5 * MS + claimed, 0.0, False)] * 20
    assert judge_integrity(honest, WINDOW_BASELINE, CUDA_TOLERANCE).ok


def test_a_pass_reports_its_closest_call_with_that_calls_own_allowance():
    """An exported cycle is allowed far more than a plain one (its baseline holds the export:
    about 0.6 s at 640×512). Reported beside the plain cycles' allowance, its larger unaccounted
    time read as a failure that passed (18.1 ms against 3.69 ms allowed, on an H200)."""
    baseline = CycleBaseline(cycle_ns=2 * MS, export_cycle_ns=300 * MS, jitter_ns=0.1 * MS)
    plain = [Cycle(1 * MS, 1 * MS, 1 * MS + 2 * MS + 0.4 * MS, 0.0, False)] * 5
    exported = [Cycle(1 * MS, 1 * MS, 1 * MS + 300 * MS + 5 * MS, 0.0, True)] * 5
    verdict = judge_integrity(plain + exported, baseline, CUDA_TOLERANCE)
    assert verdict.ok, verdict.reason
    # The plain cycles: 0.4 ms of 0.1 + 0.5 + 0.5 × 2 ms; the exported: 5 ms of that + 0.1 × 298.
    assert verdict.unaccounted_ns == pytest.approx(0.4 * MS)
    assert verdict.allowed_ns == pytest.approx(1.6 * MS)


def test_work_deferred_to_the_export_gets_a_small_share_of_the_export_not_half_the_cycle():
    """A candidate hears that its outputs will be checked only after its window, and can do its
    work then. Half an exported cycle hid 8 ms of it at 640×512 (8 ms of harness, 14 ms of
    DMA); a tenth of the export's share does not, and leaves an honest export room for its
    own jitter."""
    baseline = CycleBaseline(cycle_ns=8 * MS, export_cycle_ns=22 * MS, jitter_ns=0.1 * MS)
    plain = [Cycle(0.05 * MS, 0.05 * MS, 0.05 * MS + 8 * MS, 0.0, False)] * 20

    def exported(extra_ms: float) -> list[Cycle]:
        return [Cycle(0.05 * MS, 0.05 * MS, (0.05 + 22 + extra_ms) * MS, 0.0, True)] * 3

    # Allowed 0.1 + 0.5 + 0.5 × 8 ms + 0.1 × 14 ms = 6 ms beyond the exported cycle.
    assert not judge_integrity(plain + exported(8.0), baseline, CUDA_TOLERANCE).ok
    assert judge_integrity(plain + exported(5.5), baseline, CUDA_TOLERANCE).ok
    half = replace(CUDA_TOLERANCE, export_slack=CUDA_TOLERANCE.harness_slack)
    assert judge_integrity(plain + exported(8.0), baseline, half).ok
    # The CPU's allowance is unchanged: twice the exported cycle.
    assert CPU_TOLERANCE.export_slack == CPU_TOLERANCE.harness_slack


def test_a_baseline_below_zero_counts_as_zero():
    """A share of the do-nothing cycle joins the allowance; a calibration over-excused into a
    negative cycle or window took that share away instead, and, subtracted from the candidate's
    cycles, added its size to what they left unaccounted."""
    negative = CycleBaseline(
        cycle_ns=-1 * MS, export_cycle_ns=3 * MS, jitter_ns=0.1 * MS, window_ns=-0.2 * MS
    )
    # The whole cycle: 0.55 ms beyond the claimed time, against 0.1 + 0.5 (not 0.1 + 0.5 − 0.5,
    # nor 1.55 ms against it).
    cycles = [Cycle(1 * MS, 1 * MS, 1 * MS + 0.55 * MS, 0.0, False)] * 5
    verdict = judge_integrity(cycles, negative, CUDA_TOLERANCE)
    assert verdict.ok, verdict.reason
    # The window: 0.45 ms beyond the claimed time, against 0.5 (an H200 loop's honest specs:
    # 0.423 ms, failed as 0.568 against 0.559 with a baseline of -0.145 ms).
    cycles = [Cycle(1 * MS, 1.45 * MS, 1.5 * MS, 0.0, False)] * 5
    verdict = judge_integrity(cycles, negative, CUDA_TOLERANCE)
    assert verdict.ok, verdict.reason
    # What neither baseline excuses still fails: 0.75 ms in the window.
    cycles = [Cycle(1 * MS, 1.75 * MS, 1.8 * MS, 0.0, False)] * 5
    verdict = judge_integrity(cycles, negative, CUDA_TOLERANCE)
    assert not verdict.ok and verdict.clock == "timed-window", verdict.reason


def _export_cycles(plain_cpu_ms: float, export_cpu_ms: float, exports: int = 5) -> list[Cycle]:
    """The H200 640×512 run's shape: 27 plain cycles and a few sampled exports, each with
    `*_cpu_ms` of contestant CPU beyond the wall clock outside the window."""
    plain = [Cycle(7.7 * MS, 7.7 * MS, 10.5 * MS, (2.8 + plain_cpu_ms) * MS, False)] * 27
    export = Cycle(7.7 * MS, 7.7 * MS, 160 * MS, (152.3 + export_cpu_ms) * MS, True)
    return plain + [export] * exports


def test_the_exports_calibrated_cpu_share_is_not_charged_as_hidden_threads():
    """Honest exports of 40 ms CPU each beyond their wall clock: the CPU accounting failed them
    (200 ms against 123 allowed) until the calibration measured what an export adds."""
    calibration = _export_cycles(-1.0, 0.0, exports=0)[:5]
    exported = _export_cycles(-1.0, 40.0, exports=1)[-1]
    share = export_cpu_cost_ns(calibration, exported)
    assert share == pytest.approx(41.0 * MS)
    baseline = spec_baseline(
        calibration, export_cost_ns(calibration, exported), 0.1 * MS, 0.0, share
    )
    honest = _export_cycles(-1.0, 40.0)
    assert not judge_integrity(honest, replace(baseline, export_cpu_ns=0.0), CUDA_TOLERANCE).ok
    verdict = judge_integrity(honest, baseline, CUDA_TOLERANCE)
    assert verdict.ok, verdict.reason
    assert cpu_excess_by_kind(honest) == pytest.approx({"plain": -1.0 * MS, "exported": 40.0 * MS})
    hidden = judge_integrity(_export_cycles(6.0, 40.0), baseline, CUDA_TOLERANCE)
    assert not hidden.ok and hidden.clock == "CPU"


def test_a_record_says_in_which_cycles_a_busy_hosts_toll_was_taken_out_and_why_not():
    plain = Cycle(1 * MS, 1 * MS, 3 * MS, 0.0, False, other_threads_ns=0.5 * MS)
    starved = replace(plain, waits_excused=False, other_threads_ns=9 * MS)
    exported = replace(starved, exported=True, other_threads_ns=30 * MS)
    excusal = excusal_by_kind([plain, plain, starved, exported])
    assert excusal["excused_share"] == pytest.approx({"plain": 2 / 3, "exported": 0.0})
    assert excusal["other_threads_ns"] == {"plain": 0.5 * MS, "exported": 30 * MS}


@pytest.mark.parametrize("claimed", [0, -MS, 10**400, 3 * MS, 2.5 * MS, "2000000", True, None])
def test_a_claimed_time_the_referees_window_rules_out_ends_the_run_as_tampering(claimed):
    """More than nothing, an integer, and inside the window the referee timed around it: a
    claim of 0 or less once killed the referee (the geomean's log), and any other is forged."""
    with pytest.raises(ContestantFailure) as failure:
        _claimed_ns({"elapsed_ns": claimed}, 2 * MS)
    assert failure.value.kind == "tamper"
    assert f"claimed {claimed!r} ns for a timed window" in failure.value.reason


def test_a_claim_inside_the_window_is_taken_as_given():
    assert _claimed_ns({"elapsed_ns": 1}, 2 * MS) == 1
    assert _claimed_ns({"elapsed_ns": 2 * MS + 10_000}, 2 * MS) == 2 * MS + 10_000


@pytest.mark.parametrize(("count", "ran", "ok"), [(20, 1, True), (20, 2, False), (100, 5, True)])
def test_the_candidates_own_threads_may_run_outside_the_window_only_now_and_then(
    count: int, ran: int, ok: bool
):
    """One repetition in twenty (an idle library thread's wake-up), or 5% of them, passes; more
    fails on its own accounting, whatever the clocks say, and stops the spec early."""
    cycles = _cycles(0.1, 0.0, 0.0, count=count)
    cycles[:ran] = [replace(c, candidate_threads_ns=40_000.0) for c in cycles[:ran]]
    verdict = judge_integrity(cycles, BASELINE, CUDA_TOLERANCE)
    assert verdict.ok is ok, verdict.reason
    if not ok:
        assert verdict.clock == "threads" and _far_beyond(verdict, count)
        assert f"in {ran} of {count} repetitions (0.080 ms of CPU read;" in verdict.reason


def test_a_failure_says_which_exchange_ran_longer_than_the_do_nothing_cycles():
    """An honest candidate's false failures stretched preparation and inspection; hidden work on
    a side queue stretches the window: the reason tells a reader which."""
    said = where_it_stretched({"prepare": 3.13 * MS, "window": 0.14 * MS, "inspect": 2.44 * MS})
    assert said == (
        "beyond the do-nothing cycles: prepare +3.130 ms, window +0.140 ms, inspect +2.440 ms"
    )
    assert where_it_stretched({}) == "no plain cycle to say where"
