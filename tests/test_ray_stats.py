"""The TUI's view of a Ray cluster: nodes, GPUs per node, whose judge run holds which GPU, the
queue, and a cluster that cannot be reached; the executor setting of a session."""

from __future__ import annotations

import queue
import time
from dataclasses import replace

import pytest
from qrsup.agents.session import RunPaths, SessionConfig, SessionError, load_session, save_session
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.executors.slot import JudgeSlot
from qrsup.supervisor.cluster_stats import ClusterNode, ClusterView, ClusterWatch
from qrsup.supervisor.gpu_stats import GpuReport
from qrsup.supervisor.messages import AgentsSampled
from qrsup.supervisor.watchers import FleetSampler
from qrsup.supervisor.widgets.cluster_text import cluster_lines
from qrsup.supervisor.widgets.stats_panel import stats_text

from tests.loop_helpers import wait_for
from tests.ray_cluster import session_processes
from tests.tui_sessions import frozen_session

GPU_NODE = ClusterNode("1a2b3c4d5e6f", "10.0.0.5", True, 16.0, 2.0)
CPU_NODE = ClusterNode("9f8e7d6c5b4a", "10.0.0.6", True, 8.0, 0.0)


def test_the_stats_show_each_node_its_gpus_whose_run_holds_which_and_the_queue():
    now = time.time()
    view = ClusterView(
        address="10.0.0.1:6379",
        nodes=(GPU_NODE, CPU_NODE, ClusterNode("dead", "10.0.0.7", False, 8.0, 1.0)),
        free={"GPU": 0.0, "CPU": 21.0},
        slots={
            "a1": JudgeSlot("running", now - 40, GPU_NODE.node_id, "10.0.0.5", ("0",)),
            "a2": JudgeSlot("running", now - 5, GPU_NODE.node_id, "10.0.0.5", ("1",)),
            "a3": JudgeSlot("queued", now - 12),
            "a4": JudgeSlot("queued", now - 3),
            "a5": JudgeSlot("waiting", now - 90),
        },
    )
    no_local_gpu = GpuReport(note="no GPU stats: NVML Shared Library Not Found")
    lines = stats_text(no_local_gpu, {}, {}, view).plain.splitlines()
    assert lines[:5] == [
        "ray 10.0.0.1:6379 · 2 nodes (1 dead) · 0/2 GPUs free · 21/24 CPUs free",
        "  1a2b3c4d 10.0.0.5 2 GPU · gpu0 a1 · gpu1 a2",
        "  9f8e7d6c 10.0.0.6 8 CPU · no judge of ours",
        "queue a3 12s · a4 3s",
        "waiting for the cluster a5 90s",
    ]
    assert not any("NVML" in line for line in lines)  # this host's GPUs are not the point


def test_a_cluster_that_cannot_be_reached_is_a_note_with_the_agents_waiting_for_it():
    now = time.time()
    view = ClusterView(
        "10.0.0.1:6379",
        slots={"a1": JudgeSlot("waiting", now - 30)},
        note="Ray: nothing answers at 10.0.0.1:6379 (Connection refused)",
    )
    lines = [line.plain for line in cluster_lines(view, now)]
    assert lines == [
        "Ray: nothing answers at 10.0.0.1:6379 (Connection refused)",
        "waiting for the cluster a1 30s",
    ]


def test_a_cluster_watch_lists_the_nodes_and_leaves_no_probe_behind(ray_cluster):
    watch = ClusterWatch(lambda: RayTarget(ray_cluster.address), interval_s=0.5)
    try:
        view = wait_for(lambda: (v := watch.view({})).nodes and v, 60, "the probe's first sample")
        alive = [node for node in view.nodes if node.alive]
        assert {node.node_id for node in alive} >= ray_cluster.worker_ids()
        assert sum(node.cpus for node in alive) == 2  # the head has none: runs go to workers
        assert view.address == ray_cluster.address and view.note == ""
    finally:
        watch.close()
    assert not session_processes()


def test_a_cluster_watch_on_a_dead_address_says_why_and_keeps_going():
    pytest.importorskip("ray")
    watch = ClusterWatch(lambda: RayTarget("127.0.0.1:9"), retry_s=0.2)
    try:
        view = wait_for(lambda: "nothing answers" in (v := watch.view({})).note and v, 60, "a note")
        assert view.nodes == () and view.note.startswith("Ray: nothing answers at 127.0.0.1:9")
    finally:
        watch.close()


def test_the_fleet_sampler_of_a_ray_session_sends_the_cluster_with_every_sample(
    ray_cluster, tmp_path
):
    paths = frozen_session(tmp_path)
    session = load_session(paths)
    save_session(paths, replace(session, executor="ray", ray_address=ray_cluster.address))
    posted: queue.Queue = queue.Queue()
    sampler = FleetSampler(paths, posted.put, interval_s=0.3, min_gap_s=0.05)
    sampler.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = posted.get(timeout=60)
            if isinstance(message, AgentsSampled) and message.cluster and message.cluster.nodes:
                break
        assert message.cluster.address == ray_cluster.address
    finally:
        sampler.stop()
    assert not session_processes()  # the probe went with the sampler


def test_a_session_keeps_its_executor_and_refuses_an_unknown_one(tmp_path):
    paths = RunPaths(tmp_path / "runs" / "s")
    config = SessionConfig(name="s", workspace=tmp_path, executor="ray", ray_address="h:6379")
    save_session(paths, config)
    assert load_session(paths) == config
    assert load_session(paths).executor == "ray"
    assert SessionConfig(name="s", workspace=tmp_path).executor == "local"
    with pytest.raises(SessionError, match="executor must be one of local, ray, not 'dask'"):
        SessionConfig(name="s", workspace=tmp_path, executor="dask")


def test_a_large_cluster_lists_the_nodes_running_our_judges_first_and_counts_the_rest():
    nodes = tuple(ClusterNode(f"{i:02d}aaaaaaaa", f"10.0.1.{i}", True, 64.0, 8.0) for i in range(9))
    busy = nodes[7].node_id
    slots = {"a1": JudgeSlot("running", time.time(), busy, "10.0.1.7", ("3",))}
    lines = [line.plain for line in cluster_lines(ClusterView("h:6379", nodes, {}, slots))]
    assert lines[1] == "  07aaaaaa 10.0.1.7 8 GPU · gpu3 a1"
    assert len(lines) == 1 + 4 + 1 and lines[-1] == "  … 5 more nodes, 40 GPUs"
