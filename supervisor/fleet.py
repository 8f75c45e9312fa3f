"""The fleet of agent processes of one session: start, stop, pause, kill, restart, reattach.

Each agent is its own process group and session, so it outlives the supervisor that started it;
a relaunched supervisor finds it again through its pid file and heartbeat. Pause and stop are
messages taken at the iteration boundary (a frozen judge would corrupt its own timing
accounting); kill is immediate and takes the agent's judge processes with it.

Every action is recorded with who took it and why (qrsup.agents.lifecycle), and a person's
decision holds across relaunches: a relaunch starts only agents that should run, and leaves an
agent that died too often stopped. A death the supervisor notices is recorded at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from qrsup.agents import inbox
from qrsup.agents.heartbeat import Beat, read_beat, write_beat
from qrsup.agents.lifecycle import (
    CRASH_LOOP_DEATHS,
    CRASH_LOOP_WINDOW_S,
    ENDED_STATES,
    Desired,
    deaths_within,
    decide,
    note,
    read_control,
    record_death,
)
from qrsup.agents.records import AgentLog, replace_atomically
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session, save_session
from qrsup.agents.spend import CostBudget, Spend
from qrsup.agents.store import Store
from qrsup.kernels.judge.manifest import changed_files, load_manifest, save_manifest, take_manifest
from qrsup.kernels.judge.processes import kill_tree
from qrsup.kernels.schema import Actor, Lifecycle
from qrsup.supervisor.leases import GpuLeases, LeaseError, parse_gpus
from qrsup.supervisor.local_ray import ensure_session_instance, session_instance_in_use

STALE_HEARTBEAT_S = 30.0
EXIT_STATUS_WAIT_S = 5.0
PROC_READ_ATTEMPTS = 3
PROC_READ_RETRY_S = 0.05
UNRECORDED = "its death is not recorded yet"


REVALIDATION_HOLDER = "revalidation"  # the lease a person's promotion holds while it re-judges


def cuda_device_count() -> int:
    """GPUs this machine shows; zero without CUDA."""
    import torch

    return torch.cuda.device_count()


class FleetError(RuntimeError):
    """An action on an agent that cannot be taken, with a one-line reason."""


@dataclass(frozen=True)
class AgentStatus:
    """What the supervisor knows about one agent right now."""

    name: str
    role: str
    proposer: str
    goal: str
    pid: int | None
    alive: bool
    state: str
    iteration: int
    heartbeat_age_s: float | None
    best_geomean_ns: float | None
    last_verdict: str | None
    detail: str
    spend: Spend = field(default_factory=Spend)
    budget: CostBudget = field(default_factory=CostBudget)
    budget_paused: bool = False
    stalled: int = 0  # evaluations without a gain beyond the noise; 0 while not stalled
    judging: str | None = None  # the candidate in its judge run now; None unless evaluating one
    best_quick_geomean_ns: float | None = None  # shown, marked, while best_geomean_ns is None
    stopping: bool = False  # asked to stop; it finishes the evaluation in flight first


class Fleet:
    """Owns the agent processes of one run directory."""

    def __init__(
        self, paths: RunPaths, visible_gpus: Callable[[], int] = cuda_device_count
    ) -> None:
        self.paths = paths
        self._children: dict[str, subprocess.Popen] = {}
        self._exit_codes: dict[str, int] = {}
        self._visible_gpus = visible_gpus

    def leases(self) -> GpuLeases:
        """The session's GPU leases (its `gpus` list, or every visible GPU)."""
        session = self.session
        gpus = parse_gpus(session.gpus or None, self._visible_gpus)
        return GpuLeases(self.paths.root, gpus, session.agents_per_gpu)

    @contextmanager
    def revalidation_device(self, beside: str) -> Iterator[str]:
        """Where a person's promotion re-judges: a free GPU, leased while it runs; with none free,
        the GPU of `beside` (the candidate's agent), so no other agent's judge is disturbed."""
        device = self.session.agents[0].device if self.session.agents else "cpu"
        if self.session.executor == "ray":  # Ray places the run; no lease to take
            with session_instance_in_use(self.paths, self.session, FleetError):
                yield device
            return
        leases = self.leases() if device == "cuda" else None
        if leases is None or not leases.gpus:
            yield device
            return
        try:
            gpu = leases.acquire(REVALIDATION_HOLDER, os.getpid())
        except LeaseError:
            held = leases.holders()
            shared = next((gpu for gpu, names in held.items() if beside in names), leases.gpus[0])
            yield f"cuda:{shared}"
            return
        try:
            yield f"cuda:{gpu}"
        finally:
            leases.release(REVALIDATION_HOLDER)

    @property
    def session(self) -> SessionConfig:
        return load_session(self.paths)

    def names(self) -> list[str]:
        return [a.name for a in self.session.agents]

    def pid(self, name: str) -> int | None:
        """The agent's pid if that process is alive and really is this agent.

        A child of this supervisor is known by its pid, without reading its command line: a
        read of /proc on a loaded host can fail for a moment, and a live agent taken for dead
        gets a false death record. Any other process is read through /proc, a failed read
        retried."""
        try:
            pid = int(self.paths.pid_file(name).read_text())
        except (OSError, ValueError):
            return None
        child = self._children.get(name)
        if child is not None and child.pid == pid:
            # A killed agent's main thread shows as a zombie while its other threads are torn
            # down, before its exit status comes: dead already, though poll() cannot say so.
            return pid if child.poll() is None and not _zombie(pid) else None
        for attempt in range(PROC_READ_ATTEMPTS):
            if attempt:
                time.sleep(PROC_READ_RETRY_S)
            if (identity := _is_agent(pid, name)) is not None:
                return pid if identity else None
        return None

    def is_running(self, name: str) -> bool:
        return self.pid(name) is not None

    def start(self, name: str, by: Actor = Actor.HUMAN, reason: str = "") -> int:
        """Start the agent unless it runs already (it should run from now on); an agent on
        `cuda` leases a GPU first."""
        spec = self.session.agent(name)
        existing = self.pid(name)
        if existing is not None:
            return existing
        # The last process's death first, if nobody recorded it: this start's mark replaces the
        # heartbeat that tells what it was doing.
        self._record_unnoticed_death(name)
        decide(self.paths, name, Lifecycle.START, Desired.RUN, by, reason)
        self.paths.ensure(name)
        device = spec.device
        ray = self.session.executor == "ray"  # Ray assigns a GPU per judge run: no lease
        if ray:
            ensure_session_instance(self.paths, self.session, FleetError)
        elif device == "cuda":
            try:
                device = f"cuda:{self.leases().acquire(name)}"
            except (LeaseError, ValueError) as exc:
                raise FleetError(f"cannot start {name}: {exc}") from None
        log = open(self.paths.agent_dir(name) / "process.log", "ab")  # noqa: SIM115 - child owns it
        process = subprocess.Popen(
            [sys.executable, "-m", "qrsup.agents.agent_main", str(self.paths.root), name, device],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.paths.root,
        )
        log.close()
        self._children[name] = process
        replace_atomically(self.paths.pid_file(name), str(process.pid))
        # Alive from now on, as far as the records go: a death before the agent's own first
        # heartbeat is still noticed and recorded.
        last = read_beat(self.paths.heartbeat(name))
        iteration = last.iteration if last else 0
        starting = Beat(process.pid, "starting", iteration, time.time(), goal=spec.goal)
        write_beat(self.paths.heartbeat(name), starting)
        if spec.device == "cuda" and not ray:
            self.leases().bind(name, process.pid)
        return process.pid

    def accept_changed_judge(self) -> list[str]:
        """The judge's files that changed since the session started (an upgrade, an edit), now
        taken as the session's: only while none of its agents runs, so that it is a person
        starting the session again who accepts them, never a run under way. Each agent's log
        says so. Empty when nothing changed or an agent still runs (it pauses at its next
        judge run, saying why)."""
        manifest = self.paths.judge_manifest
        if not manifest.exists():  # its first agent takes it
            return []
        try:
            changed = changed_files(load_manifest(manifest))
        except (OSError, ValueError) as exc:
            raise FleetError(
                f"cannot read the session's judge manifest {manifest}: {exc}; remove it to take "
                "the judge's files as they are now"
            ) from None
        if not changed or any(self.is_running(name) for name in self.names()):
            return []
        save_manifest(manifest, take_manifest())
        line = (
            f"the judge's files changed since the session started ({', '.join(changed)}): "
            "judged with from now on, accepted as the session was started again"
        )
        for name in self.names():
            self.paths.ensure(name)
            AgentLog(self.paths.agent_log(name)).write(line)
        return changed

    def start_all(self, reason: str = "the session was launched") -> dict[str, int]:
        """Start the agents that should run: not those a person killed, paused or stopped, nor
        one that died too often (left stopped, with the reason). Deaths are recorded first.
        The pids of the agents running afterwards, those running already included."""
        self.notice_deaths()
        started = {}
        for name in self.names():
            if (pid := self.pid(name)) is not None:
                started[name] = pid
                continue
            if not read_control(self.paths, name).desired.starts_on_launch:
                continue
            deaths = deaths_within(self.paths, name)
            if deaths >= CRASH_LOOP_DEATHS:
                why = f"died {deaths} times within {CRASH_LOOP_WINDOW_S / 60:g} minutes"
                decide(self.paths, name, Lifecycle.STOP, Desired.CRASH_LOOP, Actor.SUPERVISOR, why)
                continue
            started[name] = self.start(name, Actor.SUPERVISOR, reason)
        return started

    def notice_deaths(self) -> list[str]:
        """Record each agent whose process ended while its heartbeat says it was working; the
        names of those recorded now."""
        return [
            name
            for name in self.names()
            if not self.is_running(name) and self._record_unnoticed_death(name)
        ]

    def _record_unnoticed_death(self, name: str) -> bool:
        """Record the death of the agent's last process (not running) if its heartbeat says it
        was working; whether this call recorded it."""
        beat = read_beat(self.paths.heartbeat(name))
        if beat is None or beat.state in ENDED_STATES:
            return False
        role, how = self.session.agent(name).role, self._exit(name)
        with Store(self.paths.store) as store:
            return record_death(self.paths, store, name, role, how, Actor.SUPERVISOR) is not None

    def _exit(self, name: str) -> str:
        """How the agent's process ended, when this supervisor started it."""
        child = self._children.get(name)
        if child is not None:
            # A killed agent's main thread can show as a zombie while its other threads are
            # still being torn down; its exit status comes a moment later.
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=EXIT_STATUS_WAIT_S)
        self._reap(name)
        code = self._exit_codes.pop(name, None)
        if code is None:
            return "exit status unknown (no supervisor was its parent)"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"

    def send(self, name: str, kind: str, text: str = "", sender: str = "human") -> inbox.Message:
        """Drop a message in the agent's inbox; it is taken at the next iteration boundary."""
        self.session.agent(name)
        return inbox.send(self.paths.inbox(name), kind, text, sender)

    def stop(
        self,
        name: str,
        by: Actor = Actor.HUMAN,
        reason: str = "",
        desired: Desired = Desired.STOPPED,
    ) -> None:
        """Ask the agent to finish its evaluation in flight, record it, and exit; it stays
        stopped until a person starts it (or, for `Desired.QUIT`, until a relaunch)."""
        decide(self.paths, name, Lifecycle.STOP, desired, by, reason)
        why = f" ({reason})" if reason else ""
        self.send(name, "stop", f"stop after the evaluation in flight{why}", sender=str(by))
        pid = self.pid(name)
        if pid is not None:
            os.kill(pid, 15)

    def pause(self, name: str, by: Actor = Actor.HUMAN, reason: str = "") -> None:
        """Pause at the next boundary; a relaunch leaves it paused until a person resumes it."""
        decide(self.paths, name, Lifecycle.PAUSE, Desired.PAUSED, by, reason)
        self.send(name, "pause", reason, sender=str(by))

    def resume(self, name: str, by: Actor = Actor.HUMAN, reason: str = "") -> int | None:
        """Resume a paused agent, or start one that was held (killed, stopped, paused while
        down); the pid of a process started now, else None."""
        decide(self.paths, name, Lifecycle.RESUME, Desired.RUN, by, reason)
        if self.is_running(name):
            self.send(name, "resume", reason, sender=str(by))
            return None
        return self.start(name, by, reason or "resumed")

    def kill(
        self,
        name: str,
        by: Actor = Actor.HUMAN,
        reason: str = "",
        desired: Desired = Desired.KILLED,
    ) -> bool:
        """Kill the agent and everything it started (its judge) at once; False if not running.
        A person's kill holds across relaunches (unless `desired` says otherwise)."""
        self.session.agent(name)
        pid = self.pid(name)
        if pid is None:
            return False
        decide(self.paths, name, Lifecycle.KILL, desired, by, reason)
        kill_tree(pid)
        self._reap(name)
        if self.session.agent(name).device == "cuda" and self.session.executor == "local":
            self.leases().release(name)
        with Store(self.paths.store) as store:
            role = self.session.agent(name).role
            record_death(self.paths, store, name, role, f"killed by {by}", Actor(by))
        return True

    def restart(self, name: str, by: Actor = Actor.HUMAN, reason: str = "") -> int:
        """Kill and start again; it continues from its last record."""
        note(self.paths, name, Lifecycle.RESTART, by, reason)
        self.kill(name, by, "restarting")
        return self.start(name, by, reason or "restarted")

    def add(self, spec: AgentSpec, by: Actor = Actor.HUMAN) -> int:
        """Add an agent to the session and start it."""
        save_session(self.paths, self.session.with_agent(spec))
        return self.start(spec.name, by, "added to the session")

    def wait_stopped(self, names: list[str], timeout_s: float) -> list[str]:
        """Wait until the agents have exited; returns those still running at the deadline."""
        deadline = time.monotonic() + timeout_s
        remaining = [n for n in names if self.is_running(n)]
        while remaining and time.monotonic() < deadline:
            time.sleep(0.2)
            for name in remaining:
                self._reap(name)
            remaining = [n for n in remaining if self.is_running(n)]
        return remaining

    def status(self, name: str) -> AgentStatus:
        spec = self.session.agent(name)
        beat = read_beat(self.paths.heartbeat(name))
        self._reap(name)
        pid = self.pid(name)
        alive = pid is not None
        state, detail = (beat.state, beat.detail) if beat else ("starting", "")
        if not alive:
            state, detail = self._at_rest(name, beat)
        asked_to_stop = (Desired.STOPPED, Desired.QUIT)
        stopping = alive and read_control(self.paths, name).desired in asked_to_stop
        age = time.time() - beat.updated_at if beat else None
        return AgentStatus(
            name=name,
            role=spec.role,
            proposer=spec.proposer,
            goal=beat.goal if beat and beat.goal else spec.goal,
            pid=pid,
            alive=alive,
            state=state,
            iteration=beat.iteration if beat else 0,
            heartbeat_age_s=age,
            best_geomean_ns=beat.best_geomean_ns if beat else None,
            best_quick_geomean_ns=beat.best_quick_geomean_ns if beat else None,
            last_verdict=beat.last_verdict if beat else None,
            detail=detail,
            judging=beat.candidate if beat and alive and state == "evaluating" else None,
            stopping=stopping,
            **_extra_fields(beat.extra if beat else {}, spec),
        )

    def _at_rest(self, name: str, beat: Beat | None) -> tuple[str, str]:
        """(state, detail) of an agent with no process: what a person decided, else how it
        ended (a death not yet recorded shows as `died`)."""
        control = read_control(self.paths, name)
        if control.desired not in (Desired.RUN, Desired.QUIT):
            why = f": {control.reason}" if control.reason else ""
            return str(control.desired), f"by {control.by}{why}"
        if beat is None:
            return "stopped", ""
        if beat.state in ENDED_STATES:
            return beat.state, beat.detail
        return "died", UNRECORDED

    def statuses(self) -> list[AgentStatus]:
        return [self.status(name) for name in self.names()]

    def _reap(self, name: str) -> None:
        child = self._children.get(name)
        if child is not None and child.poll() is not None:
            self._exit_codes[name] = child.returncode
            del self._children[name]


