"""The records every layer shares, typed once: verdicts, decisions, roles, actors, progress
updates, and the rows of the research loop (candidate, evaluation, iteration, beam slot,
promotion, event).

It lives in the lowest layer so the judge, the agents and the supervisor speak one vocabulary;
AGENTS.md quotes the same names. Everything here is a frozen dataclass or a closed `StrEnum`;
what crosses a module boundary is one of these, never a raw row or a loose dict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """What became of one candidate: the judge's verdicts, then the loop's own."""

    PASS = "pass"
    FAIL = "fail"  # a gate or a rule (correctness, aliasing, timing integrity)
    ERROR = "error"  # the candidate raised, or could not be imported
    CRASH = "crash"  # its process died
    TIMEOUT = "timeout"
    MEMORY = "memory"
    REJECTED = "rejected"  # refused before running (static checks)
    SKIPPED = "skipped"  # a spec not run because an earlier one failed
    TAMPERED = "tampered"  # the judge's own files changed since the session started
    DUPLICATE = "duplicate"  # the loop: the same source was judged before
    PROPOSAL = "proposal"  # the loop: the proposer gave no candidate
    INTERRUPTED = "interrupted"  # the loop: its agent died while the candidate was in flight
    LOST_NODE = "lost node"  # a Ray node died under the run, and again under its one retry
    SLOW_COMPILE = "slow compile"  # the loop: its kernels outlasted the agent's compile patience


JUDGE_VERDICTS = frozenset(
    {
        Verdict.PASS,
        Verdict.FAIL,
        Verdict.ERROR,
        Verdict.CRASH,
        Verdict.TIMEOUT,
        Verdict.MEMORY,
        Verdict.REJECTED,
        Verdict.SKIPPED,
        Verdict.TAMPERED,
    }
)


@dataclass(frozen=True)
class Role:
    """A beam role: what its slot holds, how close a quick stage must come to earn the full
    stage, and the prompt that tells a model-driven agent its job."""

    name: str
    promise_margin: float  # the quick stage may be this much slower than the incumbent
    summary: str

    @property
    def prompt_file(self) -> str:
        return f"role_{self.name.replace('-', '_')}.md"


# The exploit margin is about the quick rule's noise: the quick stage is compared like for like
# (same rule, device and specs), and 12 of the 14 exploit candidates that reached the
# full stage within 10% on the 2026-11-30 loop run were rejected there, each costing a contest-rule
# run (docs/runs/2026-11-30-h200-x2/loop_store.sqlite).
ROLES: tuple[Role, ...] = (
    Role("exploit", 0.02, "the fastest candidate of the incumbent's family"),
    Role("near-miss", 0.5, "wins at least one spec against the incumbent while losing overall"),
    Role("structural", 1.0, "the fastest candidate of another family, protected while young"),
    Role("cleanup", 0.05, "the incumbent's speed within noise, with shorter source"),
)
ROLE_NAMES: tuple[str, ...] = tuple(r.name for r in ROLES)


def role(name: str) -> Role:
    """The role called `name`; ValueError names the known ones."""
    for known in ROLES:
        if known.name == name:
            return known
    raise ValueError(f"role must be one of {', '.join(ROLE_NAMES)}, not {name!r}")


class Decision(StrEnum):
    """What the loop did with an iteration's candidate."""

    BEAM_EXPLOIT = "beam exploit"
    BEAM_NEAR_MISS = "beam near-miss"
    BEAM_STRUCTURAL = "beam structural"
    BEAM_CLEANUP = "beam cleanup"
    PROMOTED = "promoted"
    REJECTED = "rejected"
    NOT_PROMISING = "not promising"  # the quick stage was too far from the incumbent
    SKIPPED = "skipped"  # a duplicate, never judged again
    PAUSED = "paused"  # the proposer asked for a person
    INTERRUPTED = "interrupted"  # the agent died mid-iteration

    @classmethod
    def beam(cls, role_name: str) -> Decision:
        return cls(f"beam {role(role_name).name}")


