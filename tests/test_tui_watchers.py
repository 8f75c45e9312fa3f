"""The TUI's readers without a screen: log tails, the board, diffs, GPU and process figures."""

from __future__ import annotations

import queue
import subprocess
import sys
import time
from types import SimpleNamespace

import psutil
import pynvml
import pytest
from qrsup.agents.heartbeat import Beat, write_beat
from qrsup.agents.records import append_event
from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict
from qrsup.supervisor.board import BoardReader, read_diff
from qrsup.supervisor.gpu_stats import GpuReport, GpuSample, GpuStats
from qrsup.supervisor.leases import GpuLeases
from qrsup.supervisor.messages import (
    AdvisorIdeas,
    AgentCrashed,
    AgentsSampled,
    BoardRead,
    GoalMet,
    LogRead,
    NewBest,
)
from qrsup.supervisor.process_stats import ProcessStats, TreeLoad
from qrsup.supervisor.watchers import FleetSampler, LogFollower, RunWatcher
from qrsup.supervisor.widgets.format import figure_cell
from qrsup.supervisor.widgets.leaderboard import shown_geomean
from qrsup.supervisor.widgets.stats_panel import stats_text

from tests.loop_helpers import wait_for
from tests.tui_sessions import T0, add_full_pass, frozen_session


def test_log_follower_holds_only_the_tail_of_a_huge_log(tmp_path):
    log = tmp_path / "agent.log"
    line = "x" * 99 + "\n"
    log.write_text(line * 100_000)  # 10 MB
    follower = LogFollower("a1", log, max_bytes=64 * 1024)
    lines = follower.open_tail()
    assert sum(len(text) + 1 for text in lines) <= 64 * 1024
    assert lines and all(text == "x" * 99 for text in lines)
    assert follower.offset == log.stat().st_size


def test_log_follower_skips_ahead_when_a_burst_outgrows_its_window(tmp_path):
    log = tmp_path / "agent.log"
    log.write_text("first\n")
    follower = LogFollower("a1", log, max_bytes=1024)
    assert follower.open_tail() == ["first"]
    with log.open("a") as handle:
        handle.write("".join(f"line {i}\n" for i in range(1000)))
    lines, skipped = follower.read_new()
    assert skipped
    assert lines[-1] == "line 999"
    assert sum(len(text) + 1 for text in lines) <= 1024


def test_log_follower_waits_for_a_torn_last_line(tmp_path):
    log = tmp_path / "agent.log"
    log.write_text("")
    follower = LogFollower("a1", log)
    follower.open_tail()
    with log.open("a") as handle:
        handle.write("whole\nhal")
    assert follower.read_new() == (["whole"], False)
    with log.open("a") as handle:
        handle.write("f\n")
    assert follower.read_new() == (["half"], False)


def test_board_reader_reads_only_iterations_recorded_since_its_last_read(tmp_path, monkeypatch):
    paths = frozen_session(tmp_path)
    reader = BoardReader(paths.store, ("a", "b"))
    first = reader.read()
    assert {e.id for e in first.entries} >= {"c-incumbent", "c-1a2b3c4d5e", "c-3c4d5e6f7a"}
    assert first.incumbent_commit == "0123456789abcdef"
    assert dict((role, cid) for role, cid, _ in first.beam)["exploit"] == "c-1a2b3c4d5e"
    monkeypatch.setattr(Store, "candidates", lambda self: pytest.fail("read every candidate"))
    row = Candidate("c-new", "hash-new", "x = 1\n", "c-1a2b3c4d5e", "a2", "near-miss",
                       "blocked_wy", "faster", None, T0 + 900)  # fmt: skip
    add_full_pass(paths, row, 9, 1000.0, "beam near-miss")
    second = reader.read()
    reader.close()
    assert second.best() is not None and second.best().id == "c-new"
    assert second.best_over_time()[-1] == 1000.0
    assert second.best_over_time() == sorted(second.best_over_time(), reverse=True)


def test_board_shows_a_candidate_that_failed_its_re_timing_as_failed(tmp_path):
    paths = frozen_session(tmp_path)
    row = Candidate("c-lucky", "hash-lucky", "x = 2\n", "c-incumbent", "a1", "exploit",
                       "blocked_wy", "faster", None, T0 + 900)  # fmt: skip
    add_full_pass(paths, row, 9, 1000.0, "rejected", outcome="fail")
    reader = BoardReader(paths.store, ("a", "b"))
    board = reader.read()
    reader.close()
    entry = next(e for e in board.entries if e.id == "c-lucky")
    assert (entry.verdict, entry.decision) == ("fail", "rejected")
    assert board.best() is not None and board.best().id != "c-lucky"