def _is_agent(pid: int, name: str) -> bool | None:
    """Whether the process is this agent; None when /proc could not say (read it again)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        cmdline = process.cmdline()
    except psutil.ZombieProcess:
        return False
    except psutil.NoSuchProcess:
        return None if _exists(pid) else False
    except psutil.AccessDenied:
        return None
    if not cmdline:  # a transient empty read
        return None
    return "qrsup.agents.agent_main" in cmdline and name in cmdline


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:
        return False


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    return True


def _extra_fields(extra: dict[str, object], spec: AgentSpec) -> dict[str, object]:
    """Spend, budget and stall from the heartbeat's `extra` (the spec's budget before any)."""
    budget = extra.get("budget")
    stalled = extra.get("stalled")
    return {
        "spend": Spend.from_dict(extra.get("spend")),
        "budget": CostBudget(**budget)
        if isinstance(budget, dict) and set(budget) == {"usd", "tokens"}
        else CostBudget(spec.max_usd, spec.max_tokens),
        "budget_paused": extra.get("budget_paused") is True,
        "stalled": stalled if isinstance(stalled, int) else 0,
    }


def find_session(workspace: Path, session: str) -> RunPaths:
    """The run directory of an existing session, or a FleetError naming what exists."""
    paths = RunPaths.of(workspace, session)
    if not paths.config.exists():
        runs = workspace / "runs"
        known = (
            sorted(p.name for p in runs.iterdir() if (p / "session.toml").exists())
            if runs.exists()
            else []
        )
        hint = f" (sessions here: {', '.join(known)})" if known else ""
        raise FleetError(f"no session '{session}' in {workspace}{hint}")
    return paths