class Actor(StrEnum):
    """Who took an action on an agent."""

    HUMAN = "human"
    SUPERVISOR = "supervisor"
    AGENT = "agent"


class Lifecycle(StrEnum):
    """Actions on an agent's process; each is an event naming its actor and reason."""

    START = "start"
    STOP = "stop"
    KILL = "kill"
    PAUSE = "pause"
    RESUME = "resume"
    RESTART = "restart"
    DIED = "died"


class EventKind(StrEnum):
    """The `event` field of a line of an agent's events.jsonl."""

    ITERATION = "iteration"
    LIFECYCLE = "lifecycle"
    STEERING = "steering"
    PROFILE = "profile"
    NOISE = "noise"
    GOAL_MET = "goal_met"
    ADVISOR = "advisor"
    SIDE_QUESTION = "side_question"
    STOPPED = "stopped"
    CRASHED = "crashed"
    SESSION_PAUSED = "session_paused"
    ISOLATION_INCOMPLETE = "isolation_incomplete"
    RECOVERED = "recovered"


@dataclass(frozen=True)
class ProgressUpdate:
    """One frame of a judge run's progress, as the referee reports it (or the runner, while it
    waits for the GPU): a phase, and within a spec phase the spec and, once done, its status."""

    phase: str
    index: int | None = None
    total: int | None = None
    label: str = ""
    status: str | None = None
    mean_ns: float | None = None
    state: str | None = None  # an agent state the run puts its agent in ("waiting" for a cluster)

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> ProgressUpdate:
        return cls(
            phase=str(frame.get("phase", "")),
            index=frame.get("index"),
            total=frame.get("total"),
            label=str(frame.get("label", "")),
            status=frame.get("status"),
            mean_ns=frame.get("mean_ns"),
            state=frame.get("state"),
        )

    def to_frame(self) -> dict[str, Any]:
        """The plain dict a frame crosses a process (or a cluster) as."""
        return {k: v for k, v in asdict(self).items() if v is not None and v != ""}

    @property
    def done(self) -> int | None:
        """Specs of this phase finished so far (None outside a spec phase): for progress bars."""
        if self.index is None:
            return None
        return self.index + (1 if self.status is not None else 0)

    def describe(self) -> str:
        """A short line: 'benchmark 3/12 640x512 dense c2 → pass'."""
        if self.index is None:
            return self.phase
        where = f"{self.index + 1}/{self.total}" if self.total else str(self.index + 1)
        outcome = f" → {self.status}" if self.status is not None else ""
        return f"{self.phase} {where} {self.label}".strip() + outcome


Progress = Callable[[ProgressUpdate], None]


@dataclass(frozen=True)
class Candidate:
    """A stored candidate and its best full evaluation, if any."""

    id: str
    hash: str
    source: str
    parent_id: str | None
    agent: str
    role: str
    family: str
    hypothesis: str
    params: dict | None
    created_at: float
    verdict: Verdict | None = None
    geomean_ns: float | None = None
    spec_means_ns: dict[int, float] | None = None


