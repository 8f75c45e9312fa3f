"""`qrsup`'s app: binds the keys and sends every action to a worker; the main screen renders.

The app holds no state the agents need. The main screen's watchers post what the records say and
its panels show it; a key here opens a dialog, then runs one of `qrsup.supervisor.actions` on a
thread, whose result comes back as a message. Nothing here blocks the screen.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from qrsup.agents.lifecycle import Desired
from qrsup.agents.records import shorten
from qrsup.agents.session import AgentSpec
from qrsup.agents.settings import SettingsError, load_settings
from qrsup.agents.side_questions import SideAnswer
from qrsup.agents.spend import CostBudget
from qrsup.kernels.schema import Actor
from qrsup.kernels.suites import get_suite
from qrsup.supervisor import actions
from qrsup.supervisor.actions import ActionResult
from qrsup.supervisor.board import CandidateDiff, read_diff
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.promote_flow import (
    EvidenceRead,
    PromotionFinished,
    PromotionProgressed,
    confirm_dialog,
    slower_dialog,
)
from qrsup.supervisor.widgets.add_agent_dialog import AddAgentDialog
from qrsup.supervisor.widgets.choice_dialog import Choice, ChoiceDialog
from qrsup.supervisor.widgets.help_screen import HelpScreen
from qrsup.supervisor.widgets.leaderboard import Leaderboard
from qrsup.supervisor.widgets.main_screen import MainScreen
from qrsup.supervisor.widgets.promotion_bar import PromotionBar
from qrsup.supervisor.widgets.text_prompt import TextPrompt
from qrsup.supervisor.widgets.text_screen import TextScreen, diff_content
from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

AGENT_ACTIONS = {"steer", "goal", "advise", "ask", "pause_resume", "kill", "restart", "budget"}
NOTIFY_S = 8.0


@dataclass
class ActionFinished(Message):
    """One of the person's actions finished, well or not."""

    result: ActionResult


@dataclass
class SideAnswered(Message):
    """The answer to a side question arrived."""

    answer: SideAnswer


