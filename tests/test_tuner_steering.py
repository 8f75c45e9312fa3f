"""What the tuner takes from a person's steering and an advisor's ideas, and what it says."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from qrsup.agents.proposal import Proposal
from qrsup.agents.spaces import BlockedWySpace, FastKernelSpace
from qrsup.agents.tuner import TunerProposer, source_hash
from qrsup.agents.tuner_steering import read_steering
from qrsup.kernels.suites import SMOKE
from qrsup.supervisor import actions
from qrsup.supervisor.fleet import Fleet

from tests.test_tuner import context
from tests.tui_sessions import frozen_session

ROOT = Path(__file__).resolve().parent.parent
BLOCKED = BlockedWySpace().choices()


@pytest.mark.parametrize(
    "text",
    [
        "panel_width=64",
        "use panel_width: 64",
        "set panel_width to 64.",
        "all.panel_width: 32 → 64",
        "all.panel_width: 32 -> 64",
        "move panel_width from 32 to 64",
        'panel_width="64"',
        "panel_width=64 to see what the panels do",
    ],
)
def test_each_form_a_person_writes_pins_the_value_it_ends_on(text):
    read = read_steering([text], [], BLOCKED)
    assert read.pins == {"all.panel_width": 64}
    assert "steering: the tuner pins all.panel_width=64" in read.transcript


def test_a_bare_knob_and_number_pins_nothing_and_says_which_forms_it_reads():
    read = read_steering(["try panel_width 64"], [], BLOCKED)
    assert read.pins == {} and read.focus == frozenset()
    assert "takes nothing from 'try panel_width 64'" in read.transcript
    assert "panel_width=…" in read.transcript and "class names (all)" in read.transcript


def test_a_value_the_knob_does_not_take_is_named_with_the_values_it_does():
    read = read_steering(["panel_width=65"], [], BLOCKED)
    assert read.pins == {}
    assert "ignores panel_width=65: not one of its values (4, 8, 12" in read.transcript
    assert "takes nothing" not in read.transcript


def test_a_value_an_arrow_points_to_is_the_one_weighed_even_when_not_allowed():
    read = read_steering(["all.panel_width: 32 → 65", "update_chunk=0 to 32"], [], BLOCKED)
    assert read.pins == {"all.update_chunk": 32}
    assert "ignores all.panel_width=65" in read.transcript


def test_a_full_name_overrides_the_short_name_for_its_class_alone():
    choices = FastKernelSpace(ROOT / "kernels/fast/configs.toml").choices()
    read = read_steering(["update_warps=4, then medium.update_warps=8"], [], choices)
    assert read.pins["medium.update_warps"] == 8
    others = {k for k in choices if k.endswith(".update_warps") and not k.startswith("medium.")}
    assert others and all(read.pins[k] == 4 for k in others)
    assert not any("inner_update_warps" in k for k in read.pins)


def test_a_class_is_named_whole_so_medium_1024_is_not_medium():
    choices = FastKernelSpace(ROOT / "kernels/fast/configs.toml").choices()
    assert read_steering(["look at medium-1024"], [], choices).focus == {"medium-1024"}
    assert read_steering(["and medium too"], [], choices).focus == {"medium"}


def test_advisor_prose_gives_its_pins_and_one_line_saying_what_was_taken():
    ideas = ["Wider panels cut the traffic.", "Try t_method=recurrence; panel_width=7 is odd."]
    read = read_steering([], ideas, BLOCKED)
    assert read.pins == {"all.t_method": "recurrence"}
    assert read.transcript.splitlines() == [
        "steering: the tuner pins all.t_method=recurrence",
        "advisor: the tuner takes all.t_method=recurrence from the advisor's 2 ideas",
    ]


def test_advisor_ideas_the_tuner_cannot_use_are_said_to_be_ignored_in_its_log_line():
    space = BlockedWySpace()
    tuner = TunerProposer(space, SMOKE.benchmarks, list, lambda h: False, random.Random(5))
    ideas = ["[playbook:cuda-graphs] replay the launches as one graph", "fuse the T build"]
    outcome = tuner.propose(context(space.render(space.default_point()), ideas=ideas))
    assert isinstance(outcome, Proposal)
    assert outcome.transcript == (
        "advisor: the tuner ignores the advisor's 2 ideas: it cannot use free text, only "
        "knob=value pins (panel_width=…, or CLASS.panel_width=… for one class) and class names "
        "(all); steer it with a pin to try one"
    )


def test_advice_asked_for_a_tuner_agent_says_at_once_that_the_tuner_ignores_it(tmp_path):
    fleet = Fleet(frozen_session(tmp_path))
    result = actions.advise(fleet, "a1")
    assert result.ok and "idea(s) from playbook queued for a1" in result.message
    assert result.message.endswith("steer it with a pin to try one")
    assert "; the tuner ignores the advisor's" in result.message


def test_the_tuners_proposal_carries_what_it_took_from_the_steer():
    space = BlockedWySpace()
    tuner = TunerProposer(space, SMOKE.benchmarks, list, lambda h: False, random.Random(5))
    parent = space.render(space.default_point())
    pinned = tuner.propose(context(parent, steering=["set panel_width to 64"]))
    assert isinstance(pinned, Proposal) and pinned.params["all.panel_width"] == 64
    assert pinned.transcript == "steering: the tuner pins all.panel_width=64"
    unread = tuner.propose(context(parent, steering=["bigger panels please"]))
    assert isinstance(unread, Proposal)
    assert unread.transcript.startswith(
        "steering: the tuner takes nothing from 'bigger panels please'"
    )
    assert tuner.propose(context(parent)).transcript == ""


def test_a_pin_is_tried_alone_first_then_beside_mutations_once_that_point_is_seen():
    space = BlockedWySpace()
    seen: set[str] = set()
    tuner = TunerProposer(space, SMOKE.benchmarks, list, seen.__contains__, random.Random(6))
    parent = space.default_point()
    steer = context(space.render(parent), steering=["panel_width=64"])
    alone = tuner.propose(steer)
    assert isinstance(alone, Proposal)
    assert alone.params == {**parent, "all.panel_width": 64}
    assert alone.hypothesis == f"all.panel_width: {parent['all.panel_width']} → 64 (steered)"
    seen.add(source_hash(alone.source))
    beside = tuner.propose(steer)
    assert isinstance(beside, Proposal) and beside.params["all.panel_width"] == 64
    assert beside.params != alone.params
    assert beside.hypothesis.endswith("(steered: all.panel_width=64)")
