"""What a Ray cluster holds: `python -m qrsup.kernels.executors.ray_probe ADDRESS [INTERVAL_S]`.

Always a child process, since a Ray driver ends its own process once the cluster's
GCS has been gone a minute. Every INTERVAL_S it prints one JSON line: the nodes (id, address,
alive, CPUs and GPUs) and the cluster's free resources; `{"unreachable": "..."}` when it cannot
connect. It exits at end of file on stdin (its parent is gone), or after one line without an
interval.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading

from qrsup.kernels.executors.ray_submit import closed_port
from qrsup.kernels.executors.ray_support import RAY_MISSING, one_line
from qrsup.kernels.executors.ray_target import RayTarget

ONCE_TIMEOUT_S = 120.0


def probe_once(target: RayTarget) -> dict:
    """One sample of the cluster, or `{"unreachable": reason}`; never raises."""
    command = [sys.executable, "-m", "qrsup.kernels.executors.ray_probe", target.address]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=ONCE_TIMEOUT_S,
            env={**os.environ, **target.env},
        )
    except subprocess.TimeoutExpired:
        return {"unreachable": f"no answer from {target.address} in {ONCE_TIMEOUT_S:g} s"}
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"unreachable": f"the probe of {target.address} ended (status {done.returncode})"}


def total_gpus(sample: dict) -> float:
    """GPUs on the live nodes of a sample."""
    return sum(node["gpus"] for node in sample.get("nodes", []) if node["alive"])


def main(argv: list[str]) -> int:
    address = argv[0]
    interval_s = float(argv[1]) if len(argv) > 1 else 0.0
    try:
        import ray
    except ImportError:
        return _say({"unreachable": RAY_MISSING})
    if reason := closed_port(address):
        return _say({"unreachable": reason})
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        return _say({"unreachable": one_line(exc)})
    parent_gone = threading.Event()
    threading.Thread(target=_watch_stdin, args=(parent_gone,), daemon=True).start()
    while True:
        print(json.dumps(_sample()), flush=True)
        if not interval_s or parent_gone.wait(interval_s):
            return 0


def _sample() -> dict:
    import ray

    nodes = [
        {
            "node_id": node["NodeID"],
            "address": node.get("NodeManagerAddress", ""),
            "alive": bool(node.get("Alive")),
            "cpus": node.get("Resources", {}).get("CPU", 0.0),
            "gpus": node.get("Resources", {}).get("GPU", 0.0),
        }
        for node in ray.nodes()
    ]
    free = ray.available_resources()
    return {"nodes": nodes, "free": {k: free.get(k, 0.0) for k in ("CPU", "GPU")}}


def _watch_stdin(parent_gone: threading.Event) -> None:
    sys.stdin.buffer.read()
    parent_gone.set()


def _say(line: dict) -> int:
    print(json.dumps(line), flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
