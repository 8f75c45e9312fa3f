"""Process hygiene for the judge: reaping escaped descendants, hiding memory, killing trees."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess

import psutil
from qrsup.kernels.judge import linux


def _prctl(option: int, value: int) -> bool:
    try:
        linux.prctl(option, value)
    except OSError:
        return False
    return True


def become_subreaper() -> bool:
    """Orphans of our descendants re-parent to us, so a double-forked escapee is still found."""
    return _prctl(linux.PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent: int) -> None:
    """SIGKILL as soon as the parent that started us (pid `parent`) is gone, so no judge process
    outlives the agent or person that asked for the judgement; if it is gone already, go now."""
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


@functools.cache
def forks_die_with_parent() -> None:
    """From now on, each child this process forks asks for SIGKILL at its parent's death as the
    fork returns, before any code of its own runs. A pool worker stopped in its first moments
    (an agent holds its compile while the judge times) never reached its initializer's
    die_with_parent, and outlived its parent for good."""
    os.register_at_fork(
        after_in_child=functools.partial(linux.prctl, linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    )


def make_undumpable() -> bool:
    """Other processes of our user can no longer read our memory or open our fds via /proc."""
    return _prctl(linux.PR_SET_DUMPABLE, 0)


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def marked_children(name: str, value: str) -> list[psutil.Process]:
    """Our children whose environment holds `name=value`: one judge run's orphans, re-parented to
    us, and not the children other threads of this process started meanwhile (a TUI's agents)."""
    found = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.environ().get(name) == value:
                found.append(child)
    return found


def kill_processes(processes: list[psutil.Process]) -> None:
    """SIGKILL each process and its process group (never our own group), then reap them."""
    own_group = os.getpgrp()
    for proc in processes:
        try:
            group = os.getpgid(proc.pid)
        except ProcessLookupError:
            continue
        if group != own_group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(processes, timeout=5)


def communicate_or_kill(child: subprocess.Popen, timeout_s: float) -> tuple[str | bytes, bool]:
    """The child's output, and whether it overran `timeout_s`, in which case it and everything
    it started were killed first (start it in a session of its own)."""
    try:
        return child.communicate(timeout=timeout_s)[0], False
    except subprocess.TimeoutExpired:
        kill_tree(child.pid)
        return child.communicate()[0], True


def kill_child_tree(child: subprocess.Popen) -> None:
    """`kill_tree` for a child of ours, unless it was reaped already: its pid may then be another
    process's (pids come round within seconds where pid_max is 32768), which would die instead."""
    if child.returncode is None:
        kill_tree(child.pid)


def kill_tree(pid: int) -> None:
    """Kill a process, every descendant, and their process groups."""
    try:
        root = [psutil.Process(pid)]
    except psutil.NoSuchProcess:
        root = []
    kill_processes(descendants(pid) + root)


def schedstat(pid: int | None = None) -> tuple[int, int]:
    """(time on a CPU, time runnable but waiting for a CPU) of a thread, in ns, as the kernel
    counts them: `pid` names a process's main thread; None, the calling thread. Zeros where the
    kernel does not keep them."""
    return schedstat_of(f"/proc/{pid}/schedstat" if pid else "/proc/thread-self/schedstat")


def schedstat_of(path: str) -> tuple[int, int]:
    try:
        ran, waited = (_read(path) or "").split()[:2]
        return int(ran), int(waited)
    except ValueError:
        return 0, 0


class ThreadTimes:
    """Time on a CPU of a process's threads other than its main one, in ns (schedstat's clock,
    finer than the tick-counted CPU times), with each thread's file kept open between readings.

    The referee reads them four times a repetition. Opened anew each time, 61 threads' files
    cost 0.63 ms a reading (a GPU contestant has about that many; the referee's bookkeeping
    was 1.1 to 1.4 ms a repetition on an H200); read again through open descriptors, 0.09 ms.
    At most KEPT_OPEN stay open, so a contestant with thousands of threads costs the referee
    opens, never its descriptors."""

    KEPT_OPEN = 256

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._open: dict[str, int] = {}

    def other_threads_ran_ns(self) -> int:
        try:
            tasks = [task for task in os.listdir(f"/proc/{self.pid}/task") if task != str(self.pid)]
        except OSError:
            return 0
        gone = set(self._open) - set(tasks)
        for task in gone:
            os.close(self._open.pop(task))
        return sum(self.task_ran_ns(task) for task in tasks)

    def task_ran_ns(self, task: str) -> int:
        """One thread's time on a CPU so far, by its kernel id; 0 once it has ended."""
        fd = self._open.get(task)
        if fd is not None:
            try:
                return _ran_of(os.pread(fd, 128, 0))
            except OSError:  # that thread ended and another took its id: open the new one's
                os.close(self._open.pop(task))
        path = f"/proc/{self.pid}/task/{task}/schedstat"
        if len(self._open) >= self.KEPT_OPEN:
            return schedstat_of(path)[0]
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return 0  # the thread ended between the listing and the read
        self._open[task] = fd
        try:
            return _ran_of(os.pread(fd, 128, 0))
        except OSError:
            return 0

    def close(self) -> None:
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()


def _ran_of(schedstat_text: bytes) -> int:
    fields = schedstat_text.split()
    return int(fields[0]) if fields else 0


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants.

    The referee asks every 50 ms while it waits for a reply, in the timed window too, so this
    must be cheap: through each task's `children` file it walks the tree alone, where psutil
    scans every process on the host. On an H200 that scan held the referee for about 3 ms just
    as a 2×4096 window's reply arrived (the window's 50.8 ms met the tick), and an honest spec
    failed the window's accounting."""
    pids = tree_pids(pid)
    if pids is None:
        return _psutil_tree_rss_bytes(pid)
    page = os.sysconf("SC_PAGE_SIZE")
    statms = (_read(f"/proc/{member}/statm") for member in pids)
    return sum(int(statm.split()[1]) * page for statm in statms if statm)


def tree_pids(pid: int) -> list[int] | None:
    """`pid` and its descendants from `/proc/PID/task/TID/children`, or None where the kernel
    has no such files (built without CONFIG_PROC_CHILDREN)."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None if os.path.exists(f"/proc/{pid}") else []
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{current}/task"):
                children = _read(f"/proc/{current}/task/{task}/children") or ""
                pending.extend(int(child) for child in children.split())
    return found


def _read(path: str) -> str | None:
    """A small /proc file's text, or None once its process or task is gone."""
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return None


def _psutil_tree_rss_bytes(pid: int) -> int:
    total = 0
    try:
        procs = [psutil.Process(pid), *descendants(pid)]
    except psutil.NoSuchProcess:
        return 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total
