"""Ray's own multi-node test cluster (`ray.cluster_utils.Cluster`) for the executor's tests.

The head has no CPUs, so every judge run lands on a worker node; the two worker nodes have one
CPU each, a kind of GPU each as Ray labels them (`accelerator_type:KIND`), and run on loopback
beside the tests. A test that removes a worker node puts one back.
"""

from __future__ import annotations

import os

import psutil

NODE_ARGS = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
# Each worker node stands for a machine with its own kind of GPU, as Ray labels one it finds.
KINDS = ("KIND-A", "KIND-B")
# Processes only the Ray executor starts; no one else on a machine runs these.
EXECUTOR_MODULES = (
    "qrsup.kernels.executors.ray_submit",
    "qrsup.kernels.executors.remote_main",
    "qrsup.kernels.executors.ray_probe",
    "qrsup.supervisor.ray_host",
)
# Modules whose processes belong to a session or a judge run, never to the cluster itself.
SESSION_MODULES = (
    "qrsup.agents.agent_main",
    "qrsup.kernels.executors.",
    "qrsup.kernels.judge.",
    "qrsup.supervisor.ray_host",
)


class RayTestCluster:
    """A running cluster: its address, its worker nodes, and removing or restoring them."""

    def __init__(self) -> None:
        from ray.cluster_utils import Cluster  # here: the process helpers below need no Ray

        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 0, "object_store_memory": 80 * 2**20},
        )
        self.kinds: dict[str, str] = {}  # worker node id → its kind of GPU
        for kind in KINDS:
            self._add(kind)
        self.cluster.wait_for_nodes()

    def _add(self, kind: str) -> None:
        node = self.cluster.add_node(**NODE_ARGS, resources={f"accelerator_type:{kind}": 1})
        self.kinds[node.node_id] = kind

    @property
    def address(self) -> str:
        return self.cluster.address

    def worker_ids(self) -> set[str]:
        return {node.node_id for node in self.cluster.worker_nodes}

    def remove(self, node_id: str) -> None:
        """Kill a worker node's processes, as a machine that dies would."""
        (node,) = [n for n in self.cluster.worker_nodes if n.node_id == node_id]
        self.cluster.remove_node(node)
        del self.kinds[node_id]

    def restore(self) -> None:
        for kind in sorted(set(KINDS) - set(self.kinds.values())):
            self._add(kind)
        self.cluster.wait_for_nodes()

    def shutdown(self) -> None:
        self.cluster.shutdown()


def session_processes() -> list[psutil.Process]:
    """Living processes of a session or a judge run: under this test process, or anywhere for
    the processes only the Ray executor starts (a Ray driver outlives its parent if not ended)."""
    mine = {p.pid for p in psutil.Process().children(recursive=True)}
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        command = " ".join(process.info["cmdline"] or [])
        if process.info["status"] == psutil.STATUS_ZOMBIE or process.pid == os.getpid():
            continue
        ours = process.pid in mine and any(module in command for module in SESSION_MODULES)
        if ours or any(module in command for module in EXECUTOR_MODULES):
            found.append(process)
    return found


def session_commands() -> list[str]:
    """The command lines of `session_processes()`, read as they were found."""
    commands = []
    for process in session_processes():
        try:
            commands.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return commands
