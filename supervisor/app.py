"""`qrsup`'s screen: composes the panels, binds the keys, and sends every action to a worker.

The app holds no state the agents need. Watchers post what the records say; the handlers here
hand it to the panels; keys open a dialog and then run one of `supervisor.actions` on a thread,
whose result comes back as a message. Nothing here blocks the screen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Header

from agents.session import AgentSpec
from agents.side_questions import SideAnswer
from kernels.suites import get_suite
from supervisor import actions
from supervisor.actions import ActionResult
from supervisor.fleet import AgentStatus, Fleet
from supervisor.watchers import (
    AdvisorIdeas,
    AgentCrashed,
    AgentsSampled,
    BoardRead,
    DiffRead,
    FleetSampler,
    GoalMet,
    LogRead,
    NewBest,
    ProfileRead,
    RunWatcher,
    read_diff,
)
from supervisor.widgets.add_agent_dialog import AddAgentDialog
from supervisor.widgets.agent_list import AgentList
from supervisor.widgets.beam_panel import BeamPanel
from supervisor.widgets.choice_dialog import Choice, ChoiceDialog
from supervisor.widgets.diff_view import DiffView
from supervisor.widgets.format import ms
from supervisor.widgets.help_screen import HelpScreen
from supervisor.widgets.leaderboard import Leaderboard
from supervisor.widgets.log_tail import LogTail
from supervisor.widgets.profile_panel import ProfilePanel
from supervisor.widgets.promotion_bar import PromotionBar
from supervisor.widgets.stats_panel import StatsPanel
from supervisor.widgets.text_prompt import TextPrompt

AGENT_ACTIONS = {"steer", "goal", "advise", "ask", "pause_resume", "kill", "restart"}
NOTIFY_S = 8.0


@dataclass
class ActionFinished(Message):
    """One of the person's actions finished, well or not."""

    result: ActionResult


@dataclass
class PromotionProgressed(Message):
    """The judge reported progress on a promotion's revalidation."""

    frame: dict

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, PromotionProgressed)


@dataclass
class PromotionFinished(Message):
    """A promotion committed, or was refused, with its reason."""

    result: ActionResult


@dataclass
class SideAnswered(Message):
    """The answer to a side question arrived."""

    answer: SideAnswer


@dataclass
class StopSent(Message):
    """Every running agent was told to stop; the app may exit."""

    names: list[str]


