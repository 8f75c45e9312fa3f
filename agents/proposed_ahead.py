"""The next proposal, made while the current candidate is judged.

On a GPU host the tuner's candidates are compiled before their judge runs (precompile.py), and
that compile used to wait for the GPU to finish the last candidate. A free proposer can instead
propose the next candidate as soon as the current one is registered, so its kernels compile on
the host's spare cores while the GPU times the current one. The proposal is used at the next
iteration only if nothing it was made from has changed by then: the same parent, and no
steering, advisor ideas or guidance that arrived since. Otherwise it is dropped unjudged (the
agent log names it), and the agent proposes afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from qrsup.agents.proposal import Proposal, ProposalContext


@dataclass(frozen=True)
class ProposedAhead:
    proposal: Proposal
    parent_id: str
    guidance: str

    @classmethod
    def of(cls, proposal: Proposal, context: ProposalContext) -> ProposedAhead:
        return cls(proposal, context.parent.candidate_id, context.guidance)

    def still_fits(self, context: ProposalContext) -> bool:
        """Made from this context's parent, with nothing said to the agent since."""
        return (
            self.parent_id == context.parent.candidate_id
            and self.guidance == context.guidance
            and not context.steering
            and not context.advisor_ideas
        )
