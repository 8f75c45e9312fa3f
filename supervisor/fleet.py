"""The fleet of agent processes of one session: start, stop, pause, kill, restart, reattach.

Each agent is its own process group and session, so it outlives the supervisor that started it;
a relaunched supervisor finds it again through its pid file and heartbeat. Pause and stop are
messages taken at the iteration boundary (a frozen judge would corrupt its own timing
accounting); kill is immediate and takes the agent's judge processes with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
from qrsup.agents import inbox
from qrsup.agents.heartbeat import read_beat, write_beat
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session, save_session
from qrsup.kernels.judge.processes import kill_tree
from qrsup.supervisor.leases import GpuLeases, LeaseError, parse_gpus
from qrsup.supervisor.local_ray import ensure_session_instance, session_instance_in_use

STALE_HEARTBEAT_S = 30.0


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


class Fleet:
    """Owns the agent processes of one run directory."""

    def __init__(
        self, paths: RunPaths, visible_gpus: Callable[[], int] = cuda_device_count
    ) -> None:
        self.paths = paths
        self._children: dict[str, subprocess.Popen] = {}
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
        """The agent's pid if that process is alive and really is this agent."""
        try:
            pid = int(self.paths.pid_file(name).read_text())
        except (OSError, ValueError):
            return None
        try:
            process = psutil.Process(pid)
            cmdline = process.cmdline()
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        if "qrsup.agents.agent_main" in cmdline and name in cmdline:
            return pid
        return None

    def is_running(self, name: str) -> bool:
        return self.pid(name) is not None

    def start(self, name: str) -> int:
        """Start the agent unless it runs already; an agent on `cuda` leases a GPU first."""
        spec = self.session.agent(name)
        existing = self.pid(name)
        if existing is not None:
            return existing
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
        self.paths.pid_file(name).write_text(str(process.pid))
        if spec.device == "cuda" and not ray:
            self.leases().bind(name, process.pid)
        return process.pid

    def start_all(self) -> dict[str, int]:
        return {name: self.start(name) for name in self.names()}

    def send(self, name: str, kind: str, text: str = "", sender: str = "human") -> inbox.Message:
        """Drop a message in the agent's inbox; it is taken at the next iteration boundary."""
        self.session.agent(name)
        return inbox.send(self.paths.inbox(name), kind, text, sender)

    def stop(self, name: str) -> None:
        """Ask the agent to finish its evaluation in flight, record it, and exit."""
        self.send(name, "stop", sender="supervisor")
        pid = self.pid(name)
        if pid is not None:
            os.kill(pid, 15)

    def kill(self, name: str) -> bool:
        """Kill the agent and everything it started (its judge) at once; False if not running."""
        self.session.agent(name)
        pid = self.pid(name)
        if pid is None:
            return False
        kill_tree(pid)
        self._reap(name)
        if self.session.agent(name).device == "cuda" and self.session.executor == "local":
            self.leases().release(name)
        beat = read_beat(self.paths.heartbeat(name))
        if beat is not None:
            killed = replace(beat, state="stopped", detail="killed", updated_at=time.time())
            write_beat(self.paths.heartbeat(name), killed)
        return True

    def restart(self, name: str) -> int:
        self.kill(name)
        return self.start(name)

    def add(self, spec: AgentSpec) -> int:
        """Add an agent to the session and start it."""
        save_session(self.paths, self.session.with_agent(spec))
        return self.start(spec.name)

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
        if beat is None:
            state = "starting" if alive else "stopped"
        elif not alive and beat.state not in ("stopped", "crashed"):
            state = "crashed"  # it died without saying so; a kill by the fleet says "stopped"
        else:
            state = beat.state
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
            last_verdict=beat.last_verdict if beat else None,
            detail=beat.detail if beat else "",
        )

    def statuses(self) -> list[AgentStatus]:
        return [self.status(name) for name in self.names()]

    def _reap(self, name: str) -> None:
        child = self._children.get(name)
        if child is not None and child.poll() is not None:
            del self._children[name]


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
