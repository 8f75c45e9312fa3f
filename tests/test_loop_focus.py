"""A candidate whose change reaches some specs alone is quick-judged on those specs, against the
incumbent's quick-rule figures on the same specs, and the decision record names them; its kernels
are compiled ahead for those specs alone."""

from __future__ import annotations

from qrsup.agents import agent_main
from qrsup.agents.affected_specs import AffectedSpecs
from qrsup.agents.proposal import Proposal, ProposalContext
from qrsup.agents.session import AgentSpec
from qrsup.agents.store import Store

from tests.loop_helpers import make_session


class _OneKnob:
    """A config-point candidate: the parent's source with a comment, and its point."""

    name = "tuner"
    free = True

    def propose(self, context: ProposalContext) -> Proposal:
        source = f"{context.parent.source}\n# one knob\n"
        return Proposal(source, "one knob", "blocked_wy", params={"all.knob": 1})


def test_the_quick_stage_and_its_comparison_cover_the_affected_specs(tmp_path, monkeypatch):
    paths = make_session(tmp_path, (AgentSpec("a1", goal="geomean < 1ns", max_iterations=1),))
    monkeypatch.setattr(agent_main, "build_proposer", lambda *_: _OneKnob())
    focus = AffectedSpecs(tests=(1,), benchmarks=(1,))  # the tiny suite's second test and bench
    monkeypatch.setattr(
        agent_main,
        "focus_from_parent",
        lambda *_: lambda candidate: focus if candidate.params else None,
    )
    compiled = []

    def compiler_for(device, cache, work):  # stands in for the GPU host's compiler
        def compile_ahead(candidate, specs):
            compiled.append((device, candidate.id, [spec.n for spec in specs]))
            return "precompiled 3 kernels (0 already cached) in 0.1 s"

        return compile_ahead

    monkeypatch.setattr(agent_main.Precompiler, "for_device", staticmethod(compiler_for))
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
    # Its kernels were compiled ahead for the focus alone, once, before its judge run.
    assert compiled == [("cpu", iteration.candidate_id, [9, 24])]
    assert "it 1: precompiled 3 kernels" in paths.agent_log("a1").read_text()
