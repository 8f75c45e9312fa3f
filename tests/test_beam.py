"""Beam rules: each slot's entry condition, noise, and the structural slot's protection."""

from __future__ import annotations

from qrsup.agents.beam import Scored, Slot, place, source_lines

INC = Scored("inc", "blocked_wy", 10.0, {0: 10.0, 1: 10.0}, 20)


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


def test_structural_takes_another_family_and_protects_it():
    first = scored("s1", family="recursive_wy", geo=30.0)
    assert place(first, {}, INC, 0.02, 1, "structural").role == "structural"
    protected = {"structural": Slot(first, protected_until=10)}
    faster = scored("s2", family="recursive_wy", geo=20.0)
    assert place(faster, protected, INC, 0.02, 5, "structural").role != "structural"
    assert place(faster, protected, INC, 0.02, 11, "structural").role == "structural"


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
