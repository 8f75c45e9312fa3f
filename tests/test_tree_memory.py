"""The referee's memory watch over the contestant's tree: every descendant counted, and cheap,
since it runs in the timed window while the referee waits for a reply."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
from qrsup.kernels.judge.processes import tree_pids, tree_rss_bytes

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
