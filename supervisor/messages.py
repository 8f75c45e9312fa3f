"""What the watcher threads tell the app: Textual messages, posted from any thread."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # annotations only: the board module builds DiffRead, so no import cycle
    from qrsup.supervisor.board import Board, LeaderEntry
    from qrsup.supervisor.cluster_stats import ClusterView
    from qrsup.supervisor.fleet import AgentStatus
    from qrsup.supervisor.gpu_stats import GpuReport
    from qrsup.supervisor.process_stats import TreeLoad

Post = Callable[[Message], object]


@dataclass
class LogRead(Message, bubble=False):
    """Lines of the followed agent's log; `fresh` when they replace what was shown."""

    agent: str
    lines: list[str]
    fresh: bool


@dataclass
class ProfileRead(Message, bubble=False):
    """The followed agent's latest profile summary, or None when it has none yet."""

    agent: str
    text: str | None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProfileRead)


@dataclass
class BoardRead(Message, bubble=False):
    """The store's candidates, beam and incumbent, as of now."""

    board: Board

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, BoardRead)


@dataclass
class AgentsSampled(Message, bubble=False):
    """Every agent's status and process load, the GPUs and their leases (or the Ray cluster of a
    session whose judge runs go there), as of now."""

    statuses: tuple[AgentStatus, ...]
    loads: dict[str, TreeLoad]
    gpus: GpuReport
    leases: dict[int, list[str]] = field(default_factory=dict)
    cluster: ClusterView | None = None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, AgentsSampled)


@dataclass
class NewBest(Message, bubble=False):
    """A passing candidate beat every candidate before it."""

    entry: LeaderEntry
    previous_ns: float | None


@dataclass
class AgentCrashed(Message, bubble=False):
    """An agent died without being told to."""

    agent: str
    detail: str


@dataclass
class DeathsUnrecorded(Message):
    """Agents whose process ended while working, and nobody has recorded it yet: the app, which
    started them and knows how they ended, records it."""

    agents: tuple[str, ...]


@dataclass
class GoalMet(Message, bubble=False):
    """An agent met its goal and now idles."""

    agent: str
    goal: str
    candidate_id: str


@dataclass
class AdvisorIdeas(Message, bubble=False):
    """The advisor queued ideas for an agent."""

    agent: str
    source: str
    ideas: list[str] = field(default_factory=list)


@dataclass
class DiffRead(Message, bubble=False):
    """A candidate's source as a unified diff against its parent's."""

    candidate_id: str
    parent_id: str | None
    diff: str

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DiffRead)
