"""Judge runs as Ray tasks: the side of the agent (or of `qrsup test`) that asks for them.

The executor keeps one Ray driver process (`ray_driver`) and follows its lines for each run:
progress frames go to `on_progress`, the placement to the agent's slot file, and the report comes
back as the local executor's would, with `placement` saying where it ran. A lost node is retried
once, by the driver; lost again, the report's verdict is `lost node`. With no cluster to reach,
the run waits, says so through `on_progress` (state `waiting`) and once in the log, and tries
again every `retry_s` until the cluster is back: agents wait, they do not crash (a person's
command, which asks not to wait, gets `ClusterUnreachable`). Ray's own errors arrive as one line
each. One run at a time: an agent's loop, or one command.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from qrsup.kernels.executors.base import JudgeExecutor
from qrsup.kernels.executors.job import JobResult, JudgeJob
from qrsup.kernels.executors.ray_driver import RayDriver
from qrsup.kernels.executors.ray_submit import SubmitRequest
from qrsup.kernels.executors.ray_support import one_line
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.executors.slot import SlotWriter
from qrsup.kernels.judge.protocol import ChannelClosed, ChannelTimeout, ProtocolError
from qrsup.kernels.judge.runner import JudgeConfig
from qrsup.kernels.judge.static_checks import check_candidate_file
from qrsup.kernels.schema import Progress, ProgressUpdate, Verdict

RETRY_S = 10.0
CONNECT_TIMEOUT_S = 120.0
NO_INSTANCE = "no local Ray instance is running for this session"


class ClusterUnreachable(ConnectionError):
    """The cluster cannot be reached and the caller asked not to wait (a person's command)."""


@dataclass(frozen=True)
class Unreachable:
    """The cluster could not be reached (or was lost mid-run); nothing was judged."""

    reason: str


class RayExecutor(JudgeExecutor):
    """Runs each judge run as a Ray task on the cluster `target()` names at the time."""

    def __init__(
        self,
        target: Callable[[], RayTarget | None],
        note: Callable[[str], None] = lambda line: None,
        slot: Path | None = None,
        retry_s: float = RETRY_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        lost_node_retries: int = 1,
        wait_for_cluster: bool = True,
    ) -> None:
        self.target = target
        self.wait_for_cluster = wait_for_cluster
        self.note = note
        self.slot = SlotWriter(slot)
        self.retry_s = retry_s
        self.connect_timeout_s = connect_timeout_s
        self.lost_node_retries = lost_node_retries
        self._driver: RayDriver | None = None
        self._waiting_for = ""  # why the cluster could not be reached, while a run waits
        # The kind of GPU (Ray's accelerator type) every run goes to once one has run there.
        self.accelerator_type = ""

    def run_judge(
        self,
        candidate: Path,
        config: JudgeConfig,
        on_progress: Progress | None = None,
        extra: dict | None = None,
        keep: dict[str, Path] | None = None,
    ) -> dict:
        static = check_candidate_file(candidate.resolve(), config.forbidden_words)
        if not static.ok:  # nothing to ship
            return {**_base(candidate, config, b""), "verdict": "rejected", "reason": static.reason}
        job = JudgeJob.of(candidate, _for_worker(config), extra, keep)
        progress = on_progress or (lambda update: None)
        while True:
            target = self.target()
            outcome = self._run_once(target, job, progress) if target else Unreachable(NO_INSTANCE)
            if not isinstance(outcome, Unreachable):
                break
            if not self.wait_for_cluster:
                raise ClusterUnreachable(outcome.reason)
            if outcome.reason != self._waiting_for:
                self.note(f"Ray cluster unreachable: {outcome.reason}; the judge run waits for it")
                self._waiting_for = outcome.reason
            self.slot.set("waiting", detail=outcome.reason)
            progress(ProgressUpdate(phase="no Ray cluster", state="waiting"))
            time.sleep(self.retry_s)
        self.slot.set("idle")
        result, placement = outcome
        self._pin(placement.get("accelerator_type", ""))
        result.save_kept(keep or {})
        return _complete(result.report, candidate, config, job.source, placement)

    def _pin(self, kind: str) -> None:
        """Send every later run to GPUs of the kind this one ran on. A candidate's figures are
        compared with others' on one device; on a cluster of mixed GPUs an incumbent timed again
        for a candidate could otherwise land on another kind than the candidate's."""
        if kind and kind != self.accelerator_type:
            self.note(f"judge runs go to {kind} GPUs from now on, where this one ran")
            self.accelerator_type = kind

    def close(self) -> None:
        """Let the kept driver go (it also goes by itself when this process ends)."""
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    def _run_once(
        self, target: RayTarget, job: JudgeJob, progress: Progress
    ) -> tuple[JobResult, dict] | Unreachable:
        if self._driver is not None and not self._driver.serves(target):
            self.close()
        driver = self._driver or RayDriver(target)
        self._driver = None  # kept again only once this run has ended cleanly
        resources = _resources(job.config, self.accelerator_type)
        request = SubmitRequest(target.address, job, resources, self.lost_node_retries)
        ended = False
        try:
            driver.send(request)
            outcome = self._follow(driver, progress)
            ended = not isinstance(outcome, Unreachable) and not driver.unreadable
            return outcome
        except BrokenPipeError:  # it died before reading the request
            return Unreachable(driver.death())
        finally:
            if ended:
                driver.fresh = False
                self._driver = driver
            else:
                driver.close(patient=False)

    def _follow(
        self, driver: RayDriver, progress: Progress
    ) -> tuple[JobResult, dict] | Unreachable:
        started = time.monotonic()
        address = driver.target.address
        deadline = started + self.connect_timeout_s if driver.fresh else None
        placement: dict = {
            "executor": "ray",
            "address": address,
            "lost_nodes": [],
            "connect_s": 0.0,
        }
        marks: dict[str, float] = {}
        while True:
            try:
                message = json.loads(driver.reader.read_line(deadline))
            except ChannelTimeout:
                waited = f"{self.connect_timeout_s:g} s"
                return Unreachable(f"no connection to {address} in {waited}")
            except ChannelClosed:
                return Unreachable(driver.death())
            except (ProtocolError, ValueError) as exc:
                # The driver lives and the cluster is there: waiting for it would wait forever.
                driver.unreadable = True
                reason = f"the Ray driver sent a line the executor cannot read: {one_line(exc)}"
                self.note(reason)
                return JobResult({"verdict": "error", "reason": reason, "specs": []}), placement
            kind = message.pop("kind")
            marks[kind] = time.monotonic() - started
            if kind == "connected":
                deadline = None  # from here on the run may queue for as long as it takes
                placement["connect_s"] = round(marks[kind], 3)
            elif kind == "queued":
                if self._waiting_for:
                    self.note("Ray cluster reachable again; the judge run goes ahead")
                    self._waiting_for = ""
                self.slot.set("queued")
                progress(ProgressUpdate(phase="queued on the cluster"))
            elif kind == "unpinned":
                self.note(
                    f"judge runs are no longer held to {message['accelerator_type']} GPUs (none "
                    "is left, or a node was lost): this one goes wherever Ray places it"
                )
                self.accelerator_type = ""
            elif kind == "placement":
                node = {k: message[k] for k in ("node_id", "node_ip", "gpus")}
                self.slot.set("running", **{**node, "gpus": tuple(node["gpus"])})
                placement.update(node, queued_s=round(marks[kind] - marks["queued"], 3))
                placement["accelerator_type"] = message.get("accelerator_type", "")
            elif kind == "frame":
                progress(ProgressUpdate.from_frame(message["frame"]))
            elif kind == "node_lost":
                lost = message["node_id"]
                placement["lost_nodes"].append(lost)
                self.note(f"judge run lost node {lost[:8]} ({message['text']}); retrying it once")
                progress(ProgressUpdate(phase="node lost; retrying"))
            elif kind == "result":
                placement["run_s"] = round(marks[kind] - marks.get("placement", marks[kind]), 3)
                return JobResult.from_dict(message), placement
            elif kind == "lost_node":
                nodes = ", ".join(n[:8] for n in message["nodes"])
                reason = (
                    f"the judge run's worker node was lost on every attempt ({nodes}); "
                    "nothing was judged"
                )
                self.note(reason)
                return JobResult(
                    {"verdict": Verdict.LOST_NODE.value, "reason": reason, "specs": []}
                ), placement
            elif kind == "unreachable":
                return Unreachable(message["text"])
            elif kind == "error":
                self.note(f"Ray error: {message['text']}")
                report = {"verdict": "error", "reason": f"Ray: {message['text']}", "specs": []}
                return JobResult(report), placement


def _for_worker(config: JudgeConfig) -> JudgeConfig:
    """The config as the worker must read it: `cuda` is the GPU Ray assigned the task.

    Ray never gives one GPU to two of these tasks; the worker still takes that GPU's turn file
    (device_turns.py), which only a judge started there by hand, outside Ray, would share.
    """
    device = "cuda" if config.device.startswith("cuda") else config.device
    return replace(config, device=device, device_turns=None)


def _resources(config: JudgeConfig, accelerator_type: str) -> dict[str, float | str]:
    """One GPU for a CUDA suite (never two judges on one GPU), one CPU for a CPU suite; on a
    node of `accelerator_type`, if one is named."""
    wanted: dict[str, float | str]
    wanted = {"num_gpus": 1} if config.device.startswith("cuda") else {"num_cpus": 1}
    if accelerator_type:
        wanted["accelerator_type"] = accelerator_type
    return wanted


def _base(candidate: Path, config: JudgeConfig, source: bytes) -> dict:
    return {
        "candidate": str(candidate.resolve()),
        "source_sha256": hashlib.sha256(source).hexdigest() if source else "",
        "suite": config.judged_suite().name,
        "mode": config.mode,
        "seed": config.seed,
        "specs": [],
    }


def _complete(
    report: dict, candidate: Path, config: JudgeConfig, source: bytes, placement: dict
) -> dict:
    """The worker's report as the caller knows the run: its own path, and where it ran."""
    data = {**_base(candidate, config, source), **report, "placement": placement}
    data["candidate"] = str(candidate.resolve())
    if data["verdict"] == "tampered" and placement.get("node_ip"):
        data["reason"] = f"on node {placement['node_ip']}: {data['reason']}"
    return data