class SupervisorApp(App[str]):
    """The supervisor's one screen, over one session's fleet."""

    CSS_PATH = "app.tcss"
    TITLE = "qrsup"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (90, "-wide")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (28, "-tall")]
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(f"{n}", f"select_agent({n - 1})", "Select", show=False) for n in range(1, 10)),
        Binding("s", "steer", "Steer", tooltip="send steering text to the selected agent"),
        Binding("g", "goal", "Goal", tooltip="give the selected agent a new goal"),
        Binding("a", "advise", "Advisor", tooltip="ask the advisor for ideas for the agent now"),
        Binding("b", "ask", "Ask", tooltip="ask a side question about the agent (by the way…)"),
        Binding("p", "pause_resume", "Pause", tooltip="pause or resume the selected agent"),
        Binding("k", "kill", "Kill", tooltip="kill the agent and its judge (asks first)"),
        Binding("r", "restart", "Restart", tooltip="restart the agent from its last record"),
        Binding("n", "add_agent", "Add", tooltip="add an agent to the session and start it"),
        Binding("P", "promote", "Promote", tooltip="promote the leaderboard's row (asks first)"),
        Binding("z", "zoom", "Zoom", tooltip="fill the screen with the focused panel (esc)"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="show every key"),
        Binding("q", "quit", "Quit", tooltip="quit, leaving the agents running or stopping them"),
    ]
    EXTRA_KEYS = (
        ("1-9", "select an agent (or arrows in the agent list)"),
        ("t", "sort the leaderboard (or click a column header)"),
        ("tab", "move between panels"),
        ("ctrl+p", "command palette: every action, and themes"),
        ("esc", "close a dialog, or unzoom"),
    )

    selected_agent: reactive[str | None] = reactive(None)

    def __init__(self, fleet: Fleet, sample_interval_s: float = 2.0) -> None:
        super().__init__()
        self.fleet = fleet
        session = fleet.session
        self.sub_title = f"session {session.name} · {session.suite}"
        labels = tuple(spec.label for spec in get_suite(session.suite).benchmarks)
        self.sampler = FleetSampler(fleet.paths, self.post_message, sample_interval_s)
        self.watcher = RunWatcher(fleet.paths, self.post_message, labels, self.sampler.poke)
        self.statuses: dict[str, AgentStatus] = {}
        self._fleet_lock = threading.Lock()

    def compose(self) -> ComposeResult:
        yield Header()
        yield AgentList(id="agents")
        with Horizontal(id="middle"):
            with Vertical(id="left"):
                yield LogTail(id="log")
                yield ProfilePanel(id="profile")
            with Vertical(id="right"):
                yield BeamPanel(id="beam")
                yield Leaderboard(id="leaderboard")
                yield DiffView(id="diff")
        yield StatsPanel(id="stats")
        yield PromotionBar(id="promotion")
        yield Footer()

    def on_mount(self) -> None:
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
        self.refresh_bindings()

    def on_agents_sampled(self, message: AgentsSampled) -> None:
        self.statuses = {status.name: status for status in message.statuses}
        self.query_one(AgentList).show(message.statuses, message.loads)
        self.query_one(StatsPanel).show(message.gpus, message.loads)
        if self.selected_agent is None and message.statuses:
            self.selected_agent = message.statuses[0].name
        self.refresh_bindings()

    def on_board_read(self, message: BoardRead) -> None:
        self.query_one(Leaderboard).show(message.board)
        self.query_one(BeamPanel).show(message.board)
        self.refresh_bindings()

    def on_log_read(self, message: LogRead) -> None:
        self.query_one(LogTail).add(message.agent, message.lines, message.fresh)

    def on_profile_read(self, message: ProfileRead) -> None:
        if message.agent == self.selected_agent:
            self.query_one(ProfilePanel).show(message.agent, message.text)

    def on_diff_read(self, message: DiffRead) -> None:
        self.query_one(DiffView).show(message.candidate_id, message.parent_id, message.diff)

    def on_new_best(self, message: NewBest) -> None:
        entry, before = message.entry, message.previous_ns
        was = f" (was {ms(before)} ms)" if before else ""
        self.notify(
            f"{entry.id} by {entry.agent}: {ms(entry.geomean_ns)} ms{was}",
            title="new best",
            timeout=NOTIFY_S,
            markup=False,
        )

    def on_agent_crashed(self, message: AgentCrashed) -> None:
        self.notify(
            message.detail or "see its log", title=f"{message.agent} crashed", severity="error"
        )

    def on_goal_met(self, message: GoalMet) -> None:
        self.notify(
            f"{message.goal} by {message.candidate_id}; it idles until steered",
            title=f"{message.agent}: goal met",
            markup=False,
        )

    def on_advisor_ideas(self, message: AdvisorIdeas) -> None:
        self.notify(
            "\n".join(idea[:200] for idea in message.ideas),
            title=f"advisor ({message.source}) → {message.agent}",
            timeout=NOTIFY_S,
            markup=False,
        )

    def on_action_finished(self, message: ActionFinished) -> None:
        self._report(message.result)
        self.sampler.poke()

    def on_promotion_progressed(self, message: PromotionProgressed) -> None:
        self.query_one(PromotionBar).advance(message.frame)

    def on_promotion_finished(self, message: PromotionFinished) -> None:
        self.query_one(PromotionBar).end()
        self._report(message.result)
        self.watcher.refresh_board()
        self.refresh_bindings()

    def on_side_answered(self, message: SideAnswered) -> None:
        answer = message.answer
        self.notify(
            answer.answer[:1200],
            title=f"{answer.agent}: {answer.question[:60]} ({answer.source})",
            timeout=30.0,
            markup=False,
        )

    def on_stop_sent(self, message: StopSent) -> None:
        self.exit("stopped")

    @on(AgentList.AgentHighlighted)
    def _agent_highlighted(self, message: AgentList.AgentHighlighted) -> None:
        self.selected_agent = message.agent

    @on(Leaderboard.CandidateHighlighted)
    def _candidate_highlighted(self, message: Leaderboard.CandidateHighlighted) -> None:
        if self.query_one(DiffView).candidate_id != message.candidate_id:
            self.run_worker(
                partial(self._read_diff, message.candidate_id),
                thread=True,
                group="diff",
                exclusive=True,
            )
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that need a selection are greyed out without one; promote needs a passing row."""
        if action in AGENT_ACTIONS and self.selected_agent is None:
            return None
        if action == "promote":
            entry = self.query_one(Leaderboard).selected
            busy = any(w.group == "promote" and w.is_running for w in self.workers)
            return None if entry is None or entry.verdict != "pass" or busy else True
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.show:
                callback = partial(self.run_action, binding.action)
                yield SystemCommand(binding.description, binding.tooltip, callback)

    def action_select_agent(self, index: int) -> None:
        names = list(self.statuses)
        if index < len(names):
            self.selected_agent = names[index]

    def action_steer(self) -> None:
        agent = self.selected_agent
        prompt = f"Steering for {agent}: taken at its next iteration boundary."
        self._ask_text("Steer", prompt, "", lambda text: self._act(actions.steer, agent, text))

    def action_goal(self) -> None:
        agent = self.selected_agent
        current = self.statuses[agent].goal if agent in self.statuses else ""
        prompt = f"New goal for {agent}, e.g. 'geomean < 2ms' or 'beat incumbent by 5%'."
        then = partial(self._act, actions.set_goal, agent)
        self._ask_text("Goal", prompt, current, then)

    def action_advise(self) -> None:
        self.notify(f"asking the advisor for {self.selected_agent}…", timeout=3)
        self._act(actions.advise, self.selected_agent)

    def action_ask(self) -> None:
        agent = self.selected_agent
        prompt = f"A side question about {agent}; its loop does not stop. The answer shows here."
        self._ask_text("Ask", prompt, "", lambda question: self._ask_side(agent, question))

    def action_pause_resume(self) -> None:
        agent = self.selected_agent
        paused = agent in self.statuses and self.statuses[agent].state == "paused"
        self._act(actions.resume if paused else actions.pause, agent)

    def action_kill(self) -> None:
        agent = self.selected_agent
        question = f"Kill {agent} and its judge now? The evaluation in flight is lost."
        choices = [Choice("y", "Kill", "yes", "error"), Choice("n", "Cancel", "no")]
        self._confirm("Kill", question, choices, lambda: self._act(actions.kill, agent))

    def action_restart(self) -> None:
        self._act(actions.restart, self.selected_agent)

    def action_add_agent(self) -> None:
        def added(spec: AgentSpec | None) -> None:
            if spec is not None:
                self._act(actions.add_agent, spec)

        self.push_screen(AddAgentDialog(self.fleet.session), added)

    def action_promote(self) -> None:
        entry = self.query_one(Leaderboard).selected
        if entry is None:
            return
        question = (
            f"Promote {entry.id} ({ms(entry.geomean_ns)} ms, by {entry.agent}) to incumbent? "
            "It is revalidated on the full suite first, then committed."
        )
        choices = [Choice("y", "Promote", "yes", "primary"), Choice("n", "Cancel", "no")]
        self._confirm("Promote", question, choices, partial(self._promote, entry.id))

    def action_zoom(self) -> None:
        self.screen.action_maximize()

    def action_help(self) -> None:
        keys = [
            (b.key_display or b.key, b.tooltip or b.description)
            for b in self.BINDINGS
            if isinstance(b, Binding) and b.show
        ]
        self.push_screen(HelpScreen([*keys, *self.EXTRA_KEYS]))

    async def action_quit(self) -> None:
        running = [s.name for s in self.statuses.values() if s.alive]
        if not running:
            self.exit("none running")
            return
        question = (
            f"{', '.join(running)} still running. Agents outlive this screen: "
            "leave them running (relaunch qrsup to reattach) or stop them?"
        )
        choices = [
            Choice("l", "Leave running", "leave", "primary"),
            Choice("s", "Stop them", "stop", "warning"),
            Choice("c", "Cancel", "cancel"),
        ]

        def chosen(answer: str | None) -> None:
            if answer == "leave":
                self.exit("left running")
            elif answer == "stop":
                self.run_worker(partial(self._stop_all, running), thread=True, group="quit")

        self.push_screen(ChoiceDialog("Quit", question, choices), chosen)

    def _ask_text(self, title: str, prompt: str, value: str, then: Callable[[str], None]) -> None:
        def answered(text: str | None) -> None:
            if text:
                then(text)

        self.push_screen(TextPrompt(title, prompt, value), answered)

    def _confirm(
        self, title: str, question: str, choices: list[Choice], then: Callable[[], None]
    ) -> None:
        def answered(answer: str | None) -> None:
            if answer == "yes":
                then()

        self.push_screen(ChoiceDialog(title, question, choices, focus=1), answered)

    def _act(self, do: Callable[..., ActionResult], *args: object) -> None:
        """Run one of the person's actions on a thread; one at a time, as the fleet is shared."""

        def work() -> None:
            with self._fleet_lock:
                result = do(self.fleet, *args)
            self.post_message(ActionFinished(result))

        self.run_worker(work, thread=True, group="actions", description=do.__name__)

    def _ask_side(self, agent: str, question: str) -> None:
        def work() -> None:
            pending = actions.ask(self.fleet, agent, question)
            if isinstance(pending, ActionResult):
                self.post_message(ActionFinished(pending))
                return
            pending.add_done_callback(lambda done: self._answered(agent, done.result()))

        self.notify(f"asked about {agent}; the answer shows here when it comes", timeout=3)
        self.run_worker(work, thread=True, group="ask")

    def _answered(self, agent: str, answer: SideAnswer) -> None:
        """Runs on the answering thread: record it, then hand it to the screen."""
        actions.record_answer(self.fleet, agent, answer)
        self.post_message(SideAnswered(answer))

    def _promote(self, candidate_id: str) -> None:
        self.query_one(PromotionBar).begin(candidate_id)

        def work() -> None:
            progress = lambda frame: self.post_message(PromotionProgressed(frame))  # noqa: E731
            result = actions.promote_candidate(self.fleet, candidate_id, progress)
            self.post_message(PromotionFinished(result))

        self.run_worker(work, thread=True, group="promote", description=f"promote {candidate_id}")
        self.refresh_bindings()

    def _read_diff(self, candidate_id: str) -> None:
        self.post_message(read_diff(self.fleet.paths.store, candidate_id))

    def _stop_all(self, names: list[str]) -> None:
        with self._fleet_lock:
            for name in names:
                if self.fleet.is_running(name):
                    self.fleet.stop(name)
        self.post_message(StopSent(names))

    def _report(self, result: ActionResult) -> None:
        severity = "information" if result.ok else "error"
        self.notify(result.message, severity=severity, timeout=NOTIFY_S, markup=False)


def run_app(fleet: Fleet) -> int:
    """Start (or reattach to) the agents and run the screen; the agents outlive it by design."""
    fleet.start_all()
    app = SupervisorApp(fleet)
    app.run()
    if app.return_value == "left running":
        running = ", ".join(n for n in fleet.names() if fleet.is_running(n))
        print(f"agents left running: {running}; run qrsup again to reattach, qrsup status to look")
    elif app.return_value == "stopped":
        print("stop sent: each agent finishes its evaluation in flight, records it and exits")
    return app.return_code or 0
