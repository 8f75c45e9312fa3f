"""The main screen: every panel, fed by the watchers; it renders what the records say.

The screen owns the two watcher threads of its session and draws what they post: statuses and
loads to the agent list, the board to the leaderboard and beam, the followed agent's log and
profile, and a notification for each fact a person should not miss. The threads post plain facts
to a mailbox that wakes the screen once; the screen drains it whole, so a burst of facts that
arrived while it was drawing costs one drawing of each panel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qrsup.agents.session import RunPaths
from qrsup.supervisor.board import LeaderEntry
from qrsup.supervisor.fleet import UNRECORDED, AgentStatus
from qrsup.supervisor.mailbox import Mailbox
from qrsup.supervisor.messages import (
    AdvisorIdeas,
    AgentCrashed,
    AgentsSampled,
    BoardRead,
    Fact,
    GoalMet,
    LogRead,
    NewBest,
    ProfileRead,
)
from qrsup.supervisor.watchers import FleetSampler, RunWatcher
from qrsup.supervisor.widgets.agent_list import AgentList
from qrsup.supervisor.widgets.beam_panel import BeamPanel
from qrsup.supervisor.widgets.format import ms
from qrsup.supervisor.widgets.leaderboard import Leaderboard
from qrsup.supervisor.widgets.log_tail import LogTail
from qrsup.supervisor.widgets.profile_panel import ProfilePanel
from qrsup.supervisor.widgets.promotion_bar import PromotionBar
from qrsup.supervisor.widgets.stats_panel import StatsPanel
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer

NOTIFY_S = 8.0


class MainScreen(Screen):
    """Agents on top; the followed agent's log and profile left; beam and leaderboard right."""

    selected_agent: reactive[str | None] = reactive(None)

    class FactsArrived(Message, bubble=False):
        """The mailbox holds facts to draw (posted once until the screen drains it)."""

    @dataclass
    class DeathsUnrecorded(Message):
        """Agents whose process ended while working, and nobody has recorded it yet: the app,
        which started them and knows how they ended, records it."""

        agents: tuple[str, ...]

    def __init__(
        self, paths: RunPaths, spec_labels: tuple[str, ...], title: str, sample_interval_s: float
    ) -> None:
        super().__init__()
        self.title_text = title
        self.statuses: dict[str, AgentStatus] = {}
        self._keys_for: tuple[object, ...] = ()
        self.mailbox = Mailbox(lambda: self.post_message(self.FactsArrived()))
        self.sampler = FleetSampler(paths, self.post_fact, sample_interval_s)
        self.watcher = RunWatcher(paths, self.post_fact, spec_labels, self.sampler.poke)
        self._draw: dict[type, Callable[[Any], None]] = {
            AgentsSampled: self._show_agents,
            BoardRead: self._show_board,
            LogRead: self._show_log,
            ProfileRead: self._show_profile,
            NewBest: self._notify_new_best,
            AgentCrashed: self._notify_crash,
            GoalMet: self._notify_goal_met,
            AdvisorIdeas: self._notify_ideas,
        }

    def post_fact(self, fact: Fact) -> None:
        """From any thread: queue a fact for the screen."""
        self.mailbox.put(fact)

    def compose(self) -> ComposeResult:
        yield AgentList(id="agents")
        with Horizontal(id="middle"):
            with Vertical(id="left"):
                yield LogTail(id="log")
                yield ProfilePanel(id="profile")
            with Vertical(id="right"):
                yield BeamPanel(id="beam")
                yield Leaderboard(id="leaderboard")
        yield StatsPanel(id="stats")
        yield PromotionBar(id="promotion")
        yield Footer(compact=True)

    @property
    def selected_candidate(self) -> LeaderEntry | None:
        return self.query_one(Leaderboard).selected

    def select_agent(self, index: int) -> None:
        names = list(self.statuses)
        if index < len(names):
            self.selected_agent = names[index]

    def on_mount(self) -> None:
        self.query_one(AgentList).border_title = f"agents · {self.title_text}"
        self.sampler.start()
        self.watcher.start()

    def on_unmount(self) -> None:
        self.watcher.stop()
        self.sampler.stop()

    def watch_selected_agent(self, agent: str | None) -> None:
        if agent is None:
            return
        self.query_one(AgentList).select(agent)
        self.query_one(LogTail).follow(agent)
        self.watcher.follow(agent)
        self._show_goal()
        self._refresh_keys()

    def on_main_screen_facts_arrived(self, _: FactsArrived) -> None:
        for fact in self.mailbox.drain():
            self._draw[type(fact)](fact)

    def _show_agents(self, fact: AgentsSampled) -> None:
        self.statuses = {status.name: status for status in fact.statuses}
        unrecorded = tuple(s.name for s in fact.statuses if s.state == "died" and not s.alive)
        if unrecorded and any(self.statuses[n].detail == UNRECORDED for n in unrecorded):
            self.post_message(self.DeathsUnrecorded(unrecorded))
        self.query_one(AgentList).show(fact.statuses)
        self.query_one(StatsPanel).show(fact.gpus, fact.loads, fact.leases, fact.cluster)
        if self.selected_agent is None and fact.statuses:
            self.selected_agent = fact.statuses[0].name
        self._show_goal()
        self._refresh_keys()

    def _show_board(self, fact: BoardRead) -> None:
        self.query_one(Leaderboard).show(fact.board)
        self.query_one(BeamPanel).show(fact.board)
        self._refresh_keys()

    def _show_log(self, fact: LogRead) -> None:
        self.query_one(LogTail).add(fact.agent, fact.lines, fact.fresh)

    def _show_profile(self, fact: ProfileRead) -> None:
        if fact.agent == self.selected_agent:
            self.query_one(ProfilePanel).show(fact.agent, fact.text)

    def _notify_new_best(self, fact: NewBest) -> None:
        entry, before = fact.entry, fact.previous_ns
        was = f" (was {ms(before)} ms)" if before else ""
        text = f"{entry.id} by {entry.agent}: {ms(entry.geomean_ns)} ms{was}"
        self.notify(text, title="new best", timeout=NOTIFY_S, markup=False)

    def _notify_crash(self, fact: AgentCrashed) -> None:
        text = fact.detail or "see its log"
        self.notify(text, title=f"{fact.agent} crashed", severity="error", markup=False)

    def _notify_goal_met(self, fact: GoalMet) -> None:
        text = f"{fact.goal} by {fact.candidate_id}; it idles until steered"
        self.notify(text, title=f"{fact.agent}: goal met", markup=False)

    def _notify_ideas(self, fact: AdvisorIdeas) -> None:
        text = "\n".join(idea[:200] for idea in fact.ideas)
        title = f"advisor ({fact.source}) → {fact.agent}"
        self.notify(text, title=title, timeout=NOTIFY_S, markup=False)

    @on(AgentList.AgentHighlighted)
    def _agent_highlighted(self, message: AgentList.AgentHighlighted) -> None:
        self.selected_agent = message.agent

    @on(DataTable.RowHighlighted, "#leaderboard")
    def _candidate_highlighted(self) -> None:
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Grey keys in or out only when that changes: each refresh rebuilds the Footer."""
        entry = self.selected_candidate
        subject = (self.selected_agent is not None, entry is not None and entry.verdict == "pass")
        if subject != self._keys_for:
            self._keys_for = subject
            self.app.refresh_bindings()

    def _show_goal(self) -> None:
        status = self.statuses.get(self.selected_agent or "")
        subtitle = f"goal: {status.goal}" if status else ""
        log = self.query_one(LogTail)
        if log.border_subtitle != subtitle:
            log.border_subtitle = subtitle
