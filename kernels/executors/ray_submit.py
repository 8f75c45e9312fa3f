"""A Ray driver for judge runs: `python -m qrsup.kernels.executors.ray_submit FD`.

A Ray driver ends its own process once it has lost the cluster's GCS for a minute, so an agent is
never one: its driver is this child (kernels/executors/ray_driver.py keeps it), and the agent only
reads its lines. Requests (pickled `SubmitRequest`s) arrive on stdin, one after another, until
end of file. For each, one JSON object per line goes to FD: `connected` (first request only),
`unpinned` (freed of the kind of GPU it asked for: none is left, or a node was lost), `queued`,
`placement`, `frame`, `node_lost` as they happen, then exactly one of `result`, `lost_node`
(every attempt lost its node), `unreachable` (this driver then exits) or `error`.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from qrsup.kernels.executors.job import JudgeJob
from qrsup.kernels.executors.ray_support import RAY_MISSING, one_line

CONNECT_PROBE_S = 3.0
Emit = Callable[..., None]


@dataclass(frozen=True)
class SubmitRequest:
    """Where to run one job, with which Ray resources (`accelerator_type` among them: the
    kind of GPU its node must have), and how often a lost node is retried."""

    address: str
    job: JudgeJob
    resources: dict[str, float | str] = field(default_factory=lambda: {"num_cpus": 1})
    lost_node_retries: int = 1


def main(argv: list[str]) -> int:
    out = os.fdopen(int(argv[0]), "w", buffering=1)

    def emit(kind: str, **data: object) -> None:
        out.write(json.dumps({"kind": kind, **data}) + "\n")

    request = _next_request()
    if request is None:
        return 0
    try:
        import ray
    except ImportError:
        emit("error", text=RAY_MISSING)
        return 2
    if reason := closed_port(request.address):
        emit("unreachable", text=reason)
        return 3
    try:
        ray.init(address=request.address, log_to_driver=False, logging_level=logging.ERROR)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        emit("unreachable", text=one_line(exc))
        return 3
    emit("connected")
    while request is not None:
        if not _serve(request, emit):
            return 3  # the cluster is gone: a fresh driver joins it when it is back
        request = _next_request()
    return 0


def _next_request() -> SubmitRequest | None:
    """The next job, or None at end of file (the executor let this driver go)."""
    try:
        return pickle.load(sys.stdin.buffer)
    except EOFError:
        return None


def _serve(request: SubmitRequest, emit: Emit) -> bool:
    """Run one job to its final line; False when the cluster was lost under it."""
    lost: list[str] = []
    for _ in range(1 + request.lost_node_retries):
        try:
            outcome, node = _attempt(request, emit)
        except Exception as exc:  # a fault of this driver's own: the run's one error line
            emit("error", text=one_line(exc))
            return True
        if outcome != "lost":
            return outcome != "unreachable"
        lost.append(node)
        # The lost node may have been the last of its kind: a task held to that kind would
        # wait for it for ever.
        request = _unpinned(request, emit)
    emit("lost_node", nodes=lost)
    return True


def _attempt(request: SubmitRequest, emit: Emit) -> tuple[str, str]:
    """Run the job once: ("done", ""), ("lost", node id) or ("unreachable", "")."""
    import ray
    from qrsup.kernels.executors.ray_task import PREFIX, judge_task
    from ray import exceptions

    node = ""
    kind = request.resources.get("accelerator_type")
    if kind and f"{PREFIX}{kind}" not in ray.cluster_resources():
        request = _unpinned(request, emit)  # none is left: it would wait for one for ever
    generator = judge_task.options(**request.resources).remote(request.job)
    emit("queued")
    try:
        for ref in generator:
            item = ray.get(ref)
            node = item.get("node_id", node)
            emit(item.pop("kind"), **item)
            if "report" in item:
                return "done", ""
    except (exceptions.NodeDiedError, exceptions.WorkerCrashedError) as exc:
        emit("node_lost", node_id=node, text=one_line(exc))
        return "lost", node or "?"
    except (exceptions.LocalRayletDiedError, exceptions.RaySystemError) as exc:
        emit("unreachable", text=one_line(exc))
        return "unreachable", ""
    except exceptions.RayError as exc:
        emit("error", text=one_line(exc))
    return "done", ""


def _unpinned(request: SubmitRequest, emit: Emit) -> SubmitRequest:
    """The request free to run on any kind of GPU, said on FD if it was held to one."""
    kind = request.resources.get("accelerator_type")
    if not kind:
        return request
    emit("unpinned", accelerator_type=kind)
    resources = {k: v for k, v in request.resources.items() if k != "accelerator_type"}
    return replace(request, resources=resources)


def closed_port(address: str) -> str:
    """Why nothing answers at a `host:port` address, or "" (also for forms Ray resolves itself).

    ray.init waits minutes on a dead address; a refused connection says so at once.
    """
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return ""
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_PROBE_S).close()
    except OSError as exc:
        return f"nothing answers at {address} ({exc.strerror or exc})"
    return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
