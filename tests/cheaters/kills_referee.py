"""Cheater: walks up its ancestors through /proc to find the judge's referee, kills it, and
returns nothing. Behind the judge's boundary it finds no ancestor at all."""

import os
import signal
from pathlib import Path


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def custom_kernel(a):
    pid = os.getpid()
    while pid > 1:
        pid = _parent_of(pid)
        command = Path(f"/proc/{pid}/cmdline").read_bytes() if pid > 0 else b""
        if b"referee_main" in command:
            os.kill(pid, signal.SIGKILL)
            break
    return None
