"""Beam rules: each slot's entry condition, noise, and the structural slot's protection."""

from __future__ import annotations

import pytest
from qrsup.agents.beam import Scored, Slot, place, source_lines
from qrsup.agents.best_figures import BestFigures, show_earlier_figures
from qrsup.agents.decision import geomean_noise
from qrsup.agents.evaluation import StageResult
from qrsup.agents.heartbeat import Heartbeat, read_beat
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.schema import Decision, Inherited, Iteration, Verdict

INC = Scored("inc", "blocked_wy", 10.0, {0: 10.0, 1: 10.0}, 20)
PASSED = JudgeReport.from_dict(
    {"verdict": "pass", "reason": "", "candidate": "c.py", "source_sha256": "", "suite": "qr_v2",
     "mode": "bench", "seed": None}
)  # fmt: skip


def scored(cid, family="blocked_wy", geo=10.0, means=None, lines=20):
    return Scored(cid, family, geo, means or {0: geo, 1: geo}, lines)


def test_exploit_needs_a_gain_beyond_noise_over_the_holder():
    holder = Slot(scored("h", geo=9.0))
    assert (
        place(scored("c", geo=8.95), {"exploit": holder}, INC, 0.02, 1, "exploit").role != "exploit"
    )
    assert (
        place(scored("c", geo=8.5), {"exploit": holder}, INC, 0.02, 1, "exploit").role == "exploit"
    )


def test_near_miss_wins_a_spec_while_losing_overall():
    candidate = scored("c", geo=11.0, means={0: 8.0, 1: 15.0})
    assert place(candidate, {}, INC, 0.02, 1, "near-miss").role == "near-miss"
    loser = scored("d", geo=11.0, means={0: 11.0, 1: 11.0})
    placement = place(loser, {}, INC, 0.02, 1, "near-miss")
    assert placement.role is None and "wins no spec" in placement.reason


def test_structural_takes_another_family_and_protects_it_from_a_third():
    """Protection keeps a young family from being crowded out by another, not from its own
    faster candidates: a session once rejected a structural child 40% faster than its holder
    (and 3.5% faster than the incumbent) because the holder was protected."""
    first = scored("s1", family="recursive_wy", geo=30.0)
    assert place(first, {}, INC, 0.02, 1, "structural").role == "structural"
    protected = {"structural": Slot(first, protected_until=10)}
    other = scored("s2", family="unblocked", geo=20.0)
    placement = place(other, protected, INC, 0.02, 5, "structural")
    assert placement.role != "structural" and "protected until iteration 10" in placement.reason
    assert place(other, protected, INC, 0.02, 11, "structural").role == "structural"
    matured = scored("s3", family="recursive_wy", geo=20.0)
    assert place(matured, protected, INC, 0.02, 5, "structural").role == "structural"
    slower = scored("s4", family="recursive_wy", geo=29.9)
    assert place(slower, protected, INC, 0.02, 5, "structural").role != "structural"


def test_cleanup_is_as_fast_within_noise_and_shorter():
    short = scored("c", geo=10.1, lines=12)
    assert place(short, {}, INC, 0.02, 1, "cleanup").role == "cleanup"
    assert place(scored("d", geo=10.1, lines=25), {}, INC, 0.02, 1, "cleanup").role is None


def test_rejection_gives_every_slots_reason():
    placement = place(scored("c", geo=12.0, means={0: 12.0, 1: 12.0}), {}, INC, 0.02, 1, "exploit")
    assert placement.role is None
    for role in ("near-miss", "structural", "cleanup"):
        assert f"{role}:" in placement.reason


def test_source_lines_ignores_blanks_and_comments():
    assert source_lines("a = 1\n\n# note\n  b = 2\n") == 2


