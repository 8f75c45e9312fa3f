"""The referee's memory watch over the contestant's tree: every descendant counted, and cheap,
since it runs in the timed window while the referee waits for a reply."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
from qrsup.kernels.judge.contestant_launch import ContestantLaunch
from qrsup.kernels.judge.contestant_process import ContestantProcess
from qrsup.kernels.judge.processes import tree_pids, tree_rss_bytes
from qrsup.kernels.judge.sandbox import IsolationSettings

from tests.loop_helpers import wait_for

HOLDS_64_MIB = "import time; x = bytearray(64 << 20); time.sleep(60)"


def test_a_grandchilds_memory_counts_and_the_walk_sees_only_the_tree():
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys; subprocess.run([sys.executable, '-c', {HOLDS_64_MIB!r}])",
        ]
    )
    try:
        grandchild = wait_for(lambda: psutil.Process(child.pid).children(), 30, "the grandchild")[0]
        wait_for(lambda: grandchild.memory_info().rss > 64 << 20, 30, "its 64 MiB")
        assert sorted(tree_pids(child.pid)) == sorted([child.pid, grandchild.pid])
        by_psutil = sum(p.memory_info().rss for p in (psutil.Process(child.pid), grandchild))
        assert abs(tree_rss_bytes(child.pid) - by_psutil) < 4 << 20
        assert tree_rss_bytes(child.pid) > 64 << 20
    finally:
        for proc in psutil.Process(child.pid).children(recursive=True):
            proc.kill()
        child.kill()
        child.wait(timeout=10)


def test_a_gone_process_holds_nothing():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    time.sleep(0.1)
    assert tree_pids(done.pid) == []
    assert tree_rss_bytes(done.pid) == 0


def test_the_watch_sees_a_contestant_behind_its_namespaces(tmp_path):
    """The contestant runs in its own pid namespace; its tree, as the referee walks it, is the
    launcher and the contestant, and holds what psutil's scan finds (torch loaded: MiBs)."""
    launch = ContestantLaunch("cpu", tmp_path, 8 << 30, 64 << 20, IsolationSettings())
    contestant = ContestantProcess(launch)
    try:
        contestant.ask({"op": "hello"}, 120, "start")  # torch is loaded once it answers
        pids = tree_pids(contestant.pid)
        assert len(pids) >= 2 and contestant.boundary["pid"] in pids
        by_psutil = sum(psutil.Process(pid).memory_info().rss for pid in pids)
        assert abs(tree_rss_bytes(contestant.pid) - by_psutil) < 4 << 20
        assert by_psutil > 100 << 20
    finally:
        contestant.close()
