"""The person's actions on a running session, shared by the TUI's keys and the CLI's verbs.

Each returns an ActionResult: `ok` and one line for the person. Nothing here raises for a
mistake the person can make (an unknown agent, a bad goal, a failed candidate).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass

from qrsup.agents.advisor import build_advisor
from qrsup.agents.evaluation import Evaluator
from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.incumbent import REPO_ROOT
from qrsup.agents.lifecycle import Desired, read_control
from qrsup.agents.promotion import Revalidation, promote
from qrsup.agents.proposal import ParentCandidate
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.records import append_event
from qrsup.agents.session import AgentSpec, SessionError
from qrsup.agents.settings import SettingsError, load_settings
from qrsup.agents.side_questions import AgentRecords, SideAnswer, SideQuestions
from qrsup.agents.spaces import FAMILIES, space_for
from qrsup.agents.spend import parse_cost_budget
from qrsup.agents.store import Store, StoreError
from qrsup.agents.tuner_steering import SteeringRead, read_steering
from qrsup.kernels.schema import Actor, EventKind, Progress
from qrsup.kernels.suites import get_suite
from qrsup.supervisor.export import ExportError, stored_candidate, write_submission
from qrsup.supervisor.fleet import Fleet, FleetError
from qrsup.supervisor.promotion_evidence import PromotionEvidence, read_evidence

STOP_WAIT_S = 120.0  # an evaluation in flight finishes first


@dataclass(frozen=True)
class ActionResult:
    """Whether the action happened, and one line saying what happened or why not."""

    ok: bool
    message: str


def _known(fleet: Fleet, agent: str) -> ActionResult | None:
    if agent not in fleet.names():
        known = ", ".join(fleet.names()) or "none"
        return ActionResult(False, f"no agent named {agent!r} (agents: {known})")
    return None


def steer(fleet: Fleet, agent: str, text: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    if not text.strip():
        return ActionResult(False, "steering text is empty")
    message = fleet.send(agent, "steer", text.strip())
    spec = next(s for s in fleet.session.agents if s.name == agent)
    return ActionResult(
        True,
        f"steering for {agent} queued ({message.id}); taken at its next boundary"
        + "".join(f"; the tuner {note}" for note in _tuner_notes(spec, text.strip())),
    )


def _tuner_notes(spec: AgentSpec, text: str) -> tuple[str, ...]:
    """What a tuner agent will take from `text`, said at once: a steer it cannot read would
    otherwise be found out only in the agent's log, an evaluation later."""
    reading = _tuner_reading(spec, [text], [])
    return reading.notes if reading else ()


def _tuner_reading(spec: AgentSpec, steering: list[str], ideas: list[str]) -> SteeringRead | None:
    """How a tuner agent reads steering and advisor ideas; None for other proposers."""
    if spec.proposer != "tuner" or spec.family not in FAMILIES:
        return None
    return read_steering(steering, ideas, space_for(spec.family, REPO_ROOT).choices())


def broadcast(fleet: Fleet, text: str) -> ActionResult:
    """The same steering to every agent of the session, running or not (it waits in the inbox);
    the receipt says what the tuner agents will take from it, once per distinct reading."""
    if not text.strip():
        return ActionResult(False, "steering text is empty")
    specs = fleet.session.agents
    names = [spec.name for spec in specs]
    readings: dict[tuple[str, ...], list[str]] = {}
    for spec in specs:
        fleet.send(spec.name, "steer", text.strip(), sender="human (broadcast)")
        if notes := _tuner_notes(spec, text.strip()):
            readings.setdefault(notes, []).append(spec.name)
    said = "".join(
        f"; the tuner of {', '.join(agents)} {'; '.join(notes)}"
        for notes, agents in readings.items()
    )
    return ActionResult(
        True,
        f"steering for every agent ({', '.join(names)}) queued; taken at their boundaries{said}",
    )


def set_budget(fleet: Fleet, agent: str, text: str) -> ActionResult:
    """A new cost budget; an agent paused at its old one resumes under the new one."""
    if error := _known(fleet, agent):
        return error
    try:
        budget = parse_cost_budget(text)
    except ValueError as exc:
        return ActionResult(False, str(exc))
    fleet.send(agent, "budget", budget.text())
    status = fleet.status(agent)
    if budget.is_set and (over := budget.exceeded(status.spend)):
        return ActionResult(True, f"budget {budget.text()} for {agent} queued, yet {over}")
    effect = "resumes under it" if status.budget_paused else "takes it at its next boundary"
    return ActionResult(True, f"budget {budget.text()} for {agent} queued; it {effect}")


