"""The Ray driver of one judge run: `python -m qrsup.kernels.executors.ray_submit FD`.

A Ray driver ends its own process once it has lost the cluster's GCS for a minute, so an agent is
never one: each judge run's driver is this short-lived child, and the agent only reads its lines.
The request (a pickled `SubmitRequest`) arrives on stdin; one JSON object per line goes to FD:
`connected`, `queued`, `placement`, `frame`, `node_lost` as they happen, then exactly one of
`result`, `lost_node` (every attempt lost its node), `unreachable` or `error` (one line each).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from qrsup.kernels.executors.job import JudgeJob
from qrsup.kernels.executors.ray_support import RAY_MISSING, one_line

CONNECT_PROBE_S = 3.0
Emit = Callable[..., None]


@dataclass(frozen=True)
class SubmitRequest:
    """Where to run one job, with which Ray resources, and how often a lost node is retried."""

    address: str
    job: JudgeJob
    resources: dict[str, float] = field(default_factory=lambda: {"num_cpus": 1})
    lost_node_retries: int = 1


def main(argv: list[str]) -> int:
    out = os.fdopen(int(argv[0]), "w", buffering=1)

    def emit(kind: str, **data: object) -> None:
        out.write(json.dumps({"kind": kind, **data}) + "\n")

    request = pickle.load(sys.stdin.buffer)
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
    lost: list[str] = []
    for _ in range(1 + request.lost_node_retries):
        node = _attempt(request, emit)
        if node is None:
            return 0
        lost.append(node)
    emit("lost_node", nodes=lost)
    return 0


def _attempt(request: SubmitRequest, emit: Emit) -> str | None:
    """Run the job once; the id of the node it lost, or None when a final line was written."""
    import ray
    from qrsup.kernels.executors.ray_task import judge_task
    from ray import exceptions

    node = ""
    generator = judge_task.options(**request.resources).remote(request.job)
    emit("queued")
    try:
        for ref in generator:
            item = ray.get(ref)
            node = item.get("node_id", node)
            emit(item.pop("kind"), **item)
            if "report" in item:
                return None
    except (exceptions.NodeDiedError, exceptions.WorkerCrashedError) as exc:
        emit("node_lost", node_id=node, text=one_line(exc))
        return node or "?"
    except (exceptions.LocalRayletDiedError, exceptions.RaySystemError) as exc:
        emit("unreachable", text=one_line(exc))
    except exceptions.RayError as exc:
        emit("error", text=one_line(exc))
    return None


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
