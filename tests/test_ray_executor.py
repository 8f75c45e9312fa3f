"""Judge runs as Ray tasks on a local two-worker cluster: the same report as on this host, with
where it ran; a lost node retried once, then `lost node`; waiting for a cluster that is away;
Ray's errors as one line. Nothing of a run outlives it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from qrsup.kernels.executors.ray_executor import RayExecutor
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.executors.slot import read_slot
from qrsup.kernels.judge.protocol import MAX_LINE_BYTES
from qrsup.kernels.judge.runner import JudgeConfig
from qrsup.kernels.profiling.candidate import profile_candidate
from qrsup.kernels.schema import ProgressUpdate
from qrsup.kernels.suites import SMOKE, Suite

from tests.conftest import CANDIDATES, FAST_TIMEOUTS, TINY
from tests.loop_helpers import wait_for
from tests.ray_cluster import KINDS, session_processes

# Honest factors, two seconds a call: long enough to take its node away in the middle.
SLOW = """
import time

import torch


def custom_kernel(a):
    time.sleep(2.0)
    return torch.geqrf(a)
"""

pytestmark = pytest.mark.timeout(300)


def config(mode: str = "test") -> JudgeConfig:
    return JudgeConfig(
        suite=TINY,
        mode=mode,
        device="cpu",
        rule="quick",
        timeouts=FAST_TIMEOUTS,
        memory_limit_bytes=3 * 2**30,
    )


@pytest.fixture
def make_executor():
    """RayExecutors closed at the end of the test (each keeps a Ray driver between runs)."""
    made: list[RayExecutor] = []

    def make(*args: object, **kwargs: object) -> RayExecutor:
        made.append(RayExecutor(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for executor in made:
        executor.close()


class Notes(list):
    """What the executor wrote to its log."""

    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_a_judge_run_on_a_worker_node_reports_as_on_this_host_and_says_where(ray_cluster, tmp_path):
    frames: list[ProgressUpdate] = []
    slot = tmp_path / "judge.json"
    executor = RayExecutor(lambda: RayTarget(ray_cluster.address), Notes(), slot)
    candidate = CANDIDATES / "blocked_wy.py"
    report = executor.evaluate(candidate, config(), frames.append)
    assert report.verdict == "pass", report.reason
    assert report.candidate == str(candidate)  # the caller's file, not the worker's copy
    assert len(report.specs) == len(TINY.tests)
    assert report.placement["node_id"] in ray_cluster.worker_ids()
    assert report.placement["lost_nodes"] == []
    phases = [frame.phase for frame in frames]
    assert phases[0] == "queued on the cluster" and "test" in phases  # the referee's own frames
    assert read_slot(slot).state == "idle"
    again = executor.evaluate(candidate, config())  # on the driver kept from the first run
    assert again.verdict == "pass"
    assert report.placement["connect_s"] > 0 and again.placement["connect_s"] == 0
    executor.close()
    assert wait_for(lambda: not session_processes(), 30, "the run's processes to end")


def _profile_on_cluster(
    executor: RayExecutor, tmp_path: Path, shipped: str, suite: Suite, spec: int, trace_name: str
) -> Path:
    """Profile a shipped candidate on the cluster, keeping its trace: where the trace landed."""
    candidate = tmp_path / f"c-{Path(shipped).stem}.py"
    candidate.write_text((CANDIDATES / shipped).read_text())
    trace = tmp_path / "profiles" / trace_name
    result = profile_candidate(
        candidate, suite, "cpu", spec, timeouts=FAST_TIMEOUTS, trace_out=trace, executor=executor
    )
    assert result.to_dict().get("figures"), result.to_text()
    return trace


def test_a_profile_on_the_cluster_brings_its_trace_back_by_value(
    ray_cluster, make_executor, tmp_path
):
    executor = make_executor(lambda: RayTarget(ray_cluster.address))
    trace = _profile_on_cluster(executor, tmp_path, "torch_geqrf.py", TINY, 0, "t.json.gz")
    assert trace.is_file() and trace.read_bytes()[:2] == b"\x1f\x8b"  # gzipped, as asked


@pytest.mark.e2e  # a profile of a smoke spec on the cluster: 6 s here
def test_a_trace_larger_than_a_protocol_line_comes_back_in_its_result(
    ray_cluster, make_executor, tmp_path
):
    """A run's result is one line: a profile of the blocked-WY candidate on a smoke spec keeps
    a trace of megabytes, past the protocol's usual cap, which once made its run wait for ever
    for a cluster that was there."""
    executor = make_executor(lambda: RayTarget(ray_cluster.address))
    trace = _profile_on_cluster(executor, tmp_path, "blocked_wy.py", SMOKE, 1, "t.json")
    assert trace.stat().st_size > MAX_LINE_BYTES


@pytest.mark.e2e  # 16 s here: a node's loss and its return
def test_a_node_lost_mid_run_is_retried_once_on_the_other_node(
    ray_cluster, make_executor, tmp_path
):
    """Held to the lost node's kind of GPU, the retry is freed of it (that node may have been
    the last of its kind), and later runs follow the node it ran on."""
    candidate = tmp_path / "slow.py"
    candidate.write_text(SLOW)
    slot = tmp_path / "judge.json"
    notes = Notes()
    executor = make_executor(lambda: RayTarget(ray_cluster.address), notes, slot)
    executor.accelerator_type = KINDS[0]
    reports = []
    run = threading.Thread(target=lambda: reports.append(executor.evaluate(candidate, config())))
    run.start()
    try:
        running = wait_for(lambda: _running(slot), 120, "the run to start on a node")
        assert ray_cluster.kinds[running.node_id] == KINDS[0]
        ray_cluster.remove(running.node_id)
        run.join(240)
        (report,) = reports
        assert report.verdict == "pass", report.reason
        assert report.placement["lost_nodes"] == [running.node_id]
        assert report.placement["node_id"] in ray_cluster.worker_ids()  # the survivor
        (note,) = [line for line in notes if "lost node" in line]
        assert "retrying it once" in note and "\n" not in note
        assert any(f"no longer held to {KINDS[0]} GPUs" in line for line in notes), notes
        assert executor.accelerator_type == KINDS[1] == report.placement["accelerator_type"]
        executor.close()
        assert wait_for(lambda: not session_processes(), 30, "the lost run's judge to be killed")
    finally:
        run.join(240)
        ray_cluster.restore()


def test_a_run_waits_while_the_cluster_is_away_and_goes_ahead_when_it_is_back(
    ray_cluster, make_executor, tmp_path
):
    answers = iter([RayTarget("127.0.0.1:9"), RayTarget("127.0.0.1:9"), None])
    frames: list[ProgressUpdate] = []
    notes = Notes()

    def target() -> RayTarget | None:
        return next(answers, RayTarget(ray_cluster.address))

    executor = make_executor(target, notes, tmp_path / "judge.json", retry_s=0.1)
    report = executor.evaluate(CANDIDATES / "torch_geqrf.py", config(), frames.append)
    assert report.verdict == "pass", report.reason
    waiting = [frame for frame in frames if frame.state == "waiting"]
    assert len(waiting) == 3 and waiting[0].phase == "no Ray cluster"
    # one line per distinct reason, then one when it is back, and where its runs go now; never
    # a traceback
    assert [line.split(":")[0] for line in notes] == [
        "Ray cluster unreachable",
        "Ray cluster unreachable",
        "Ray cluster reachable again; the judge run goes ahead",
        f"judge runs go to {executor.accelerator_type} GPUs from now on, where this one ran",
    ]
    assert "nothing answers at 127.0.0.1:9" in notes[0]
    assert "no local Ray instance" in notes[1]
    assert all("\n" not in line and "Traceback" not in line for line in notes)


def test_a_ray_side_error_is_one_line_in_the_log_and_the_report(
    ray_cluster, make_executor, tmp_path
):
    hidden = tmp_path / "no-ray" / "ray"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('no Ray on this path')\n")
    target = RayTarget(ray_cluster.address, {"PYTHONPATH": str(hidden.parent)})
    notes = Notes()
    report = make_executor(lambda: target, notes).evaluate(CANDIDATES / "torch_geqrf.py", config())
    assert report.verdict == "error"
    assert report.reason == "Ray: Ray is not installed; install the extra: pip install -e '.[ray]'"
    assert notes == ["Ray error: " + report.reason.removeprefix("Ray: ")]


def _running(slot: Path):
    state = read_slot(slot)
    return state if state is not None and state.state == "running" else None


@pytest.mark.e2e  # five judge runs on the cluster: about 20 s here
def test_runs_after_the_first_go_to_the_kind_of_gpu_it_ran_on(ray_cluster, make_executor):
    """On a cluster of mixed GPUs an agent's runs stay on one kind, so that an incumbent timed
    again for a candidate runs where the candidate did. Held to each kind in turn, a run lands
    there; held to a kind no node has, it runs anyway and the executor follows it."""
    notes = Notes()
    executor = make_executor(lambda: RayTarget(ray_cluster.address), notes)
    candidate = CANDIDATES / "blocked_wy.py"
    first = executor.evaluate(candidate, config())
    assert first.verdict == "pass", first.reason
    landed = ray_cluster.kinds[first.placement["node_id"]]
    assert first.placement["accelerator_type"] == landed == executor.accelerator_type
    assert notes == [f"judge runs go to {landed} GPUs from now on, where this one ran"]
    for kind in (*reversed(KINDS), *KINDS):
        executor.accelerator_type = kind
        report = executor.evaluate(candidate, config())
        assert ray_cluster.kinds[report.placement["node_id"]] == kind, report.placement
    executor.accelerator_type = "KIND-GONE"
    report = executor.evaluate(candidate, config())
    assert report.verdict == "pass", report.reason
    assert any("no longer held to KIND-GONE GPUs" in line for line in notes), notes
    assert executor.accelerator_type == ray_cluster.kinds[report.placement["node_id"]]