@dataclass(frozen=True)
class Inherited:
    """Benchmark specs whose figures a focused full stage took from the candidate's parent
    instead of timing them: the candidate runs its parent's kernels there, so a timing would
    add noise and no signal. A promotion still re-times and revalidates every spec it needs."""

    parent_id: str
    specs: tuple[int, ...]

    def to_dict(self) -> dict[str, object]:
        return {"from": self.parent_id, "specs": list(self.specs)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Inherited:
        return cls(str(data["from"]), tuple(int(i) for i in data["specs"]))


# The agent the store names for the incumbent's evaluation at the session's start.
BOOTSTRAP_AGENT = "bootstrap"


@dataclass(frozen=True)
class Evaluation:
    """One stage of the judge on one candidate, with the judge's whole report."""

    id: int
    candidate_id: str
    agent: str
    iteration: int
    stage: str
    verdict: Verdict
    geomean_ns: float | None
    spec_means_ns: dict[int, float]
    reason: str
    report: dict[str, Any]
    created_at: float
    inherited: Inherited | None = None  # a focused full stage's specs figured from its parent

    @property
    def device_name(self) -> str:
        """The device the judge ran on, as its report names it ("" in a report without one)."""
        return str(self.report.get("device", {}).get("name", ""))


@dataclass(frozen=True)
class Comparison:
    """What a decision compared: the candidate's and the incumbent's figures, under which
    stopping rule, how old the incumbent's figures were, and the margin applied."""

    rule: str
    candidate_ns: float | None
    incumbent_ns: float | None
    margin: float
    incumbent_age: int | None = None  # evaluations since the incumbent's figures were taken
    specs: list[int] | None = None  # the benchmark specs compared (suite indices)

    @property
    def favours_candidate(self) -> bool:
        """Within the margin of the incumbent (or nothing to compare, which never blocks)."""
        if self.candidate_ns is None or self.incumbent_ns is None:
            return True
        return self.candidate_ns <= self.incumbent_ns * (1.0 + self.margin)

    def describe(self) -> str:
        mine, theirs = _ms(self.candidate_ns), _ms(self.incumbent_ns)
        age = ""
        if self.incumbent_age is not None:
            plural = "" if self.incumbent_age == 1 else "s"
            age = f", {self.incumbent_age} evaluation{plural} old"
        return f"{mine} against the incumbent's {theirs} ({self.rule} rule{age})"


@dataclass(frozen=True)
class Iteration:
    """One iteration of one agent: one store row, one events.jsonl line, one log.md entry."""

    agent: str
    iteration: int
    verdict: Verdict
    decision: Decision
    candidate_id: str | None = None
    parent_id: str | None = None
    role: str = ""
    hypothesis: str = ""
    reason: str = ""
    goal: str = ""
    geomean_ns: float | None = None
    spec_means_ns: dict[int, float] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    comparison: Comparison | None = None
    evaluated: bool = False
    # Seconds the loop waited for the candidate's kernels to compile before its judge run: what
    # a compile started during the previous judge run had not finished. None where nothing
    # was compiled ahead (no warm compiler, or no candidate).
    compile_wait_s: float | None = None
    created_at: float = 0.0

    def to_event(self) -> dict[str, Any]:
        """The events.jsonl line of this iteration (every field, so a restored line is whole)."""
        fields = asdict(self)
        fields["verdict"], fields["decision"] = str(self.verdict), str(self.decision)
        fields.pop("created_at")
        return {"event": str(EventKind.ITERATION), **fields}


@dataclass(frozen=True)
class BeamSlot:
    """Who holds a role's slot, and until which iteration a structural holder is protected."""

    role: str
    candidate_id: str
    geomean_ns: float | None
    protected_until: int
    updated_at: float


@dataclass(frozen=True)
class Promotion:
    """A candidate that became the incumbent, with the commit that made it so."""

    id: int
    candidate_id: str
    commit_sha: str | None
    geomean_ns: float | None
    previous_geomean_ns: float | None
    noise: dict[str, Any]
    by: str
    created_at: float


@dataclass(frozen=True)
class SteeringRecord:
    """A steering message an agent took, exactly once."""

    id: str
    agent: str
    kind: str
    text: str
    iteration: int
    consumed_at: float


@dataclass(frozen=True)
class ProfileRecord:
    """A profile of a candidate on one spec; `summary` is the profile's own dict."""

    id: int
    candidate_id: str
    agent: str
    spec_index: int
    ok: bool
    summary: dict[str, Any]
    seconds: float
    created_at: float


@dataclass(frozen=True)
class SideQuestionRecord:
    """A side question a person asked an agent, its answer, where it came from, and its cost."""

    id: int
    agent: str
    question: str
    answer: str
    source: str
    usage: dict[str, float]
    created_at: float


def _ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:.4g} ms"


def spec_means_from_json(text: str | None) -> dict[int, float]:
    """Per-spec means as stored (JSON keys are strings)."""
    return {int(k): float(v) for k, v in json.loads(text or "{}").items()}


def spec_means_to_json(means: Mapping[int, float] | None) -> str:
    return json.dumps({str(k): v for k, v in (means or {}).items()})
