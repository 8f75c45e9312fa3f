"""Judges that share a GPU or a process: on one GPU they take turns (a judge waits while another
holds the GPU and says so; two judges given one turn file never run their candidates at the same
time; a GPU has one turn file however it is named), and in one process a judge's cleanup spares
what other threads started."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from qrsup.kernels.judge.device_turns import turn_file
from qrsup.kernels.judge.environment import judged_environment
from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.schema import ProgressUpdate

from tests.conftest import CANDIDATES, judge

# A slow candidate that prints when each of its calls ran (it can write no file of ours), so
# overlapping calls of two judges show.
CALL_LOGGER = """
import json, time
import torch

def custom_kernel(a):
    start = time.time()
    time.sleep(0.05)
    out = torch.geqrf(a)
    print("CALL=" + json.dumps([start, time.time()]), flush=True)
    return out
"""


def judge_taking_turns(path: Path, turns: Path) -> JudgeReport:
    return judge(path, "all", device_turns=turns)


def test_a_judge_waits_for_its_turn_and_says_so(tmp_path: Path) -> None:
    turns = tmp_path / "gpus" / "cuda-0.turns"
    held, judge_waits = threading.Event(), threading.Event()

    def neighbour() -> None:
        with file_lock(turns):
            held.set()
            judge_waits.wait(timeout=60)
            judge_waits.clear()
            judge_waits.wait(timeout=1.0)  # keeps the turn one more second, then gives it up

    def note(frame: ProgressUpdate) -> None:
        frames.append(frame)
        if frame.phase == "waiting for the CPU":
            judge_waits.set()

    thread = threading.Thread(target=neighbour)
    thread.start()
    held.wait()
    frames: list[ProgressUpdate] = []
    report = judge(CANDIDATES / "torch_geqrf.py", "all", note, device_turns=turns)
    thread.join()
    assert report.passed, report.reason
    assert report.phases_s["device_wait"] >= 0.9
    waits = [f for f in frames if f.phase == "waiting for the CPU"]
    assert waits and frames.index(waits[0]) < frames.index(
        next(f for f in frames if f.phase == "calibrate")
    )


@pytest.mark.e2e  # two whole judge runs, one after the other: over 9 s here
def test_two_judges_with_one_turn_file_never_overlap(tmp_path: Path) -> None:
    turns = tmp_path / "cuda-0.turns"
    candidates = []
    for i in range(2):
        candidate = tmp_path / f"candidate{i}.py"
        candidate.write_text(CALL_LOGGER)
        candidates.append(candidate)
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(lambda c: judge_taking_turns(c, turns), candidates))
    assert all(r.passed for r in reports), [r.reason for r in reports]
    calls = [
        [json.loads(line[5:]) for line in r.candidate_output.splitlines() if line[:5] == "CALL="]
        for r in reports
    ]
    assert calls[0] and calls[1]
    assert max(r.phases_s["device_wait"] for r in reports) > 2.0  # the later one waited its turn
    overlapping = [(a, b) for a in calls[0] for b in calls[1] if a[0] < b[1] and b[0] < a[1]]
    assert overlapping == []


def test_a_judge_spares_a_process_another_thread_started_meanwhile(tmp_path: Path) -> None:
    """A TUI runs a promotion's judge while the person restarts an agent: the agent lives on."""
    started: list[subprocess.Popen] = []

    def start_agent(frame: ProgressUpdate) -> None:
        if frame.phase == "load" and not started:
            started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))

    report = judge(CANDIDATES / "torch_geqrf.py", "test", start_agent)
    try:
        assert report.passed, report.reason
        assert started and started[0].poll() is None
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_a_gpu_has_one_turn_file_whoever_names_it_and_the_cpu_one_for_the_machine() -> None:
    assert turn_file("cpu", {}).name == "cpu.turns"
    assert turn_file("cpu", {"CUDA_VISIBLE_DEVICES": "1"}) == turn_file("cpu", {})
    plain = turn_file("cuda:1", {})
    assert plain.name == "1.turns" and plain != turn_file("cpu", {})
    assert turn_file("cuda:0", {"CUDA_VISIBLE_DEVICES": "1,3"}) == plain  # the same GPU
    assert turn_file("cuda", {"CUDA_VISIBLE_DEVICES": "GPU-ab12"}).name == "GPU-ab12.turns"
    assert (
        judged_environment({"CUDA_VISIBLE_DEVICES": "2,3"}, "cuda:1")["CUDA_VISIBLE_DEVICES"] == "3"
    )
    assert judged_environment({}, "cuda:1")["CUDA_VISIBLE_DEVICES"] == "1"
