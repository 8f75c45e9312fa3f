"""The Ray task of one judge run, as it executes on a worker node.

It says where it runs (node and the GPUs Ray assigned it), then starts the run's own runner
process (`remote_main`) in a session of its own and relays its lines as the generator's items.
Ray sets `CUDA_VISIBLE_DEVICES` to the assigned GPU, so the judge's `cuda` is that GPU; Ray's
assignment decides which judge runs on which GPU and when, across the cluster.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import ray
from qrsup.kernels.executors.job import JudgeJob

STDERR_TAIL_CHARS = 2000
PREFIX = "accelerator_type:"  # Ray's resource for the kind of a node's accelerators


def node_accelerator_type(node_id: str) -> str:
    """The kind of accelerator Ray found on a node (its `accelerator_type:KIND` resource, e.g.
    H100), or "" for a node without one."""
    for node in ray.nodes():
        if node.get("NodeID") == node_id:
            resources = node.get("Resources", {})
            kinds = [key.removeprefix(PREFIX) for key in resources if key.startswith(PREFIX)]
            return kinds[0] if kinds else ""
    return ""


@ray.remote(max_retries=0)  # a lost node is retried by the submitter, once, where it can see it
def judge_task(job: JudgeJob) -> Iterator[dict]:
    """Yield a placement, the run's progress frames, then its result (or a crash report)."""
    context = ray.get_runtime_context()
    yield {
        "kind": "placement",
        "node_id": context.get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "gpus": [str(gpu) for gpu in context.get_accelerator_ids().get("GPU", [])],
        "accelerator_type": node_accelerator_type(context.get_node_id()),
        "pid": os.getpid(),
    }
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "qrsup.kernels.executors.remote_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # out of the worker's process-group cleanup: it cleans up
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(pickle.dumps(job))
        process.stdin.flush()  # kept open: its end of file tells the runner this worker is gone
        finished = False
        try:
            for line in process.stdout:
                item = json.loads(line)
                finished = finished or item.get("kind") == "result"
                yield item
        finally:  # also when Ray cancels the task: the runner stops its run and cleans up
            process.stdin.close()
            code = process.wait()
        stderr.seek(0)
        tail = stderr.read().decode(errors="replace")[-STDERR_TAIL_CHARS:].strip()
    if not finished:
        reason = f"the judge's runner on node {context.get_node_id()[:8]} died (status {code})"
        report = {"verdict": "crash", "reason": f"{reason}\n{tail}".strip(), "specs": []}
        yield {"kind": "result", "report": report, "kept": {}}