def test_a_quick_only_candidate_shows_its_quick_figure_marked_quick_and_is_never_the_best(
    tmp_path,
):
    paths = frozen_session(tmp_path)
    row = Candidate("c-quick", "hash-quick", "x = 3\n", "c-incumbent", "a1", "exploit",
                    "blocked_wy", "slower", None, T0 + 900)  # fmt: skip
    with Store(paths.store) as store:
        store.add_candidate(row)
        for geomean_ns in (900.0, 700.0):  # the best quick figure is shown
            report = {"verdict": "pass", "geomean_ns": geomean_ns, "reason": ""}
            store.add_evaluation(row.id, "a1", 9, "quick", report, {0: geomean_ns})
        failed = {"verdict": "fail", "geomean_ns": 10.0, "reason": "integrity"}
        store.add_evaluation(row.id, "a1", 9, "quick", failed, {0: 10.0})
        store.record_iteration(Iteration("a1", 9, Verdict.PASS, Decision.NOT_PROMISING, row.id))
    reader = BoardReader(paths.store, ("a", "b"))
    board = reader.read()
    reader.close()
    entry = next(e for e in board.entries if e.id == "c-quick")
    assert (entry.geomean_ns, entry.quick_geomean_ns) == (None, 700.0)
    assert figure_cell(entry.geomean_ns, entry.quick_geomean_ns).plain == "0.0007 q"
    assert board.best() is not None and board.best().id != "c-quick"
    full = next(e for e in board.entries if e.geomean_ns is not None)
    assert figure_cell(full.geomean_ns, full.quick_geomean_ns).plain.endswith("q") is False
    assert shown_geomean(entry) == 700.0 < shown_geomean(full)  # sorted by the figure shown


def test_read_diff_shows_the_change_against_the_parent(tmp_path):
    paths = frozen_session(tmp_path)
    diff = read_diff(paths.store, "c-1a2b3c4d5e")
    assert diff.parent_id == "c-incumbent"
    assert "-PANEL = 16" in diff.diff and "+PANEL = 24" in diff.diff
    assert read_diff(paths.store, "c-missing").diff == ""


@pytest.mark.parametrize(
    ("error", "note"),
    [
        (pynvml.NVMLError_LibraryNotFound, "no NVIDIA GPU on this machine"),
        (pynvml.NVMLError_DriverNotLoaded, "no NVIDIA GPU on this machine"),
        (pynvml.NVMLError_NoPermission, "no GPU stats: Insufficient Permissions"),
    ],
)
def test_gpu_stats_on_a_machine_without_a_gpu_say_so_plainly(error, note):
    def failing_init() -> None:
        raise error()

    fake = SimpleNamespace(
        NVMLError=pynvml.NVMLError,
        NVML_ERROR_LIBRARY_NOT_FOUND=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND,
        NVML_ERROR_DRIVER_NOT_LOADED=pynvml.NVML_ERROR_DRIVER_NOT_LOADED,
        nvmlInit=failing_init,
    )
    report = GpuStats(fake).sample()  # type: ignore[arg-type]
    assert (report.gpus, report.note) == ((), note)


def test_gpu_stats_name_the_agents_whose_process_trees_use_each_gpu():
    handle = object()
    fake = SimpleNamespace(
        NVMLError=RuntimeError,
        NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda index: handle,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=2**30, total=140 * 2**30),
        nvmlDeviceGetComputeRunningProcesses=lambda h: [SimpleNamespace(pid=4242)],
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=87),
        nvmlDeviceGetTemperature=lambda h, sensor: 61,
        nvmlDeviceGetPowerUsage=lambda h: 412_000,
    )
    stats = GpuStats(fake)  # type: ignore[arg-type]
    (gpu,) = stats.sample().gpus
    stats.close()
    assert (gpu.name, gpu.utilization_pct, gpu.temperature_c, gpu.power_w) == (
        "NVIDIA H200",
        87,
        61,
        412.0,
    )
    trees = {"a1": frozenset({100, 4242}), "a2": frozenset({200})}
    assert gpu.holders(trees) == ("a1",)


def test_stats_show_each_gpus_lease_and_flag_a_process_on_a_gpu_it_does_not_lease():
    def gpu(index: int, pids: set[int]) -> GpuSample:
        return GpuSample(index, "NVIDIA H200", 50, 2**30, 140 * 2**30, 60, 400.0, frozenset(pids))

    loads = {"a1": TreeLoad(frozenset({100}), 98.0, 2**28), "a2": TreeLoad(frozenset({200}), 0, 0)}
    report = GpuReport((gpu(0, {100}), gpu(1, set()), gpu(2, {200}), gpu(3, set())))
    lines = stats_text(report, loads, {0: ["a1"], 1: ["a2"]}).plain.splitlines()
    assert lines[0].endswith("· held by a1")
    assert lines[1].endswith("· held by a2")  # leased, its judge not running right now
    assert lines[2].endswith("· leased to nobody, used by a2")
    assert lines[3].endswith("· free")
    assert lines[4].startswith("a1 98% 256M")


