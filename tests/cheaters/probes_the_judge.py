"""Cheater: tries every way it knows to reach the judge, prints what worked, returns zeros.

The ways: read the memory, descriptors and environment of the referee (found by walking up its
ancestors) and of the runner (the test names its pid), ptrace-attach to them, stop them with
SIGSTOP, and write to files outside its private work directory (the test names them). A way that
works is undone at once (detach, SIGCONT, nothing written to code files) so a failing test
leaves the machine as it was. With the judge's boundary up, every way fails.
"""

import ctypes
import json
import os
import signal
from pathlib import Path

import torch

TARGETS: dict = {}  # the test writes {"runner": pid, "append": [paths], "open": [paths]} here

PTRACE_ATTACH, PTRACE_DETACH, WAIT_ALL = 16, 17, 0x40000000


def _ancestors() -> list[int]:
    found, pid = [], os.getpid()
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid > 0:
            found.append(pid)
    return found


def _attempt(results: dict, name: str, action) -> None:
    try:
        action()
    except Exception as exc:  # any refusal is what we hope for; record it
        results[name] = f"refused: {type(exc).__name__}"
    else:
        results[name] = "WORKED"


def _read_memory(pid: int) -> None:
    first = Path(f"/proc/{pid}/maps").read_text().splitlines()[0]
    start = int(first.split("-")[0], 16)
    with open(f"/proc/{pid}/mem", "rb") as memory:
        memory.seek(start)
        memory.read(16)


def _read_environment(pid: int) -> None:
    Path(f"/proc/{pid}/environ").read_bytes()


def _reopen_descriptor(pid: int) -> None:
    for name in os.listdir(f"/proc/{pid}/fd"):
        os.close(os.open(f"/proc/{pid}/fd/{name}", os.O_WRONLY | os.O_NONBLOCK))
        return
    raise PermissionError("no descriptor to reopen")


def _ptrace(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
        raise OSError(ctypes.get_errno(), "ptrace")
    os.waitpid(pid, WAIT_ALL)  # the tracee stops; detach lets it run on
    libc.ptrace(PTRACE_DETACH, pid, None, None)


def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    os.kill(pid, signal.SIGCONT)


def _append(path: str) -> None:
    with open(path, "a") as target:
        target.write("written by a candidate\n")


def _open_for_writing(path: str) -> None:
    os.close(os.open(path, os.O_RDWR))


def custom_kernel(a: torch.Tensor):
    results: dict = {"ancestors": len(_ancestors())}
    for role, pid in [("referee", p) for p in _ancestors()[:1]] + [("runner", TARGETS["runner"])]:
        _attempt(results, f"{role} memory", lambda pid=pid: _read_memory(pid))
        _attempt(results, f"{role} descriptors", lambda pid=pid: _reopen_descriptor(pid))
        _attempt(results, f"{role} environment", lambda pid=pid: _read_environment(pid))
        _attempt(results, f"{role} ptrace", lambda pid=pid: _ptrace(pid))
        _attempt(results, f"{role} SIGSTOP", lambda pid=pid: _stop(pid))
    for path in TARGETS["append"]:
        _attempt(results, f"append {path}", lambda path=path: _append(path))
    for path in TARGETS["open"]:
        _attempt(results, f"open {path}", lambda path=path: _open_for_writing(path))
    print("PROBES=" + json.dumps(results), flush=True)
    n = a.shape[-1]
    return torch.zeros_like(a), torch.zeros(a.shape[0], n, device=a.device)
