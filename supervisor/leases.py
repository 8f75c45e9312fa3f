"""GPU leases: which agent holds which GPU, exclusive unless sharing was asked for.

Leases live in the run directory (`leases.json`, rewritten under a file lock), so every
supervisor process — the TUI, the CLI, a relaunch — sees the same table. A lease whose holder
process is gone is free again at once, so a killed agent's GPU is reusable immediately.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
from qrsup.kernels.judge.locks import file_lock


class LeaseError(RuntimeError):
    """No GPU has a free slot: every one already holds `per_gpu` agents."""


@dataclass(frozen=True)
class Lease:
    """One agent's hold on one GPU."""

    agent: str
    gpu: int
    pid: int | None


def parse_gpus(text: str | None, visible: Callable[[], int]) -> list[int]:
    """`0,1,3` → [0, 1, 3]; None → every visible GPU; a clear error for anything else."""
    if text is None:
        return list(range(visible()))
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"--gpus must be a comma-separated list of indices, got {text!r}"
        ) from None
    if not gpus or len(set(gpus)) != len(gpus) or min(gpus) < 0:
        raise ValueError(f"--gpus must list distinct indices ≥ 0, got {text!r}")
    return gpus


class GpuLeases:
    """Hands out GPUs to agents: the least-loaded GPU first, at most `per_gpu` agents each."""

    def __init__(self, run_dir: Path, gpus: list[int], per_gpu: int = 1) -> None:
        if per_gpu < 1:
            raise ValueError(f"agents per GPU must be at least 1, got {per_gpu}")
        self.path = run_dir / "leases.json"
        self.lock = run_dir / "leases.lock"
        self.gpus = gpus
        self.per_gpu = per_gpu

    def acquire(self, agent: str, pid: int | None = None) -> int:
        """The GPU index leased to `agent` (its current one if it already holds a live lease)."""
        with file_lock(self.lock):
            leases = self._live()
            for lease in leases:
                if lease.agent == agent:
                    return lease.gpu
            load = {gpu: 0 for gpu in self.gpus}
            for lease in leases:
                if lease.gpu in load:
                    load[lease.gpu] += 1
            free = [gpu for gpu in self.gpus if load[gpu] < self.per_gpu]
            if not free:
                raise LeaseError(
                    f"every GPU ({', '.join(map(str, self.gpus))}) already holds "
                    f"{self.per_gpu} agent(s); add GPUs or raise --agents-per-gpu"
                )
            gpu = min(free, key=lambda g: (load[g], self.gpus.index(g)))
            self._write([*leases, Lease(agent, gpu, pid)])
            return gpu

    def bind(self, agent: str, pid: int) -> None:
        """Record the process that holds the lease, so its death frees the GPU."""
        with file_lock(self.lock):
            leases = self._live()
            self._write([Lease(x.agent, x.gpu, pid if x.agent == agent else x.pid) for x in leases])

    def release(self, agent: str) -> None:
        with file_lock(self.lock):
            self._write([lease for lease in self._live() if lease.agent != agent])

    def holders(self) -> dict[int, list[str]]:
        """GPU index → agents holding it now (for the stats panel)."""
        table: dict[int, list[str]] = {gpu: [] for gpu in self.gpus}
        for lease in self._read():
            if _alive(lease.pid):
                table.setdefault(lease.gpu, []).append(lease.agent)
        return table

    def _live(self) -> list[Lease]:
        """Leases whose holder runs, or that were just taken and await their process."""
        return [lease for lease in self._read() if lease.pid is None or _alive(lease.pid)]

    def _read(self) -> list[Lease]:
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        return [Lease(item["agent"], int(item["gpu"]), item.get("pid")) for item in raw]

    def _write(self, leases: list[Lease]) -> None:
        temp = self.path.with_suffix(".tmp")
        temp.write_text(json.dumps([lease.__dict__ for lease in leases]))
        temp.replace(self.path)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