def test_process_stats_sum_an_agent_tree_and_report_a_dead_one_empty():
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"]
    )  # fmt: skip
    try:
        wait_for(lambda: psutil.Process(parent.pid).children(), 10, "the grandchild")
        stats = ProcessStats()
        loads = stats.sample({"a1": parent.pid, "gone": None})
        assert len(loads["a1"].pids) == 2
        assert loads["a1"].rss_bytes > 0
        assert loads["gone"].pids == frozenset()
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait()


def _collect() -> tuple[queue.Queue, object]:
    posted: queue.Queue = queue.Queue()
    return posted, posted.put


def _next(posted: queue.Queue, kind: type, timeout_s: float = 10.0, where=lambda m: True):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            message = posted.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if isinstance(message, kind) and where(message):
            return message
    raise AssertionError(f"no {kind.__name__} within {timeout_s} s")


def test_run_watcher_sends_the_followed_log_and_the_records_an_agent_beats_after(tmp_path):
    paths = frozen_session(tmp_path)
    posted, post = _collect()
    watcher = RunWatcher(paths, post, ("a", "b"), on_heartbeat=lambda: None, interval_s=0.05)
    watcher.start()
    try:
        board = _next(posted, BoardRead)
        assert board.board.incumbent_id == "c-incumbent"
        watcher.follow("a2")
        opened = _next(posted, LogRead, where=lambda m: m.fresh)
        assert opened.agent == "a2" and opened.lines[-1].text.endswith("panel 232")
        with paths.agent_log("a1").open("a") as handle:
            handle.write("not followed\n")
        with paths.agent_log("a2").open("a") as handle:
            handle.write("followed 1\nfollowed 2\n")
        grown = _next(posted, LogRead)
        assert (grown.agent, grown.fresh) == ("a2", False)
        assert [line.text for line in grown.lines] == ["followed 1", "followed 2"]
        append_event(paths.events("a3"), {"event": "goal_met", "goal": "g", "candidate_id": "c"})
        write_beat(paths.heartbeat("a3"), Beat(0, "goal met", 3, time.time()))  # as agents do
        assert _next(posted, GoalMet).agent == "a3"
        append_event(paths.events("a1"), {"event": "advisor", "source": "playbook", "ideas": ["i"]})
        write_beat(paths.heartbeat("a1"), Beat(0, "idle", 3, time.time()))
        assert _next(posted, AdvisorIdeas).ideas == ("i",)
        row = Candidate("c-fast", "hash-fast", "y = 2\n", "c-incumbent", "a1", "exploit",
                           "blocked_wy", "fast", None, T0 + 999)  # fmt: skip
        add_full_pass(paths, row, 7, 10.0, "beam exploit")
        best = _next(posted, NewBest)
        assert best.entry.id == "c-fast" and best.previous_ns is not None
    finally:
        watcher.stop()


def test_fleet_sampler_reports_an_agent_that_died_without_saying_so_once(tmp_path):
    paths = frozen_session(tmp_path)
    fake_agent = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "qrsup.agents.agent_main", "a1"]
    )
    paths.pid_file("a1").write_text(str(fake_agent.pid))
    write_beat(paths.heartbeat("a1"), Beat(fake_agent.pid, "evaluating", 2, time.time()))
    assert GpuLeases(paths.root, [0, 1]).acquire("a1", fake_agent.pid) == 0
    posted, post = _collect()
    sampler = FleetSampler(paths, post, interval_s=0.2, min_gap_s=0.05)
    sampler.start()
    try:
        first = _next(posted, AgentsSampled)
        assert {s.name: s.alive for s in first.statuses}["a1"]
        assert first.loads["a1"].pids == frozenset({fake_agent.pid})
        assert first.leases == {0: ["a1"]}
        fake_agent.kill()
        fake_agent.wait()
        crashed = _next(posted, AgentCrashed)
        assert crashed.agent == "a1"
        assert _next(posted, AgentsSampled).leases == {}  # a dead holder's GPU is free
        _next(posted, AgentsSampled)
        assert not any(isinstance(m, AgentCrashed) for m in list(posted.queue))
    finally:
        sampler.stop()
        if fake_agent.poll() is None:
            fake_agent.kill()
