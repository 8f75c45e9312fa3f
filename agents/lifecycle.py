"""An agent's life as records: who started, stopped, killed, paused, resumed or restarted it and
why, what a person decided it should be doing, and how it died when it died.

A person's decision (`control.json` in the agent's directory) outlives the TUI and any relaunch:
a killed or paused agent stays so until a person restarts or resumes it. Quitting the TUI with
"stop them" is its own state, which a relaunch resumes. A death is recorded once, by whoever
notices first (the supervisor through the process, or the agent at its next start): its
in-flight work becomes `interrupted` iterations and the death an event and a log line.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from pathlib import Path

from qrsup.agents.heartbeat import Beat, read_beat, write_beat
from qrsup.agents.records import (
    AgentLog,
    append_event,
    log_submission,
    read_events,
    replace_atomically,
)
from qrsup.agents.session import RunPaths, SessionError, load_session
from qrsup.agents.store import Store
from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.schema import Actor, Decision, EventKind, Iteration, Lifecycle, Verdict

CRASH_LOOP_DEATHS = 3
CRASH_LOOP_WINDOW_S = 600.0
# Heartbeat states after which the process is expected to be gone.
ENDED_STATES = ("stopped", "crashed", "died")


class Desired(StrEnum):
    """What the agent should be doing, whatever its process is doing now."""

    RUN = "run"
    PAUSED = "paused"  # a person paused it
    KILLED = "killed"  # a person killed it
    STOPPED = "stopped"  # a person stopped it (`qrsup stop`)
    QUIT = "quit"  # stopped when a person quit the TUI; a relaunch resumes it
    CRASH_LOOP = "crash loop"  # died too often; left stopped for a person to look

    @property
    def starts_on_launch(self) -> bool:
        return self in (Desired.RUN, Desired.QUIT)


@dataclass(frozen=True)
class Control:
    """The last decision about an agent: what, by whom, why, when."""

    desired: Desired = Desired.RUN
    by: Actor = Actor.SUPERVISOR
    reason: str = ""
    at: float = 0.0


def control_path(paths: RunPaths, agent: str) -> Path:
    return paths.agent_dir(agent) / "control.json"


def read_control(paths: RunPaths, agent: str) -> Control:
    try:
        data = json.loads(control_path(paths, agent).read_text())
        return Control(Desired(data["desired"]), Actor(data["by"]), data["reason"], data["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return Control()


def decide(
    paths: RunPaths, agent: str, action: Lifecycle, desired: Desired, by: Actor, reason: str
) -> None:
    """Record an action on an agent: the decision it leaves, an event, a log line."""
    control = Control(desired, by, reason, time.time())
    replace_atomically(control_path(paths, agent), json.dumps(asdict(control)))
    note(paths, agent, action, by, reason)


def note(
    paths: RunPaths, agent: str, action: Lifecycle, by: Actor, reason: str, **fields: object
) -> None:
    """An event and a log line for an action that leaves the decision as it was."""
    event = {"event": str(EventKind.LIFECYCLE), "agent": agent, "action": str(action)}
    append_event(paths.events(agent), {**event, "by": str(by), "reason": reason, **fields})
    why = f": {reason}" if reason else ""
    AgentLog(paths.agent_log(agent)).write(f"{action} by {by}{why}")


def deaths_within(paths: RunPaths, agent: str, window_s: float = CRASH_LOOP_WINDOW_S) -> int:
    """How many times the agent died in the last `window_s` seconds, by its records."""
    since = time.time() - window_s
    return sum(
        1
        for event in read_events(paths.events(agent))
        if event.get("action") == Lifecycle.DIED and float(event.get("at", 0)) >= since
    )


@dataclass(frozen=True)
class Death:
    """A recorded death: how the process ended, and the iterations it cut off."""

    how: str
    interrupted: tuple[Iteration, ...]


def record_death(
    paths: RunPaths,
    store: Store,
    agent: str,
    role: str,
    how: str,
    by: Actor,
    alive_pid: int | None = None,
) -> Death | None:
    """If the agent's heartbeat says it was alive when its process ended, record that once:
    an `interrupted` iteration for each candidate it left unrecorded (and for an iteration cut
    off before it had one), a `died` event and a log line. None when there was nothing to
    record (it ended cleanly, or someone recorded it first, or the beat is `alive_pid`'s: a
    starting agent's own)."""
    with file_lock(paths.agent_dir(agent) / "lifecycle.lock"):
        beat = read_beat(paths.heartbeat(agent))
        if beat is None or beat.state in ENDED_STATES or beat.pid == alive_pid:
            return None
        recorded = _interrupt(store, agent, role, beat, how)
        for record in recorded:
            append_event(paths.events(agent), record.to_event())
        _log_submissions(paths, [r for r in recorded if r.candidate_id])
        stage = beat.detail or beat.state
        last = recorded[-1] if recorded else None
        fields = {
            "how": how,
            "at": time.time(),
            "iteration": beat.iteration,
            "state": beat.state,
            "stage": stage,
            "candidate_id": last.candidate_id if last else beat.candidate,
        }
        what = f" while {beat.state} ({stage})" if beat.state != "idle" else ""
        cut = ", ".join(
            f"it {r.iteration} {r.candidate_id or '(no candidate yet)'}" for r in recorded
        )
        reason = f"{how}{what}; interrupted: {cut or 'nothing'}"
        note(paths, agent, Lifecycle.DIED, by, reason, **fields)
        died = replace(beat, state="died", detail=how, updated_at=time.time())
        write_beat(paths.heartbeat(agent), died)
        return Death(how, tuple(recorded))


def _log_submissions(paths: RunPaths, interrupted: list[Iteration]) -> None:
    """Every submission lands in the workspace's log.md, one cut off by its agent's death too
    (an iteration cut off before it had a candidate submitted nothing)."""
    if not interrupted:
        return
    try:
        workspace = load_session(paths).workspace
    except SessionError:
        return  # a run directory without its session has no workspace to log in
    for record in interrupted:
        log_submission(workspace, record.to_event())


def _interrupt(store: Store, agent: str, role: str, beat: Beat, how: str) -> list[Iteration]:
    number = store.last_iteration(agent)
    stage = beat.detail or beat.state
    reason = f"its agent died ({how}) in iteration {beat.iteration}, stage {stage}"
    recorded = []
    for candidate in store.unrecorded_candidates(agent):
        number += 1
        record = Iteration(
            agent=agent,
            iteration=number,
            verdict=Verdict.INTERRUPTED,
            decision=Decision.INTERRUPTED,
            candidate_id=candidate.id,
            parent_id=candidate.parent_id,
            role=role,
            hypothesis=candidate.hypothesis,
            reason=reason,
            goal=beat.goal,
        )
        if store.record_iteration(record):
            recorded.append(record)
    if beat.iteration > number and beat.state in ("proposing", "evaluating"):
        record = Iteration(
            agent=agent,
            iteration=beat.iteration,
            verdict=Verdict.INTERRUPTED,
            decision=Decision.INTERRUPTED,
            role=role,
            reason=reason,
            goal=beat.goal,
        )
        if store.record_iteration(record):
            recorded.append(record)
    return recorded
