"""The Ray cluster for the stats panel: nodes and GPUs from a probe process, holders from slots.

The probe (kernels/executors/ray_probe.py) is a Ray driver, so it runs as a child that this
watch restarts when it dies: a cluster going away shows as a note, and the TUI keeps running.
Which agent's judge run holds which GPU, and who waits in the queue, come from the agents' slot
files, which their own Ray drivers keep current.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from qrsup.agents.judge_executor import session_target
from qrsup.agents.session import RunPaths, SessionError, load_session
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.executors.slot import JudgeSlot, read_slot
from qrsup.kernels.judge.processes import kill_tree

PROBE_INTERVAL_S = 2.0
PROBE_RETRY_S = 10.0


@dataclass(frozen=True)
class ClusterNode:
    """One node as Ray lists it."""

    node_id: str
    address: str
    alive: bool
    cpus: float
    gpus: float


@dataclass(frozen=True)
class ClusterView:
    """The cluster now, and every agent's judge slot; `note` says why there are no nodes."""

    address: str = ""
    nodes: tuple[ClusterNode, ...] = ()
    free: Mapping[str, float] = field(default_factory=dict)
    slots: Mapping[str, JudgeSlot] = field(default_factory=dict)
    note: str = ""


class ClusterWatch:
    """Keeps one probe running against the cluster `target()` names; never raises."""

    def __init__(
        self,
        target: Callable[[], RayTarget | None],
        interval_s: float = PROBE_INTERVAL_S,
        retry_s: float = PROBE_RETRY_S,
    ) -> None:
        self.target = target
        self.interval_s = interval_s
        self.retry_s = retry_s
        self._probe: subprocess.Popen | None = None
        self._address = ""
        self._latest: dict = {}
        self._lock = threading.Lock()
        self._next_start = 0.0

    def view(self, slots: Mapping[str, JudgeSlot]) -> ClusterView:
        """The latest sample, with the slots of the agents' runs that are not idle."""
        self._keep_probe()
        with self._lock:
            latest = dict(self._latest)
        active = {name: slot for name, slot in slots.items() if slot.state != "idle"}
        if "nodes" not in latest:
            note = latest.get("unreachable") or "connecting to the Ray cluster…"
            return ClusterView(self._address, slots=active, note=f"Ray: {note}")
        nodes = tuple(ClusterNode(**node) for node in latest["nodes"])
        return ClusterView(self._address, nodes, latest.get("free", {}), active)

    def close(self) -> None:
        if self._probe is not None and self._probe.poll() is None:
            kill_tree(self._probe.pid)
            self._probe.wait()

    def _keep_probe(self) -> None:
        target = self.target()
        address = target.address if target else ""
        running = self._probe is not None and self._probe.poll() is None
        if running and address == self._address:
            return
        if running:
            self.close()  # the session's local instance moved
        if target is None:
            self._address = ""
            self._set({"unreachable": "no local Ray instance is running for this session"})
            return
        if time.monotonic() < self._next_start and address == self._address:
            return
        self._next_start = time.monotonic() + self.retry_s
        self._address = address
        self._probe = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qrsup.kernels.executors.ray_probe",
                address,
                str(self.interval_s),
            ],
            stdin=subprocess.PIPE,  # held open: its end tells the probe we are gone
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **target.env},
        )
        threading.Thread(target=self._read, args=(self._probe,), daemon=True).start()

    def _read(self, probe: subprocess.Popen) -> None:
        assert probe.stdout is not None
        for line in probe.stdout:
            try:
                self._set(json.loads(line))
            except ValueError:
                continue
        if "unreachable" not in self._latest:
            self._set({"unreachable": f"lost the cluster at {self._address}"})

    def _set(self, latest: dict) -> None:
        with self._lock:
            self._latest = latest


def session_cluster_watch(paths: RunPaths) -> ClusterWatch | None:
    """A watch on the session's cluster when its judge runs go to Ray; None otherwise."""
    try:
        session = load_session(paths)
    except SessionError:
        return None
    return ClusterWatch(session_target(paths, session)) if session.executor == "ray" else None


def judge_slots(paths: RunPaths, agents: list[str]) -> dict[str, JudgeSlot]:
    """Each agent's judge slot, for the agents that have one."""
    slots = {name: read_slot(paths.judge_slot(name)) for name in agents}
    return {name: slot for name, slot in slots.items() if slot is not None}