def set_goal(fleet: Fleet, agent: str, goal: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    try:
        parse_goal(goal)
    except GoalError as exc:
        return ActionResult(False, str(exc))
    fleet.send(agent, "goal", goal.strip())
    return ActionResult(True, f"new goal for {agent} queued: {goal.strip()}")


def pause(fleet: Fleet, agent: str) -> ActionResult:
    """A person's pause: taken at the boundary, and held across relaunches until resumed."""
    if error := _known(fleet, agent):
        return error
    if not fleet.is_running(agent):
        state = fleet.status(agent).state
        return ActionResult(
            False,
            f"{agent} is not running ({state}), so there is nothing to pause; "
            f"qrsup resume {agent} (or p here) starts it again",
        )
    fleet.pause(agent, Actor.HUMAN, "paused by a person")
    return ActionResult(True, f"{agent} pauses after its evaluation in flight")


def resume(fleet: Fleet, agent: str) -> ActionResult:
    """Resume a paused agent, or start again one a person held (killed, stopped, paused); one
    paused at its cost budget needs a new budget instead, and one running with no pause or stop
    asked of it has nothing to resume."""
    if error := _known(fleet, agent):
        return error
    if (status := fleet.status(agent)).budget_paused:
        over = status.budget.exceeded(status.spend) or "its budget is reached"
        raise_it = f"raise it (qrsup budget {agent} …, or $ here) to go on"
        return ActionResult(False, f"{agent} is paused at its cost budget ({over}); {raise_it}")
    desired = read_control(fleet.paths, agent).desired
    if status.alive and status.state != "paused" and desired == Desired.RUN:
        running = f"{agent} is already running ({status.state})"
        return ActionResult(False, f"{running}; nothing to resume")
    pid = fleet.resume(agent, Actor.HUMAN, "resumed by a person")
    if pid is None:
        return ActionResult(True, f"{agent} resumes at its next boundary")
    return ActionResult(True, f"{agent} started again (pid {pid}); it continues from its record")


def stop_session(fleet: Fleet, stopping: Callable[[str], None] = lambda line: None) -> ActionResult:
    """Stop every agent of the session with its judge; they stay stopped until resumed. Each
    running agent finishes its evaluation in flight first, which `stopping` is told before the
    wait; one still running after STOP_WAIT_S is killed."""
    running = [n for n in fleet.names() if fleet.is_running(n)]
    for name in fleet.names():
        fleet.stop(name, Actor.HUMAN, "qrsup stop")
    if running:
        who = (
            f"{running[0]} finishes its"
            if len(running) == 1
            else f"{len(running)} agents ({', '.join(running)}) finish their"
        )
        wait = f"waiting up to {STOP_WAIT_S:g} s, then killing any still running"
        stopping(f"stopping: {who} evaluation in flight ({wait})")
    left = fleet.wait_stopped(running, STOP_WAIT_S)
    for name in left:
        fleet.kill(name, Actor.HUMAN, f"still running {STOP_WAIT_S:g} s after qrsup stop")
    done = [name for name in running if name not in left]
    said = [f"stopped {', '.join(done)}"] if done else []
    said += [f"killed {', '.join(left)}, which did not stop in time"] if left else []
    return ActionResult(
        True, f"{'; '.join(said) or 'none was running'}; qrsup resume NAME starts one again"
    )


def advise(fleet: Fleet, agent: str) -> ActionResult:
    """Ask the agent's advisor now; its ideas go to the inbox like the loop's own plateau advice."""
    if error := _known(fleet, agent):
        return error
    advisor = build_advisor(fleet.session.agent(agent), fleet.session, fleet.paths)
    try:
        with Store.reader(fleet.paths.store) as store:
            advice = advisor.advise(store.outcomes(agent))
    except StoreError as exc:
        return ActionResult(False, str(exc))
    finally:
        advisor.close()
    if not advice.ideas:
        return ActionResult(False, f"the advisor has no idea for {agent}: {advice.note}")
    for idea in advice.ideas:
        fleet.send(agent, "advisor", idea, sender="advisor")
    reading = _tuner_reading(fleet.session.agent(agent), [], list(advice.ideas))
    return ActionResult(
        True,
        f"{len(advice.ideas)} idea(s) from {advice.source} queued for {agent}: "
        + " | ".join(advice.ideas)
        + (f"; the tuner {reading.advice}" if reading else ""),
    )


def kill(fleet: Fleet, agent: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    if not fleet.kill(agent, Actor.HUMAN, "killed by a person"):
        return ActionResult(False, f"{agent} is not running")
    return ActionResult(True, f"{agent} killed with its judge processes; it stays stopped")


def restart(fleet: Fleet, agent: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    pid = fleet.restart(agent, Actor.HUMAN, "restarted by a person")
    return ActionResult(True, f"{agent} restarted (pid {pid}); it continues from its last record")


def add_agent(fleet: Fleet, spec: AgentSpec) -> ActionResult:
    try:
        pid = fleet.add(spec)
    except (SessionError, FleetError) as exc:
        return ActionResult(False, str(exc))
    return ActionResult(True, f"added {spec.name} ({spec.role}, {spec.proposer}), pid {pid}")


@dataclass(frozen=True)
class SlowerRevalidation(ActionResult):
    """The revalidation measured slower than the incumbent: nothing committed yet; a person who
    confirms commits this same run (`promote_candidate(..., force=True, revalidated=…)`)."""

    revalidation: Revalidation | None = None
    slower_by: float = 0.0


def promotion_evidence(fleet: Fleet, candidate_id: str) -> PromotionEvidence | ActionResult:
    """The diff, gain, noise band and correctness evidence a person confirms a promotion on."""
    events = [fleet.paths.events(name) for name in fleet.names()]
    evidence = read_evidence(fleet.paths.store, events, candidate_id, fleet.session.name)
    return ActionResult(False, evidence) if isinstance(evidence, str) else evidence


def promote_candidate(
    fleet: Fleet,
    candidate_id: str,
    progress: Progress | None = None,
    force: bool = False,
    revalidated: Revalidation | None = None,
) -> ActionResult:
    """Revalidate on the full suite, then commit; a failing candidate changes nothing, and a
    slower one only when forced."""
    session = fleet.session
    store = Store(fleet.paths.store)
    try:
        candidate = store.candidate(candidate_id)
        if candidate is None:
            return ActionResult(False, f"no candidate {candidate_id!r} in session {session.name}")
        if candidate.verdict is not None and candidate.verdict != "pass":
            return ActionResult(
                False, f"{candidate_id} failed the judge ({candidate.verdict}); not promoted"
            )
        with fleet.revalidation_device(candidate.agent) as device:
            evaluator = Evaluator.for_session(fleet.paths, session, device)
            result = promote(
                session.workspace,
                fleet.paths,
                store,
                evaluator,
                candidate_id,
                by="human",
                progress=progress,
                force=force,
                revalidated=revalidated,
            )
        if result.slower_by is not None:
            return SlowerRevalidation(False, result.message, result.revalidation, result.slower_by)
        return ActionResult(result.ok, result.message)
    finally:
        store.close()


def ask(fleet: Fleet, agent: str, question: str) -> Future[SideAnswer] | ActionResult:
    """A side question answered from the agent's model and records, off the loop's path."""
    if error := _known(fleet, agent):
        return error
    try:
        model = _side_model(fleet, fleet.session.agent(agent))
        with Store.reader(fleet.paths.store) as store:
            records = agent_records(fleet, store, agent)
    except (SettingsError, StoreError, ValueError) as exc:
        return ActionResult(False, str(exc))
    return SideQuestions(model).ask(question, records)


def _side_model(fleet: Fleet, spec: AgentSpec) -> ModelConfig | None:
    """The agent's own model, else the workspace's `[model]` table when it names one: a tuner
    or command agent has no model of its own."""
    table = spec.model or load_settings(fleet.session.workspace).model
    return ModelConfig.from_mapping(table) if table.get("model") else None


def record_answer(fleet: Fleet, agent: str, answer: SideAnswer) -> None:
    """The answer and its cost in the store, and a `side_question` event in the agent's records."""
    with Store(fleet.paths.store) as store:
        usage = asdict(answer.usage)
        store.add_side_question(agent, answer.question, answer.answer, answer.source, usage)
    event = {"event": str(EventKind.SIDE_QUESTION), "agent": agent, **answer.to_record()}
    append_event(fleet.paths.events(agent), event)


def agent_records(fleet: Fleet, store: Store, agent: str) -> AgentRecords:
    """What the agent's records say: its state, current candidate (the one in its judge run,
    else the last it proposed), that candidate's parent and its recent outcomes."""
    status = fleet.status(agent)
    spec = fleet.session.agent(agent)
    recent = store.outcomes(agent, limit=8)
    latest = next((o.candidate_id for o in reversed(recent) if o.candidate_id), None)
    current = store.candidate(status.judging or "") or store.candidate(latest or "")
    parent = store.candidate(current.parent_id) if current and current.parent_id else None
    judging = f", judging {status.judging}" if status.judging else ""
    state = f"{status.state} (iteration {status.iteration}{judging})" + (
        f": {status.detail}" if status.detail else ""
    )
    return AgentRecords(
        agent=agent,
        role=spec.role,
        goal=status.goal,
        state=state,
        candidate=ParentCandidate.of(current) if current else None,
        parent_source=parent.source if parent else "",
        recent=recent,
        spec_labels=tuple(s.label for s in get_suite(fleet.session.suite).benchmarks),
    )


def export_candidate(fleet: Fleet, candidate_id: str) -> ActionResult:
    """Write the candidate as one contest file, `submission-<id>.py` in the workspace."""
    out = fleet.session.workspace / f"submission-{candidate_id}.py"
    try:
        submission = write_submission(stored_candidate(fleet.paths, candidate_id), out, force=True)
    except ExportError as exc:
        return ActionResult(False, str(exc))
    bundled = len(submission.modules)
    return ActionResult(True, f"exported {candidate_id} to {out} ({bundled} qrsup modules bundled)")
