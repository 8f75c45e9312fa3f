"""CPU and memory of each agent's process tree (the agent, its judge, the candidate) via psutil."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class TreeLoad:
    """One agent's process tree now; `cpu_pct` is since the previous sample (100 = one core)."""

    pids: frozenset[int]
    cpu_pct: float
    rss_bytes: int


class ProcessStats:
    """Keeps each process between samples, since psutil measures CPU as a delta between calls."""

    def __init__(self) -> None:
        self._known: dict[int, psutil.Process] = {}

    def sample(self, roots: Mapping[str, int | None]) -> dict[str, TreeLoad]:
        """The load of each named root's tree; a root that is gone gets an empty load."""
        seen: dict[int, psutil.Process] = {}
        loads = {}
        for name, pid in roots.items():
            tree = self._tree(pid) if pid is not None else []
            cpu, rss = 0.0, 0
            for process in tree:
                if self._known.get(process.pid) == process:  # same pid and start time
                    process = self._known[process.pid]
                try:
                    cpu += process.cpu_percent(None)
                    rss += process.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                seen[process.pid] = process
            loads[name] = TreeLoad(frozenset(p.pid for p in tree), cpu, rss)
        self._known = seen
        return loads

    @staticmethod
    def _tree(pid: int) -> list[psutil.Process]:
        try:
            root = psutil.Process(pid)
            return [root, *root.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return []