@dataclass
class DiffRead(Message):
    """A candidate's diff against its parent, read off the screen's thread."""

    diff: CandidateDiff


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
        Binding(
            "S", "broadcast", "Steer all", show=False, tooltip="send steering text to every agent"
        ),
        Binding("g", "goal", "Goal", tooltip="give the selected agent a new goal"),
        Binding(
            "dollar_sign",
            "budget",
            "Budget",
            show=False,
            key_display="$",
            tooltip="set the agent's cost budget; one paused at its budget resumes under it",
        ),
        Binding("a", "advise", "Advise", tooltip="ask the advisor for ideas for the agent now"),
        Binding("b", "ask", "Ask", tooltip="ask a side question about the agent (by the way…)"),
        Binding(
            "p",
            "pause_resume",
            "Pause",
            tooltip="pause the selected agent, or resume it when paused or not running",
        ),
        Binding("k", "kill", "Kill", tooltip="kill the agent and its judge (asks first)"),
        Binding("r", "restart", "Restart", tooltip="restart the agent from its last record"),
        Binding("n", "add_agent", "Add", tooltip="add an agent to the session and start it"),
        Binding("P", "promote", "Promote", tooltip="promote the leaderboard's row (asks first)"),
        Binding("e", "export", "Export", tooltip="write the leaderboard's row as one contest file"),
        Binding("z", "zoom", "Zoom", show=False, tooltip="fill the screen with the focused panel"),
        Binding("q", "quit", "Quit", tooltip="quit, leaving the agents running or stopping them"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="show every key"),
    ]
    EXTRA_KEYS = (
        ("1-9", "select an agent (or arrows in the agent list)"),
        ("t", "sort the leaderboard (or click a column header)"),
        ("w", "log panel: wrap long lines, or one row per line (←/→ scroll across)"),
        ("tab", "move between panels"),
        ("ctrl+p", "command palette: every action, and themes"),
        ("esc", "close a dialog, or unzoom"),
    )

    def __init__(self, fleet: Fleet, sample_interval_s: float = 2.0) -> None:
        super().__init__()
        self.fleet = fleet
        session = fleet.session
        suite = get_suite(session.suite)
        self.sub_title = f"session {session.name} · suite {suite.name}"
        labels = tuple(spec.label for spec in suite.benchmarks)
        self.main = MainScreen(fleet.paths, labels, self.sub_title, sample_interval_s)
        self._fleet_lock = threading.Lock()

    def get_default_screen(self) -> Screen:
        return self.main

    def on_mount(self) -> None:
        # Imports (torch among them) leave a heap that lives as long as the app. A full garbage
        # collection walked all of it and held the screen 0.1-0.7 s under load: freeze it.
        gc.freeze()

    @property
    def selected_agent(self) -> str | None:
        return self.main.selected_agent

    def on_action_finished(self, message: ActionFinished) -> None:
        self._report(message.result)
        self.main.sampler.poke()

    def on_promotion_progressed(self, message: PromotionProgressed) -> None:
        self.main.query_one(PromotionBar).advance(message.update)

    def on_evidence_read(self, message: EvidenceRead) -> None:
        evidence = message.evidence
        if isinstance(evidence, ActionResult):
            self._report(evidence)
            return
        self._on_yes(confirm_dialog(evidence), partial(self._promote, message.candidate_id))

    def on_promotion_finished(self, message: PromotionFinished) -> None:
        self.main.query_one(PromotionBar).end()
        result = message.result
        if isinstance(result, actions.SlowerRevalidation):
            then = partial(self._promote, message.candidate_id, result)
            self._on_yes(slower_dialog(message.candidate_id, result), then)
        else:
            self._report(result)
        self.main.watcher.refresh_board()
        self.refresh_bindings()

    def on_side_answered(self, message: SideAnswered) -> None:
        """Shown whole when nothing else is open; otherwise its start, so no typing is cut off."""
        answer = message.answer
        title = f"{answer.agent}: {shorten(answer.question, 60)} (from {answer.source})"
        if self.screen is self.main:
            self.push_screen(TextScreen(title, Content(answer.answer)))
        else:
            self.notify(answer.answer[:600], title=title, timeout=30.0, markup=False)

    def on_diff_read(self, message: DiffRead) -> None:
        diff = message.diff
        title = f"diff · {diff.candidate_id} vs {diff.parent_id or 'nothing'}"
        text = diff_content(diff.diff) if diff.diff else Content("same source as its parent")
        self.push_screen(TextScreen(title, text))

    def on_main_screen_deaths_unrecorded(self, message: MainScreen.DeathsUnrecorded) -> None:
        self._in_thread(self._record_deaths, "deaths", "recording agent deaths", exclusive=True)

    def _record_deaths(self) -> None:
        with self._fleet_lock:
            self.fleet.notice_deaths()
        self.main.sampler.poke()

    def on_stop_sent(self, message: StopSent) -> None:
        self.exit("stopped")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised is a failed action: say so, and keep the screen up."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.notify(f"{event.worker.description}: {error}", severity="error", markup=False)
            if event.worker.group == "promote":
                self.main.query_one(PromotionBar).end()

    @on(Leaderboard.DiffRequested)
    def _diff_requested(self, message: Leaderboard.DiffRequested) -> None:
        self._in_thread(partial(self._read_diff, message.candidate_id), "diff", exclusive=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that need a selection are greyed out without one; promote and export need a
        passing row."""
        if action in AGENT_ACTIONS and self.selected_agent is None:
            return None
        if action in ("promote", "export"):
            entry = self.main.selected_candidate
            busy = action == "promote" and any(
                w.group == "promote" and w.is_running for w in self.workers
            )
            return None if entry is None or entry.verdict != "pass" or busy else True
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.tooltip:
                callback = partial(self.run_action, binding.action)
                yield SystemCommand(binding.description, binding.tooltip, callback)

    def action_select_agent(self, index: int) -> None:
        self.main.select_agent(index)

    def action_steer(self) -> None:
        agent = self.selected_agent
        prompt = f"Steering for {agent}: taken at its next iteration boundary."
        status = self.main.statuses.get(agent or "")
        if status is not None and status.proposer == "tuner":
            prompt += " The tuner reads knob=value pins (panel_width=64) and class names."
        self._ask_text("Steer", prompt, "", lambda text: self._act(actions.steer, agent, text))

    def action_broadcast(self) -> None:
        prompt = "Steering for every agent: each takes it at its next iteration boundary."
        self._ask_text("Steer all", prompt, "", lambda text: self._act(actions.broadcast, text))

    def action_budget(self) -> None:
        agent = self.selected_agent
        status = self.main.statuses.get(agent or "")
        if status is None:
            return
        spent, budget = status.spend, status.budget
        suggestion = CostBudget(2 * budget.usd, 2 * budget.tokens) if budget.is_set else budget
        prompt = (
            f"Cost budget for {agent}, which has spent {spent.text()} of {budget.text()}"
            + (" and is paused at it" if status.budget_paused else "")
            + ". Dollars, tokens or both: $10, 500k tokens, $10,2M tok, or none."
        )
        then = partial(self._act, actions.set_budget, agent)
        self._ask_text("Budget", prompt, suggestion.text() if budget.is_set else "", then)

    def action_goal(self) -> None:
        agent = self.selected_agent
        status = self.main.statuses.get(agent or "")
        current = status.goal if status else ""
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
        status = self.main.statuses.get(agent or "")
        if status is not None and status.budget_paused:
            self.action_budget()  # paused at its budget: resuming means raising it
            return
        # A paused agent resumes; so does one that is not running (stopped, killed, crashed):
        # there is nothing to pause, and starting it again is what the key is pressed for.
        held = status is not None and (status.state == "paused" or not status.alive)
        self._act(actions.resume if held else actions.pause, agent)

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

        session = self.fleet.session
        try:
            settings = load_settings(session.workspace)
        except SettingsError as exc:
            self.notify(str(exc), severity="error", timeout=NOTIFY_S, markup=False)
            return
        self.push_screen(AddAgentDialog(session, settings), added)

    def action_promote(self) -> None:
        """The evidence first (off the screen's thread), then the question over it."""
        entry = self.main.selected_candidate
        if entry is None:
            return

        def work() -> None:
            evidence = actions.promotion_evidence(self.fleet, entry.id)
            self.post_message(EvidenceRead(entry.id, evidence))

        self._in_thread(work, "evidence", exclusive=True)

    def action_export(self) -> None:
        entry = self.main.selected_candidate
        if entry is not None:
            self._act(actions.export_candidate, entry.id)

    def action_zoom(self) -> None:
        self.screen.action_maximize()

    def action_help(self) -> None:
        keys = [
            (b.key_display or b.key, b.tooltip or b.description)
            for b in self.BINDINGS
            if isinstance(b, Binding) and b.tooltip
        ]
        self.push_screen(HelpScreen([*keys, *self.EXTRA_KEYS]))

    async def action_quit(self) -> None:
        running = [s.name for s in self.main.statuses.values() if s.alive]
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
                self._in_thread(partial(self._stop_all, running), "quit")

        self.push_screen(ChoiceDialog("Quit", question, choices), chosen)

    def _ask_text(self, title: str, prompt: str, value: str, then: Callable[[str], None]) -> None:
        def answered(text: str | None) -> None:
            if text:
                then(text)

        self.push_screen(TextPrompt(title, prompt, value), answered)

    def _confirm(
        self, title: str, question: str, choices: list[Choice], then: Callable[[], None]
    ) -> None:
        self._on_yes(ChoiceDialog(title, question, choices, focus=1), then)

    def _on_yes(self, dialog: ChoiceDialog, then: Callable[[], None]) -> None:
        def answered(answer: str | None) -> None:
            if answer == "yes":
                then()

        self.push_screen(dialog, answered)

    def _act(self, do: Callable[..., ActionResult], *args: object) -> None:
        """Run one of the person's actions on a thread; one at a time, as the fleet is shared."""

        def work() -> None:
            with self._fleet_lock:
                result = do(self.fleet, *args)
            self.post_message(ActionFinished(result))

        self._in_thread(work, "actions", do.__name__)

    def _ask_side(self, agent: str, question: str) -> None:
        def work() -> None:
            pending = actions.ask(self.fleet, agent, question)
            if isinstance(pending, ActionResult):
                self.post_message(ActionFinished(pending))
                return
            pending.add_done_callback(lambda done: self._answered(agent, done.result()))

        self.notify(f"asked about {agent}; the answer shows here when it comes", timeout=3)
        self._in_thread(work, "ask")

    def _answered(self, agent: str, answer: SideAnswer) -> None:
        """Runs on the answering thread: record it, then hand it to the screen."""
        actions.record_answer(self.fleet, agent, answer)
        self.post_message(SideAnswered(answer))

    def _promote(self, candidate_id: str, slower: actions.SlowerRevalidation | None = None) -> None:
        """Revalidate and commit; after a second yes to a slower figure, commit that run."""
        self.main.query_one(PromotionBar).begin(candidate_id)

        def work() -> None:
            progress = lambda update: self.post_message(PromotionProgressed(update))  # noqa: E731
            result = actions.promote_candidate(
                self.fleet,
                candidate_id,
                progress,
                force=slower is not None,
                revalidated=slower.revalidation if slower else None,
            )
            self.post_message(PromotionFinished(candidate_id, result))

        self._in_thread(work, "promote", f"promote {candidate_id}")
        self.refresh_bindings()

    def _in_thread(
        self, work: Callable[[], None], group: str, description: str = "", exclusive: bool = False
    ) -> None:
        """Off the screen's thread; a raise becomes a notification, never a closed screen."""
        self.run_worker(
            work,
            thread=True,
            group=group,
            description=description or group,
            exclusive=exclusive,
            exit_on_error=False,
        )

    def _read_diff(self, candidate_id: str) -> None:
        self.post_message(DiffRead(read_diff(self.fleet.paths.store, candidate_id)))

    def _stop_all(self, names: list[str]) -> None:
        with self._fleet_lock:
            for name in names:
                if self.fleet.is_running(name):
                    self.fleet.stop(name, Actor.HUMAN, "the TUI quit with stop them", Desired.QUIT)
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
