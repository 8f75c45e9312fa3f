"""The tuner looks where the time goes: stage shares from a profile, busy stages' knobs first."""

from __future__ import annotations

import functools
import random
from collections import Counter

import pytest
from qrsup.agents.phase_focus import knob_stage, latest_stage_shares, stage_shares
from qrsup.agents.proposal import Proposal
from qrsup.agents.spaces import FastKernelSpace
from qrsup.agents.store import Store
from qrsup.agents.tuner import TunerProposer
from qrsup.kernels.profiling.summary import ProfileFailure, ProfileSummary
from qrsup.kernels.profiling.timeline import OpTime, TraceFigures
from qrsup.kernels.schema import Candidate
from qrsup.kernels.suites import QR_V2

from tests.test_tuner import ROOT, context

CONFIGS = ROOT / "kernels/fast/configs.toml"


def summary(phases: dict[str, float], top: tuple[OpTime, ...] = ()) -> ProfileSummary:
    figures = TraceFigures("device", 4, 900.0, 1000.0, 40, 4, 2.0, top, phases)
    return ProfileSummary("c.py", "qr_v2", 3, "640x512 dense c2", "cuda", figures)


def test_marked_phases_give_the_stage_shares_without_other():
    shares = stage_shares(summary({"panel": 0.6, "T": 0.1, "trailing": 0.1, "other": 0.2}))
    assert shares == pytest.approx({"panel": 0.75, "T": 0.125, "trailing": 0.125})


def test_under_a_graph_the_kernel_names_give_the_stages():
    top = (
        OpTime("qr_update_w_kernel", 300.0, 8),
        OpTime("qr_panel_kernel", 500.0, 8),
        OpTime("qr_tfactor_kernel", 100.0, 8),
        OpTime("qr_update_apply_kernel", 100.0, 8),
        OpTime("qr_amax_kernel", 50.0, 1),  # the prescale belongs to no stage
    )
    shares = stage_shares(summary({"other": 1.0}, top))
    assert shares == pytest.approx({"panel": 0.5, "T": 0.1, "trailing": 0.4})
    assert stage_shares(summary({"other": 1.0}, (OpTime("aten::copy_", 5.0, 1),))) == {}


def test_row_split_fused_and_library_kernels_have_their_stages():
    top = (
        OpTime("qr_slab_join_kernel", 40.0, 8),  # a row-split panel
        OpTime("qr_slab_kernel", 10.0, 8),
        OpTime("qr_gram_kernel", 10.0, 8),  # a row-split T factor's Gram
        OpTime("qr_lookahead_kernel", 30.0, 8),  # an update with the next panel in it
        OpTime("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize64x64x8", 10.0, 8),  # cuBLAS's
    )
    shares = stage_shares(summary({"other": 1.0}, top))
    assert shares == pytest.approx({"panel": 0.5, "T": 0.1, "trailing": 0.4})


def test_knobs_map_to_their_stage():
    stages = {knob.split(".")[1]: knob_stage(knob) for knob in FastKernelSpace(CONFIGS).choices()}
    assert stages["panel_elems_per_thread"] == stages["max_panel_elems"] == "panel"
    assert stages["update_block_m"] == stages["update_precision"] == "trailing"
    assert stages["graph"] is None and stages["block_width"] is None
    assert knob_stage("all.t_method") == "T" and knob_stage("all.update_chunk") == "trailing"


def test_the_latest_successful_profile_of_a_candidate_counts(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    store.add_candidate(Candidate("c-1", "h1", "src", None, "a1", "exploit", "fast", "", {}, 0.0))
    assert latest_stage_shares(store.profiles("c-1")) == ({}, None)
    panel_bound = summary({"panel": 0.8, "trailing": 0.2})
    store.add_profile("c-1", "a1", 3, True, panel_bound.to_dict(), 1.0)
    failed = ProfileFailure("profiler", "the profiler could not start")
    store.add_profile("c-1", "a1", 3, False, failed.to_dict(), 1.0)
    shares = {"panel": 0.8, "T": 0.0, "trailing": 0.2}
    assert latest_stage_shares(store.profiles("c-1")) == (shares, 3)
    store.close()


def _stages_mutated(
    shares: dict[str, float], profiled: int = 3, cls: str = "medium", proposals: int = 1200
) -> Counter:
    """How often each stage's knobs of class `cls` were mutated, the parent's shares profiled on
    benchmark `profiled` (3: 640×512, the medium class)."""
    return Counter(_count_stages_mutated(tuple(shares.items()), profiled, cls, proposals))


@functools.cache
def _count_stages_mutated(
    shares_items: tuple[tuple[str, float], ...], profiled: int, cls: str, proposals: int
) -> Counter:
    """_stages_mutated's count, made once a test run for each set of arguments: the tuner is
    seeded, so the blind and panel-bound counts the two tests below share are the same."""
    shares = dict(shares_items)
    space = FastKernelSpace(CONFIGS)
    tuner = TunerProposer(space, QR_V2.benchmarks, list, lambda h: False, random.Random(7))
    parent = space.render(space.default_point())
    counts: Counter = Counter()
    for _ in range(proposals):
        outcome = tuner.propose(context(parent, stage_shares=shares, stage_spec=profiled))
        assert isinstance(outcome, Proposal)
        for change in outcome.hypothesis.split(" (")[0].split("; "):
            knob = change.split(":")[0]
            if knob.split(".")[0] == cls:
                counts[knob_stage(knob)] += 1
    return counts


def test_a_panel_bound_parent_gets_its_panel_knobs_mutated_more_often():
    blind = _stages_mutated({})
    panel_bound = _stages_mutated({"panel": 0.9, "T": 0.0, "trailing": 0.1})
    blind_share = blind["panel"] / sum(blind.values())
    focused_share = panel_bound["panel"] / sum(panel_bound.values())
    # 4 of a class's 13 knobs move the panel: about 0.3 blind, 1.5x that when panel-bound
    assert blind_share < 0.35 and focused_share > 1.5 * blind_share, (blind_share, focused_share)


def test_a_profile_steers_only_the_class_of_the_spec_it_profiled():
    """Shares from 40×176 (benchmark 1, the small class) leave the medium class's mutations as
    they would be without a profile."""

    def panel_share(counts: Counter) -> float:
        return counts["panel"] / sum(counts.values())

    blind = panel_share(_stages_mutated({}))
    focused = panel_share(_stages_mutated({"panel": 0.9, "T": 0.0, "trailing": 0.1}))
    elsewhere = panel_share(_stages_mutated({"panel": 0.9, "T": 0.0, "trailing": 0.1}, profiled=1))
    assert focused > 1.5 * blind and abs(elsewhere - blind) < 0.2 * blind, (blind, elsewhere)
