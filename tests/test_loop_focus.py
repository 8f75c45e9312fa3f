"""A candidate whose change reaches some specs alone is quick-judged on those specs, against the
incumbent's quick-rule figures on the same specs, and the decision record names them; its kernels
are compiled ahead for those specs alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from qrsup.agents import agent_main
from qrsup.agents.affected_specs import AffectedSpecs
from qrsup.agents.proposal import Proposal, ProposalContext
from qrsup.agents.session import AgentSpec, RunPaths
from qrsup.agents.store import Store
from qrsup.kernels.schema import Inherited
from qrsup.kernels.timing import geomean

from tests.loop_helpers import StandInCompiler, make_session


class _OneKnob:
    """A config-point candidate: the parent's source with a comment, and its point."""

    name = "tuner"
    free = True

    def propose(self, context: ProposalContext) -> Proposal:
        source = f"{context.parent.source}\n# one knob\n"
        return Proposal(source, "one knob", "blocked_wy", params={"all.knob": 1})


def _propose_one_knob_reaching_the_focus(monkeypatch) -> None:
    """Every proposal is a one-knob candidate whose change reaches the tiny suite's second test
    and benchmark alone."""
    monkeypatch.setattr(agent_main, "build_proposer", lambda *_: _OneKnob())
    focus = AffectedSpecs(tests=(1,), benchmarks=(1,))
    monkeypatch.setattr(
        agent_main,
        "focus_from_parent",
        lambda *_: lambda candidate: focus if candidate.params else None,
    )


def _run_structural(tmp_path: Path, monkeypatch, full_on_focus: bool) -> RunPaths:
    """One iteration of a structural agent on such a candidate. Its quick stage may be twice as
    slow as the incumbent's: CPU noise once made an identical candidate 58% slower, past the
    near-miss role's 50%, and stopped it short of the full stage."""
    structural = AgentSpec("a1", role="structural", goal="geomean < 1ns", max_iterations=1)
    paths = make_session(tmp_path, (structural,), full_on_focus=full_on_focus)
    _propose_one_knob_reaching_the_focus(monkeypatch)
    assert agent_main.main([str(paths.root), "a1", "cpu"]) == 0
    return paths


@pytest.mark.e2e
def test_the_quick_stage_and_its_comparison_cover_the_affected_specs(tmp_path, monkeypatch):
    paths = make_session(tmp_path, (AgentSpec("a1", goal="geomean < 1ns", max_iterations=1),))
    _propose_one_knob_reaching_the_focus(monkeypatch)
    compiler = StandInCompiler()
    monkeypatch.setattr(agent_main.Precompiler, "for_device", staticmethod(compiler.for_device))
    assert agent_main.main([str(paths.root), "a1", "cpu"]) == 0
    with Store.reader(paths.store) as store:
        (iteration,) = store.iterations("a1")
        assert iteration.evaluated, iteration.reason
        quick = [e for e in store.evaluations(iteration.candidate_id) if e.stage == "quick"]
        assert len(quick) == 1
        labels = [(s["kind"], s["spec"]["n"]) for s in quick[0].report["specs"]]
        assert labels == [("test", 9), ("benchmark", 24)]
        assert set(quick[0].spec_means_ns) == {1}
        assert iteration.comparison is not None and iteration.comparison.specs == [1]
        incumbent = store.candidate(iteration.parent_id)
        reference = [
            e for e in store.evaluations(incumbent.id) if e.stage == "quick" and e.agent == "a1"
        ]
        assert reference and set(reference[-1].spec_means_ns) == {0, 1}
        assert all(s["kind"] == "benchmark" for s in reference[-1].report["specs"])
    # Its kernels were compiled ahead for the focus alone, once, before its judge run; the next
    # proposal's compile, started during that run, was cancelled when the agent stopped.
    (own, ahead) = compiler.started
    assert (own.device, own.candidate_id, own.shapes) == ("cpu", iteration.candidate_id, [9, 24])
    assert not own.cancelled and ahead.cancelled
    assert "it 1: precompiled 3 kernels" in paths.agent_log("a1").read_text()


@pytest.mark.e2e
def test_the_full_stage_times_the_affected_specs_and_takes_the_parents_figures_for_the_rest(
    tmp_path, monkeypatch
):
    paths = _run_structural(tmp_path, monkeypatch, full_on_focus=True)
    with Store.reader(paths.store) as store:
        (iteration,) = store.iterations("a1")
        assert iteration.comparison is not None and iteration.comparison.favours_candidate
        (full,) = [e for e in store.evaluations(iteration.candidate_id) if e.stage == "full"]
        parent = store.candidate(iteration.parent_id)
        # The judge timed spec 1 alone; spec 0's figure is the parent's, and the record says so.
        assert [s["spec"]["n"] for s in full.report["specs"]] == [24]
        assert full.inherited == Inherited(parent.id, (0,))
        assert full.spec_means_ns[0] == parent.spec_means_ns[0]
        assert full.spec_means_ns[1] == full.report["specs"][0]["stats"]["mean_ns"]
        assert full.geomean_ns == pytest.approx(geomean(list(full.spec_means_ns.values())))
        assert full.geomean_ns != full.report["geomean_ns"]
        # The candidate is known by figures over the whole suite, as its record is.
        assert set(store.candidate(iteration.candidate_id).spec_means_ns) == {0, 1}
        assert iteration.geomean_ns == full.geomean_ns
    assert "full stage on specs 1; " in paths.agent_log("a1").read_text()


@pytest.mark.e2e
def test_a_session_can_ask_for_every_spec_in_the_full_stage(tmp_path, monkeypatch):
    paths = _run_structural(tmp_path, monkeypatch, full_on_focus=False)
    with Store.reader(paths.store) as store:
        (iteration,) = store.iterations("a1")
        (full,) = [e for e in store.evaluations(iteration.candidate_id) if e.stage == "full"]
        assert full.inherited is None
        assert [s["spec"]["n"] for s in full.report["specs"]] == [16, 24]