def test_a_gain_on_the_only_spec_a_stage_timed_is_weighed_against_that_specs_noise():
    """A full stage timed 2×4096 alone and took the incumbent's figures for the other 11: its
    15% there moves the geomean 1.3%. Against the whole suite's 2% that was "within noise"
    (an H200 loop, 2026-12-04); the other specs cancel, so the 2% applies to the one timed."""
    incumbent_means = {i: 1.0 for i in range(12)}
    incumbent = Scored("inc", "fast", 1.0, incumbent_means, 20)
    means = {**incumbent_means, 6: 0.85}
    candidate = Scored("c", "fast", 0.85 ** (1 / 12), means, 20)
    inherited = Inherited("inc", tuple(i for i in range(12) if i != 6))
    full = StageResult("full", PASSED, means, inherited)
    noise = geomean_noise(0.02, full, "inc", 12)
    assert noise == pytest.approx(1.02 ** (1 / 12) - 1)
    assert place(candidate, {}, incumbent, noise, 1, "exploit").role == "exploit"
    assert place(candidate, {}, incumbent, 0.02, 1, "exploit").role is None
    # 1.5% on that spec is inside its 2%, whatever the share.
    small = Scored("s", "fast", 0.985 ** (1 / 12), {**incumbent_means, 6: 0.985}, 20)
    assert place(small, {}, incumbent, noise, 1, "exploit").role is None


def test_the_session_noise_stands_when_every_spec_was_timed_or_another_candidate_lent_figures():
    timed = StageResult("full", PASSED, {0: 1.0, 1: 1.0})
    assert geomean_noise(0.02, timed, "inc", 2) == 0.02
    lent = StageResult("full", PASSED, {0: 1.0, 1: 1.0}, Inherited("c-parent", (1,)))
    assert geomean_noise(0.02, lent, "inc", 2) == 0.02


def test_an_agents_best_figures_keep_the_full_and_quick_stages_apart():
    """A restarted agent reads its best from its records: a quick stage's figure (another
    rule's, and a rejected candidate's) once showed as its best beside a slower incumbent, so
    it is kept apart and shown, marked, only while no full stage has a figure."""
    quick = Iteration("a1", 1, Verdict.PASS, Decision.NOT_PROMISING, "c-q", geomean_ns=16.7e6)
    slower = Iteration("a1", 2, Verdict.PASS, Decision.NOT_PROMISING, "c-s", geomean_ns=30.0e6)
    full = Iteration("a1", 3, Verdict.PASS, Decision.REJECTED, "c-f", geomean_ns=24.4e6)
    beam = Iteration("a1", 4, Verdict.PASS, Decision.BEAM_EXPLOIT, "c-b", geomean_ns=21.0e6)
    failed = Iteration("a1", 5, Verdict.FAIL, Decision.REJECTED, "c-x", geomean_ns=1.0e6)
    failed_quick = Iteration("a1", 6, Verdict.FAIL, Decision.REJECTED, "c-y", geomean_ns=2.0e6)
    assert BestFigures.of([quick, slower]) == BestFigures(None, 16.7e6)
    assert BestFigures.of([quick, full, failed, failed_quick]) == BestFigures(24.4e6, 16.7e6)
    assert BestFigures.of([quick, full, beam, failed]).full_ns == 21.0e6


def test_a_started_agent_shows_its_stored_figures_before_its_first_iteration(tmp_path):
    """A fresh process's first beat carries no figures: a relaunched agent's row read "—"
    until its first iteration in the new process ended."""
    heartbeat = Heartbeat(tmp_path / "a1.beat", "beat incumbent by 5%")
    heartbeat.start()
    try:
        newest_first = [
            Iteration("a1", 2, Verdict.FAIL, Decision.REJECTED, "c-x", geomean_ns=1.0e6),
            Iteration("a1", 1, Verdict.PASS, Decision.NOT_PROMISING, "c-q", geomean_ns=16.7e6),
        ]
        assert show_earlier_figures(newest_first, heartbeat) == BestFigures(None, 16.7e6)
        shown = read_beat(tmp_path / "a1.beat")
        assert shown is not None and shown.state == "starting"
        assert (shown.best_geomean_ns, shown.best_quick_geomean_ns) == (None, 16.7e6)
        assert shown.last_verdict == "fail"
        assert show_earlier_figures([], heartbeat) == BestFigures()
        assert read_beat(tmp_path / "a1.beat").last_verdict is None
    finally:
        heartbeat.stop()
