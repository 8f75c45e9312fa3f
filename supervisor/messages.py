"""What the watcher threads tell the screen: plain frozen dataclasses, one per fact.

They hold no Textual type, so the watchers and these facts are tested without a screen; the main
screen queues them (`mailbox.py`), merges what a later fact supersedes, and draws the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from qrsup.supervisor.board import Board, LeaderEntry
from qrsup.supervisor.cluster_stats import ClusterView
from qrsup.supervisor.fleet import AgentStatus
from qrsup.supervisor.gpu_stats import GpuReport
from qrsup.supervisor.log_lines import LogLine
from qrsup.supervisor.process_stats import TreeLoad


@dataclass(frozen=True)
class LogRead:
    """The followed agent's new log lines, ready to draw; `fresh` when they replace the shown."""

    agent: str
    lines: tuple[LogLine, ...]
    fresh: bool


@dataclass(frozen=True)
class ProfileRead:
    """The followed agent's latest profile summary, or None when it has none yet."""

    agent: str
    text: str | None


@dataclass(frozen=True)
class BoardRead:
    """The store's candidates, beam and incumbent, as of now."""

    board: Board


@dataclass(frozen=True)
class AgentsSampled:
    """Every agent's status and process load, the GPUs and their leases (or the Ray cluster of a
    session whose judge runs go there), as of now."""

    statuses: tuple[AgentStatus, ...]
    loads: dict[str, TreeLoad]
    gpus: GpuReport
    leases: dict[int, list[str]] = field(default_factory=dict)
    cluster: ClusterView | None = None


@dataclass(frozen=True)
class NewBest:
    """A passing candidate beat every candidate before it."""

    entry: LeaderEntry
    previous_ns: float | None


@dataclass(frozen=True)
class AgentCrashed:
    """An agent died without being told to."""

    agent: str
    detail: str


@dataclass(frozen=True)
class GoalMet:
    """An agent met its goal and now idles."""

    agent: str
    goal: str
    candidate_id: str


@dataclass(frozen=True)
class AdvisorIdeas:
    """The advisor queued ideas for an agent."""

    agent: str
    source: str
    ideas: tuple[str, ...] = ()


Snapshot = LogRead | ProfileRead | BoardRead | AgentsSampled
"""What the screen shows; a later one of the same panel supersedes it."""
Event = NewBest | AgentCrashed | GoalMet | AdvisorIdeas
"""What the screen tells the person once."""
Fact = Snapshot | Event
Post = Callable[[Fact], object]
