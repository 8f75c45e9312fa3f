"""The offline tuner: unseen points only, steering pins, focus on the classes with most to gain."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from qrsup.agents.proposal import ParentCandidate, Proposal, ProposalContext, ProposalFailure
from qrsup.agents.spaces import BlockedWySpace, FastKernelSpace, embedded_config
from qrsup.agents.tuner import Sample, TunerProposer, source_hash
from qrsup.kernels.suites import QR_V2, SMOKE

ROOT = Path(__file__).resolve().parent.parent


def context(
    source: str, steering=(), ideas=(), stage_shares=None, stage_spec=None
) -> ProposalContext:
    parent = ParentCandidate("c-parent", source, "", "blocked_wy", None)
    return ProposalContext(
        agent="a1",
        role="exploit",
        goal="",
        iteration=1,
        parent=parent,
        incumbent=parent,
        memory=(),
        steering=tuple(steering),
        advisor_ideas=tuple(ideas),
        profile_summary=None,
        spec_labels=(),
        work_dir=Path("."),
        stage_shares=stage_shares or {},
        stage_spec=stage_spec,
    )


def test_tuner_never_proposes_a_seen_point_and_reports_exhaustion():
    space = BlockedWySpace()
    seen: set[str] = set()
    parent = space.render(space.default_point())
    seen.add(source_hash(parent))
    tuner = TunerProposer(space, SMOKE.benchmarks, list, lambda h: h in seen, random.Random(1))
    total = 1
    for value in space.choices().values():
        total *= len(value)
    proposals = []
    for _ in range(total + 5):
        outcome = tuner.propose(context(parent))
        if isinstance(outcome, ProposalFailure):
            break
        assert isinstance(outcome, Proposal)
        digest = source_hash(outcome.source)
        assert digest not in seen
        seen.add(digest)
        proposals.append(outcome)
        parent = outcome.source
    assert isinstance(outcome, ProposalFailure) and outcome.kind == "exhausted"
    assert len(proposals) >= total // 2  # a walk reaches much of the 100-point space


def test_steering_pins_a_knob():
    space = BlockedWySpace()
    tuner = TunerProposer(space, SMOKE.benchmarks, list, lambda h: False, random.Random(2))
    outcome = tuner.propose(
        context(space.render(space.default_point()), steering=["use panel_width=96"])
    )
    assert isinstance(outcome, Proposal)
    assert outcome.params["all.panel_width"] == 96
    assert "steered" in outcome.hypothesis


def test_mutations_focus_on_the_class_that_trails_most():
    space = FastKernelSpace(ROOT / "kernels/fast/configs.toml")
    parent = space.default_point()
    big = [i for i, s in enumerate(QR_V2.benchmarks) if s.n >= 2048]
    slow = Sample(parent, 10.0, {i: (5.0 if i in big else 1.0) for i in range(12)})
    fast = Sample({**parent}, 5.0, {i: 1.0 for i in range(12)})
    tuner = TunerProposer(
        space, QR_V2.benchmarks, lambda: [slow, fast], lambda h: False, random.Random(3)
    )
    classes = {space.class_of(QR_V2.benchmarks[i]) for i in big}
    hits = 0
    for _ in range(40):
        outcome = tuner.propose(context(space.render(parent)))
        changed = {k.split(".")[0] for k, v in outcome.params.items() if parent[k] != v}
        hits += bool(changed & classes)
    assert hits >= 25  # most mutations land on the large-n classes that trail


def test_on_a_gpu_without_a_table_the_tuner_writes_one_and_leaves_sm90s_alone():
    """A B200 searches from the H200's table (the nearest); each candidate carries a table of
    its own for sm_100, which the B200 runs, while an H200 still runs the shipped one."""
    shipped = FastKernelSpace(ROOT / "kernels/fast/configs.toml")
    on_b200 = FastKernelSpace(ROOT / "kernels/fast/configs.toml", arch=100)
    assert on_b200.default_point() == shipped.default_point()
    shipped_rows = shipped.default_point()["huge.panel_split_rows"]
    rows = 512 if shipped_rows != 512 else 256
    point = {**on_b200.default_point(), "huge.panel_split_rows": rows}
    source = on_b200.render(point)
    assert on_b200.read(source) == point
    assert shipped.read(source) == shipped.default_point()
    tables = embedded_config(source).tables
    assert set(tables) == {90, 100}
    assert tables[100][-1].panel_split_rows == rows
    assert tables[90][-1].panel_split_rows == shipped_rows


def test_fast_space_round_trips_its_config():
    space = FastKernelSpace(ROOT / "kernels/fast/configs.toml")
    point = space.default_point()
    assert space.read(space.render(point)) == point


def _panel_widths_proposed(
    space: BlockedWySpace, parent: dict, history: list[Sample], proposals: int
) -> set[object]:
    """The panel widths a seeded tuner proposes from `parent`, given `history`."""
    tuner = TunerProposer(
        space, SMOKE.benchmarks, lambda: history, lambda h: False, random.Random(4)
    )
    proposed = set()
    for _ in range(proposals):
        outcome = tuner.propose(context(space.render(parent)))
        assert isinstance(outcome, Proposal)
        proposed.add(outcome.params["all.panel_width"])
    return proposed


def test_a_knob_value_that_only_ever_failed_is_not_proposed_again():
    """Two failed points with one panel width and none passing with it: the tuner stays off
    that width, while a width that failed only once stays in play."""
    space = BlockedWySpace()
    parent = space.default_point()
    knob = "all.panel_width"
    values = space.choices()[knob]
    banned, once = 24, 48  # the parent's 32's neighbours, each a step away
    assert {banned, once} <= set(values) and parent[knob] == 32
    history = [
        Sample({**parent, knob: banned}, None, {}),
        Sample({**parent, knob: banned, "all.update_chunk": 64}, None, {}),
        Sample({**parent, knob: once}, None, {}),
        Sample(parent, 1.0, {}),
    ]
    proposed = _panel_widths_proposed(space, parent, history, 200)
    assert banned not in proposed
    assert once in proposed


def test_a_knob_value_whose_point_was_slow_to_compile_is_not_proposed_again():
    """One point that kept the loop waiting 82 s for its kernels and was slower: its panel width
    is left alone. A value just as slow to compile whose point is the fastest seen stays in
    play, as does one that compiled quickly."""
    space = BlockedWySpace()
    parent = space.default_point()
    knob = "all.panel_width"
    costly, fastest, quick = 24, 48, 16
    assert {costly, fastest, quick} <= set(space.choices()[knob]) and parent[knob] == 32
    history = [
        Sample({**parent, knob: costly}, 2.0, {}, compile_wait_s=82.0),
        Sample({**parent, knob: fastest}, 0.5, {}, compile_wait_s=90.0),
        Sample({**parent, knob: quick}, 3.0, {}, compile_wait_s=1.5),
        Sample(parent, 1.0, {}),
    ]
    proposed = _panel_widths_proposed(space, parent, history, 300)
    assert costly not in proposed
    assert {fastest, quick} <= proposed


def test_a_knob_value_whose_point_outlasted_the_compile_patience_is_not_proposed_again():
    """Set aside unjudged after 45 s (under COSTLY_COMPILE_S): no figure, and still shunned."""
    space = BlockedWySpace()
    parent = space.default_point()
    knob = "all.panel_width"
    slow, quick = 24, 16
    history = [
        Sample({**parent, knob: slow}, None, {}, compile_wait_s=45.0, compile_overran=True),
        Sample({**parent, knob: quick}, 3.0, {}, compile_wait_s=45.0),
        Sample(parent, 1.0, {}),
    ]
    proposed = _panel_widths_proposed(space, parent, history, 300)
    assert slow not in proposed and quick in proposed


def test_a_hypothesis_names_every_knob_its_source_changes_in_a_parent_of_another_family():
    """A structural agent's first parent is the incumbent of another family, handed over
    without its source (its recorded knobs only): the search starts from this family's
    defaults, and the panel_impl that start changes is named beside the mutation's."""
    blocked, recursive = BlockedWySpace(), BlockedWySpace("recursive_wy")
    incumbent = blocked.default_point()
    parent = ParentCandidate("c-incumbent", "", "", "recursive_wy", None, params=incumbent)
    tuner = TunerProposer(recursive, SMOKE.benchmarks, list, lambda h: False, random.Random(1))
    for _ in range(5):
        outcome = tuner.propose(replace(context(""), parent=parent))
        assert isinstance(outcome, Proposal)
        assert outcome.params["all.panel_impl"] == "recursive"
        changed = [k for k, v in outcome.params.items() if incumbent[k] != v]
        assert len(changed) >= 2
        assert all(
            f"{k}: {incumbent[k]} → {outcome.params[k]}" in outcome.hypothesis for k in changed
        )
    unknown = tuner.propose(context(""))  # nothing recorded of the parent
    assert unknown.hypothesis.startswith("from the recursive_wy defaults; ")
    same_family = tuner.propose(context(recursive.render(recursive.default_point())))
    assert "panel_impl" not in same_family.hypothesis
