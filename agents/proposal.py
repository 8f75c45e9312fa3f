"""What a proposer is given and what it returns: the contract between the loop and proposers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from qrsup.kernels.schema import Candidate


@dataclass(frozen=True)
class ParentCandidate:
    """The candidate a proposal starts from, with what the judge last said about it."""

    candidate_id: str
    source: str
    hypothesis: str
    family: str
    geomean_ns: float | None
    spec_means_ns: dict[int, float] = field(default_factory=dict)
    params: dict[str, object] | None = None

    @classmethod
    def of(cls, candidate: Candidate) -> ParentCandidate:
        """The view of a stored candidate a proposer gets."""
        return cls(
            candidate_id=candidate.id,
            source=candidate.source,
            hypothesis=candidate.hypothesis,
            family=candidate.family,
            geomean_ns=candidate.geomean_ns,
            spec_means_ns=candidate.spec_means_ns or {},
            params=candidate.params,
        )


@dataclass(frozen=True)
class OutcomeSummary:
    """One past iteration in a line or two: what was tried and what happened."""

    iteration: int
    candidate_id: str | None
    hypothesis: str
    verdict: str  # a qrsup.kernels.schema.Verdict
    geomean_ns: float | None
    reason: str = ""
    spec_means_ns: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ProposalContext:
    """Everything a proposer may use for one proposal; built fresh each iteration."""

    agent: str
    role: str
    goal: str
    iteration: int
    parent: ParentCandidate
    incumbent: ParentCandidate
    memory: tuple[OutcomeSummary, ...]
    steering: tuple[str, ...]
    advisor_ideas: tuple[str, ...]
    profile_summary: str | None
    spec_labels: tuple[str, ...]
    work_dir: Path
    stage_shares: dict[str, float] = field(default_factory=dict)  # the parent's, if profiled
    stage_spec: int | None = None  # the benchmark whose profile gave stage_shares
    guidance: str = ""  # the workspace's guidance file, re-read this iteration


@dataclass(frozen=True)
class Usage:
    """Model usage of one request; zero for offline proposers."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Proposal:
    """A complete candidate file and the one-line hypothesis it tests."""

    source: str
    hypothesis: str
    family: str
    params: dict[str, object] | None = None
    usage: Usage = field(default_factory=Usage)
    transcript: str = ""


@dataclass(frozen=True)
class ProposalFailure:
    """A proposal that produced no candidate; recorded, and the loop goes on.

    `kind`: malformed | no_apply | refusal | truncated | timeout | endpoint | exhausted | config |
    quota (`config`: a prompt template or command template a human must fix; `quota`: rate-limited
    or out of quota, ask again after `wait_s`).
    `pause` asks the agent to pause with `reason` shown (e.g. a dead endpoint).
    """

    kind: str
    reason: str
    usage: Usage = field(default_factory=Usage)
    pause: bool = False
    transcript: str = ""
    wait_s: float = 0.0


class Proposer(Protocol):
    """Turns a context into a candidate; must not raise for anything a model or tool does."""

    name: str
    # Proposing costs nothing (no model, no tool run): a proposal that another agent's
    # candidate already holds is asked for again at once, not spent as an iteration.
    free: bool

    def propose(self, context: ProposalContext) -> Proposal | ProposalFailure: ...
