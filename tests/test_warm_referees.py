"""A referee started ahead of its run (warm) judges exactly as one started for it: cheaters get
the same verdicts, a referee on another boundary is never used, and each judges one candidate."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
from qrsup.agents.judge_executor import session_executor
from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.kernels.executors import base
from qrsup.kernels.executors.base import LocalExecutor
from qrsup.kernels.judge.referee_process import RefereeProcess
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.runner import JudgeConfig, run_judge

from tests.conftest import CANDIDATES, CHEATERS, tiny_config
from tests.loop_helpers import wait_for
from tests.test_judge_isolation import JUDGE_CODE, _assert_nothing_worked, _with_targets, _workspace

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def _loaded(referee: RefereeProcess) -> bool:
    """Its contestant is up and idle: torch loaded, waiting for the candidate. (The sandbox's
    launcher names the contestant's module too, in its policy argument.)"""
    for process in psutil.Process(referee.pid).children(recursive=True):
        try:
            if "qrsup.kernels.judge.contestant" in process.cmdline()[1:3]:
                return process.status() == psutil.STATUS_SLEEPING and process.cpu_percent(0.3) < 5
        except psutil.Error:
            return False
    return False


def _warm_judge(path: Path, config: JudgeConfig) -> JudgeReport:
    referee = RefereeProcess(config.contestant_launch())
    wait_for(lambda: _loaded(referee), 60, "the warm referee's contestant to load")
    report = JudgeReport.from_dict(run_judge(path, config, warm=referee))
    assert report.phases_s["started_ahead"] > 0  # it was this referee that judged
    return report


def test_a_warm_referee_judges_an_honest_candidate_and_ends_with_its_run():
    config = tiny_config("all")
    referee = RefereeProcess(config.contestant_launch())
    wait_for(lambda: _loaded(referee), 60, "the warm referee's contestant to load")
    report = JudgeReport.from_dict(run_judge(CANDIDATES / "blocked_wy.py", config, warm=referee))
    assert report.verdict == "pass", report.reason
    assert report.phases_s["started_ahead"] > 0
    # Calibration's split: its cycles account for the phase, and the contestant was waiting.
    split = report.calibration["split_s"]
    exchanges = split["prepare"] + split["go"] + split["inspect"] + split["referee"]
    assert split["cycles"] >= 9 and 0 < exchanges <= report.phases_s["calibrate"]
    assert split["hello"] < 0.5
    assert report.isolation["complete"] == (os.geteuid() == 0)
    assert not referee.ready_for(config.contestant_launch())  # one candidate, never another
    assert not referee.work_dir.exists()


@pytest.mark.parametrize(
    ("cheater", "mode", "overrides"),
    [
        # One cheat a mode here; the rest, each judged cold in test_judge_cheaters.py, with -m e2e.
        ("returns_input.py", "test", {}),
        pytest.param("fake_report.py", "test", {}, marks=pytest.mark.e2e),
        pytest.param("forges_reply.py", "bench", {}, marks=pytest.mark.e2e),
        ("patches_timer.py", "bench", {}),
        pytest.param("kills_referee.py", "test", {}, marks=pytest.mark.e2e),
        pytest.param("caches_by_address.py", "bench", {"recheck": "all"}, marks=pytest.mark.e2e),
    ],
)
def test_cheaters_fail_under_a_warm_referee_as_under_a_cold_one(cheater, mode, overrides):
    report = _warm_judge(CHEATERS / cheater, tiny_config(mode, **overrides))
    assert report.verdict == "fail", report.reason


@pytest.mark.skipif(os.geteuid() != 0, reason="the root case needs root")
def test_a_warm_contestant_reaches_nothing_of_the_judge(tmp_path):
    """Started before its candidate existed, the contestant still has the whole boundary."""
    files = _workspace(tmp_path / "workspace")
    targets = {"runner": os.getpid(), "append": [str(p) for p in files]}
    targets["open"] = [str(p) for p in JUDGE_CODE]
    cheater = _with_targets("probes_the_judge.py", targets, tmp_path)
    report = _warm_judge(cheater, tiny_config())
    _assert_nothing_worked(report, files)
    assert report.isolation["complete"], report.isolation


def test_a_warm_referee_on_another_boundary_is_ended_and_a_fresh_one_judges(tmp_path):
    warm = RefereeProcess(tiny_config(triton_cache=tmp_path / "a").contestant_launch())
    config = tiny_config(triton_cache=tmp_path / "b")
    assert not warm.ready_for(config.contestant_launch())
    report = JudgeReport.from_dict(run_judge(CANDIDATES / "blocked_wy.py", config, warm=warm))
    assert report.verdict == "pass", report.reason
    assert report.phases_s["started_ahead"] == 0.0
    assert not warm.work_dir.exists()


def test_a_rejected_candidate_ends_the_warm_referee_it_was_given(tmp_path):
    config = tiny_config()
    warm = RefereeProcess(config.contestant_launch())
    bad = tmp_path / "bad.py"
    bad.write_text("def custom_kernel(a):\n    return (\n")
    report = JudgeReport.from_dict(run_judge(bad, config, warm=warm))
    assert report.verdict == "rejected"
    assert not warm.work_dir.exists()


@pytest.mark.e2e  # two whole judge runs and a referee started ahead: over 7 s here
def test_an_agent_executor_starts_each_next_referee_ahead_and_ends_the_last_on_close():
    executor = LocalExecutor(warm=True)
    config = tiny_config()
    try:
        first = executor.evaluate(CANDIDATES / "blocked_wy.py", config)
        waiting = executor.next_referee
        assert waiting is not None
        wait_for(lambda: _loaded(waiting), 60, "the next referee's contestant to load")
        second = executor.evaluate(CANDIDATES / "blocked_wy.py", config)
    finally:
        executor.close()
    assert (first.verdict, second.verdict) == ("pass", "pass"), (first.reason, second.reason)
    assert first.phases_s["started_ahead"] == 0.0 and second.phases_s["started_ahead"] > 0
    assert not waiting.work_dir.exists() and executor.next_referee is None


class _StartedReferee:
    """Stands in for a referee process: only the order of starts, uses and closes is asked."""

    def __init__(self, journal: list[str]) -> None:
        self.number = sum(entry.startswith("start") for entry in journal) + 1
        self.journal = journal
        journal.append(f"start {self.number}")

    def close(self) -> None:
        self.journal.append(f"close {self.number}")


def _journal_of_three_runs(monkeypatch, executor: LocalExecutor) -> list[str]:
    """What a warm executor starts, uses and closes over three GPU runs and its close."""
    journal: list[str] = []
    monkeypatch.setattr(base, "RefereeProcess", lambda launch: _StartedReferee(journal))

    def judged(candidate, config, on_progress, extra, keep, warm):
        journal.append(f"judge with {warm.number if warm else 'a fresh one'}")
        return {}

    monkeypatch.setattr(base, "run_judge", judged)
    config = tiny_config(device="cuda")
    for _ in range(3):
        executor.run_judge(CANDIDATES / "blocked_wy.py", config)
        assert executor.referees_ahead == executor.gpu_ahead
    executor.close()
    assert executor.referees_ahead == 0
    return journal


def test_on_a_gpu_the_executor_keeps_two_referees_starting_ahead(monkeypatch):
    executor = LocalExecutor(warm=True)
    assert executor.gpu_ahead == base.GPU_REFEREES_AHEAD == 2
    assert _journal_of_three_runs(monkeypatch, executor) == [
        "start 1",
        "start 2",
        "judge with a fresh one",
        "start 3",
        "judge with 1",
        "start 4",
        "judge with 2",
        "close 3",
        "close 4",
    ]


def test_agents_sharing_a_gpu_keep_one_referee_ahead_each(monkeypatch, tmp_path):
    """Each waiting referee holds a CUDA context and its pinned export area: agents that take
    turns on a GPU keep one ahead, and an agent alone on its GPU two."""
    paths = RunPaths(tmp_path / "run")
    shared = SessionConfig(name="s", workspace=tmp_path, agents_per_gpu=3)
    executor = session_executor(paths, shared, "a1", warm=True)
    assert isinstance(executor, LocalExecutor) and executor.gpu_ahead == 1
    alone = session_executor(paths, SessionConfig(name="s", workspace=tmp_path), "a1", warm=True)
    assert isinstance(alone, LocalExecutor) and alone.gpu_ahead == base.GPU_REFEREES_AHEAD
    assert _journal_of_three_runs(monkeypatch, executor) == [
        "start 1",
        "judge with a fresh one",
        "start 2",
        "judge with 1",
        "start 3",
        "judge with 2",
        "close 3",
    ]
    with pytest.raises(ValueError, match="at least 1"):
        LocalExecutor(warm=True, gpu_ahead=0)


@pytest.mark.gpu
def test_on_a_gpu_the_next_referee_loads_while_this_run_is_timed():
    executor = LocalExecutor(warm=True)
    config = tiny_config("all", device="cuda")
    during: list[int] = []
    try:
        first = executor.evaluate(
            CANDIDATES / "blocked_wy.py", config, lambda _: during.append(executor.referees_ahead)
        )
        second = executor.evaluate(CANDIDATES / "blocked_wy.py", config)
    finally:
        executor.close()
    assert (first.verdict, second.verdict) == ("pass", "pass"), (first.reason, second.reason)
    assert during and set(during) == {2}  # started as the first run began, not after it
    assert first.phases_s["started_ahead"] == 0.0 and second.phases_s["started_ahead"] > 0
