"""The person's actions on a running session, shared by the TUI's keys and the CLI's verbs.

Each returns an ActionResult: `ok` and one line for the person. Nothing here raises for a
mistake the person can make (an unknown agent, a bad goal, a failed candidate).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from qrsup.agents.advisor import build_advisor
from qrsup.agents.evaluation import Evaluator
from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.promotion import promote
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.session import AgentSpec, SessionError
from qrsup.agents.side_questions import AgentRecords, SideAnswer, SideQuestions
from qrsup.agents.store import Store
from qrsup.kernels.suites import get_suite
from qrsup.supervisor.export import ExportError, stored_candidate, write_submission
from qrsup.supervisor.fleet import Fleet, FleetError

Progress = Callable[[dict], None]


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
    return ActionResult(
        True, f"steering for {agent} queued ({message.id}); taken at its next boundary"
    )


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
    return _message(fleet, agent, "pause", "pauses after its evaluation in flight")


def resume(fleet: Fleet, agent: str) -> ActionResult:
    return _message(fleet, agent, "resume", "resumes at its next boundary")


def _message(fleet: Fleet, agent: str, kind: str, effect: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    if not fleet.is_running(agent):
        return ActionResult(False, f"{agent} is not running")
    fleet.send(agent, kind)
    return ActionResult(True, f"{agent} {effect}")


def advise(fleet: Fleet, agent: str) -> ActionResult:
    """Ask the agent's advisor now; its ideas go to the inbox like the loop's own plateau advice."""
    if error := _known(fleet, agent):
        return error
    advisor = build_advisor(fleet.session.agent(agent), fleet.session, fleet.paths)
    store = Store(fleet.paths.store)
    try:
        advice = advisor.advise(store.outcomes(agent))
    finally:
        store.close()
        advisor.close()
    if not advice.ideas:
        return ActionResult(False, f"the advisor has no idea for {agent}: {advice.note}")
    for idea in advice.ideas:
        fleet.send(agent, "advisor", idea, sender="advisor")
    return ActionResult(
        True,
        f"{len(advice.ideas)} idea(s) from {advice.source} queued for {agent}: "
        + " | ".join(advice.ideas),
    )


def kill(fleet: Fleet, agent: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    if not fleet.kill(agent):
        return ActionResult(False, f"{agent} is not running")
    return ActionResult(True, f"{agent} killed with its judge processes")


def restart(fleet: Fleet, agent: str) -> ActionResult:
    if error := _known(fleet, agent):
        return error
    pid = fleet.restart(agent)
    return ActionResult(True, f"{agent} restarted (pid {pid}); it continues from its last record")


def add_agent(fleet: Fleet, spec: AgentSpec) -> ActionResult:
    try:
        pid = fleet.add(spec)
    except (SessionError, FleetError) as exc:
        return ActionResult(False, str(exc))
    return ActionResult(True, f"added {spec.name} ({spec.role}, {spec.proposer}), pid {pid}")


def promote_candidate(
    fleet: Fleet, candidate_id: str, progress: Progress | None = None
) -> ActionResult:
    """Revalidate on the full suite, then commit; a failing candidate changes nothing."""
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
            )
        return ActionResult(result.ok, result.message)
    finally:
        store.close()


def ask(fleet: Fleet, agent: str, question: str) -> Future[SideAnswer] | ActionResult:
    """A side question answered from the agent's model and records, off the loop's path."""
    if error := _known(fleet, agent):
        return error
    spec = fleet.session.agent(agent)
    model = ModelConfig.from_mapping(spec.model) if spec.model else None
    store = Store(fleet.paths.store)
    try:
        records = agent_records(fleet, store, agent)
    finally:
        store.close()
    return SideQuestions(model).ask(question, records)


def record_answer(fleet: Fleet, agent: str, answer: SideAnswer) -> None:
    store = Store(fleet.paths.store)
    try:
        record = answer.to_record()
        store.add_side_question(
            agent, str(record["question"]), str(record["answer"]), str(record["source"])
        )
    finally:
        store.close()


def agent_records(fleet: Fleet, store: Store, agent: str) -> AgentRecords:
    """What the agent's records say: its state, current candidate, parent and recent outcomes."""
    status = fleet.status(agent)
    spec = fleet.session.agent(agent)
    recent = store.outcomes(agent, limit=8)
    latest = next((o.candidate_id for o in reversed(recent) if o.candidate_id), None)
    current = store.candidate(latest) if latest else None
    parent = store.candidate(current.parent_id) if current and current.parent_id else None
    state = f"{status.state} (iteration {status.iteration})" + (
        f": {status.detail}" if status.detail else ""
    )
    return AgentRecords(
        agent=agent,
        role=spec.role,
        goal=status.goal,
        state=state,
        candidate=current.as_parent() if current else None,
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
