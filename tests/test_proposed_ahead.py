"""A free proposer's next candidate is proposed while the current one is judged, so its kernels
compile meanwhile; it is judged next only if nothing it was made from changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from qrsup.agents import agent_main
from qrsup.agents.proposal import ParentCandidate, Proposal, ProposalContext
from qrsup.agents.proposed_ahead import ProposedAhead
from qrsup.agents.session import AgentSpec
from qrsup.agents.store import Store
from qrsup.kernels.schema import Decision, Verdict

from tests.loop_helpers import StandInCompiler, make_session


class _Failing:
    """Each proposal a new source that fails the gates, so the parent never changes."""

    name = "tuner"
    free = True

    def __init__(self) -> None:
        self.count = 0

    def propose(self, context: ProposalContext) -> Proposal:
        self.count += 1
        source = f"{context.parent.source}\ncustom_kernel = None  # try {self.count}\n"
        return Proposal(source, f"try {self.count}", "blocked_wy", params={"all.knob": 1})


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_the_next_candidate_compiles_during_this_ones_judge_run_and_is_judged_next(
    tmp_path, monkeypatch, seed_incumbent
):
    paths = make_session(tmp_path, (AgentSpec("a1", goal="geomean < 1ns", max_iterations=2),))
    seed_incumbent(paths)
    monkeypatch.setattr(agent_main, "build_proposer", lambda *_: _Failing())
    compiler = StandInCompiler(wait_s=0.3)
    monkeypatch.setattr(agent_main.Precompiler, "for_device", staticmethod(compiler.for_device))
    assert agent_main.main([str(paths.root), "a1", "cpu"]) == 0
    with Store.reader(paths.store) as store:
        second, first = store.iterations("a1")  # newest first
        assert first.evaluated and second.evaluated
        # Each record says how long the loop waited for the candidate's kernels.
        assert all(0.3 <= r.compile_wait_s < 5.0 for r in (first, second))
        assert (first.hypothesis, second.hypothesis) == ("try 1", "try 2")
        (judged_first,) = store.evaluations(first.candidate_id)
    # The second's compile started before the first's judge run ended, and was the one its own
    # judge run waited for; the third, proposed during the second's run, was cancelled at stop.
    one, two, three = compiler.started
    assert [c.candidate_id for c in (one, two)] == [first.candidate_id, second.candidate_id]
    assert two.started < judged_first.created_at
    assert not one.cancelled and not two.cancelled and three.cancelled
    # It stood still while the first's judge run timed, and went on once that run ended.
    assert True in two.holds and two.holds[-1] is False
    assert not one.holds  # a candidate's own compile ends before its judge run starts
    assert compiler.cache == paths.triton_caches / "tuner"  # every tuner agent's of the session
    assert "it 2: proposing from" in (log := paths.agent_log("a1").read_text())
    assert "(proposed during the last judge run)" in log


def _context(
    parent: str = "c-p", steering: tuple[str, ...] = (), guidance: str = ""
) -> ProposalContext:
    row = ParentCandidate(parent, "src", "", "fast", None)
    return ProposalContext(
        "a1", "exploit", "", 2, row, row, (), steering, (), None, (), Path("."), guidance=guidance
    )


def test_a_proposal_made_ahead_is_dropped_when_its_parent_or_what_the_agent_was_told_changed():
    ahead = ProposedAhead.of(Proposal("src", "h", "fast"), _context())
    assert ahead.still_fits(_context())
    assert not ahead.still_fits(_context(parent="c-new-incumbent"))
    assert not ahead.still_fits(_context(steering=("try wider panels",)))
    assert not ahead.still_fits(_context(guidance="focus on 8x2048"))


def test_a_candidate_whose_kernels_outlast_the_compile_patience_is_set_aside_unjudged(
    tmp_path, monkeypatch, seed_incumbent
):
    """The judge would compile them on the GPU's clock while the GPU stood idle: the record
    says why it was not judged, the candidate stays in the store, and the loop goes on."""
    paths = make_session(tmp_path, (AgentSpec("a1", goal="geomean < 1ns", max_iterations=2),))
    seed_incumbent(paths)
    (tmp_path / "ws" / "qrsup.toml").write_text("[loop]\ncompile_patience_s = 0.2\n")
    monkeypatch.setattr(agent_main, "build_proposer", lambda *_: _Failing())
    compiler = StandInCompiler(wait_s=5.0)
    monkeypatch.setattr(agent_main.Precompiler, "for_device", staticmethod(compiler.for_device))
    assert agent_main.main([str(paths.root), "a1", "cpu"]) == 0
    assert compiler.patience_s == 0.2
    with Store.reader(paths.store) as store:
        records = store.iterations("a1")
        assert len(records) == 2
        for record in records:
            assert record.verdict == Verdict.SLOW_COMPILE and record.decision == Decision.REJECTED
            assert not record.evaluated and store.evaluations(record.candidate_id) == []
            assert store.candidate(record.candidate_id) is not None
            assert 0.2 <= record.compile_wait_s < 5.0
            assert "still compiling" in record.reason and "compile_patience_s" in record.reason
