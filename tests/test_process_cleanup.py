"""Killing a judge process's tree by its pid is safe only while that pid is still ours: once the
child is reaped, the pid may already belong to another process (pid_max is 32768 on many
machines), and a clean-up that killed it would take a stranger and its process group down."""

from __future__ import annotations

import subprocess
import sys

import psutil
from qrsup.kernels.judge.processes import kill_child_tree

from tests.loop_helpers import wait_for

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_running_child_is_killed_with_its_descendants():
    child = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess; subprocess.run({SLEEP!r})"],
        start_new_session=True,
    )
    try:
        grandchildren = wait_for(
            lambda: psutil.Process(child.pid).children(recursive=True), 30, "the grandchild"
        )
        kill_child_tree(child)
        child.wait(timeout=10)  # it is gone (kill_tree reaps it, so its status reads 0)
        _, alive = psutil.wait_procs(grandchildren, timeout=10)
        assert not alive
    finally:
        child.kill()
        child.wait()


def test_a_reaped_child_is_not_killed_by_a_pid_that_may_be_reused(monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    # Stands in for the stranger that holds the pid now: a live process, killed only if asked.
    stranger = subprocess.Popen(SLEEP, start_new_session=True)
    try:
        monkeypatch.setattr(child, "pid", stranger.pid)
        kill_child_tree(child)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_a_child_stopped_as_it_is_forked_still_dies_with_its_parent():
    """A fork's first own step stops it, before any initializer could ask to die with the
    parent; the hook registered by forks_die_with_parent asked already."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, signal, time\n"
            "from qrsup.kernels.judge.processes import forks_die_with_parent\n"
            "forks_die_with_parent()\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    os.kill(os.getpid(), signal.SIGSTOP)\n"
            "    os._exit(0)\n"
            "print(child, flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        wait_for(lambda: child.status() == psutil.STATUS_STOPPED, 30, "the child to stop")
        parent.kill()
        parent.wait()
        _, alive = psutil.wait_procs([child], timeout=10)
        assert not alive
    finally:
        parent.kill()
        parent.wait()
