"""A free proposer (the tuner) whose point another agent already stored proposes again within the
same iteration, so agents proposing at once do not spend iterations on each other's points."""

from __future__ import annotations

import pytest
from qrsup.agents import agent_main
from qrsup.agents.proposal import Proposal, ProposalContext
from qrsup.agents.session import AgentSpec
from qrsup.agents.store import Store
from qrsup.agents.tuner import source_hash

from tests.loop_helpers import make_session


class _Variants:
    """Proposes comment-only variants of the first parent it sees, in a fixed order."""

    name = "tuner"
    free = True

    def __init__(self, order: list[int]) -> None:
        self.order, self.asked, self.base = order, 0, ""

    def variant(self, k: int) -> str:
        return f"{self.base}\n# variant {k}\n"

    def propose(self, context: ProposalContext) -> Proposal:
        self.base = self.base or context.parent.source
        k = self.order[min(self.asked, len(self.order) - 1)]
        self.asked += 1
        return Proposal(self.variant(k), f"variant {k}", "blocked_wy")


@pytest.mark.e2e
def test_a_taken_point_is_proposed_again_in_the_same_iteration(tmp_path, monkeypatch):
    paths = make_session(tmp_path, (AgentSpec("a1", goal="geomean < 1ns", max_iterations=2),))
    proposer = _Variants([0, 0, 1])  # the second iteration first meets the first's point
    monkeypatch.setattr(agent_main, "build_proposer", lambda *_: proposer)
    assert agent_main.main([str(paths.root), "a1", "cpu"]) == 0
    with Store.reader(paths.store) as store:
        first, second = sorted(store.iterations("a1"), key=lambda i: i.iteration)
        assert proposer.asked == 3
        assert first.evaluated and second.evaluated
        taken = store.candidate(first.candidate_id)
        assert taken is not None and taken.hash == source_hash(proposer.variant(0))
        retried = store.candidate(second.candidate_id)
        assert retried is not None and retried.hash == source_hash(proposer.variant(1))
    assert "proposing again" in paths.agent_log("a1").read_text()
