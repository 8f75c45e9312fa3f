"""The executor interface every judge caller uses, and the local one (today's behaviour)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import replace
from pathlib import Path

from qrsup.kernels.judge.contestant_launch import ContestantLaunch
from qrsup.kernels.judge.referee_process import RefereeProcess
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.runner import JudgeConfig, Progress, run_judge

EXECUTORS = ("local", "ray")
# Referees kept starting ahead on a GPU. A contestant takes about 5 s to be ready (interpreter,
# torch, the device, its libraries warmed and its export area pinned), longer than a quick judge
# run; with one ahead, an H200 loop's runs waited 0.95 s on average for it (2026-12-04).
GPU_REFEREES_AHEAD = 2


class JudgeExecutor(ABC):
    """Runs one judge run somewhere and hands back the referee's report as a dict.

    The contract is `runner.run_judge`'s: never raises for anything the candidate does; `keep`
    names files of the run's private directory to copy to local paths.
    """

    @abstractmethod
    def run_judge(
        self,
        candidate: Path,
        config: JudgeConfig,
        on_progress: Progress | None = None,
        extra: dict | None = None,
        keep: dict[str, Path] | None = None,
    ) -> dict: ...

    @abstractmethod
    def close(self) -> None:
        """Let go of whatever the executor keeps between runs."""

    def evaluate(
        self, candidate: Path, config: JudgeConfig, on_progress: Progress | None = None
    ) -> JudgeReport:
        """Judge one candidate file, as `runner.evaluate` does on this host."""
        return JudgeReport.from_dict(self.run_judge(candidate, config, on_progress))


class LocalExecutor(JudgeExecutor):
    """Judge runs on this host, in a child process group of the caller.

    With `warm`, the referees of the next runs are started ahead of them, so their interpreters,
    torch and the device are loaded by the time a candidate arrives: during this run on a GPU
    (whose host's cores are idle while the device is timed), after it on the CPU (the timed
    device itself). Each referee still judges exactly one candidate. `gpu_ahead` is how many
    start ahead on a GPU: each waiting one holds a CUDA context, an L2-flush buffer and its
    pinned export area (897 MiB for qr_v2), so agents that share a GPU, and take turns on it,
    keep one.
    """

    def __init__(self, warm: bool = False, gpu_ahead: int = GPU_REFEREES_AHEAD) -> None:
        if gpu_ahead < 1:
            raise ValueError(f"gpu_ahead must be at least 1, got {gpu_ahead}")
        self.warm = warm
        self.gpu_ahead = gpu_ahead
        self._ahead: deque[RefereeProcess] = deque()
        self._largest_file_bytes = 0

    def run_judge(
        self,
        candidate: Path,
        config: JudgeConfig,
        on_progress: Progress | None = None,
        extra: dict | None = None,
        keep: dict[str, Path] | None = None,
    ) -> dict:
        if not self.warm:
            return run_judge(candidate, config, on_progress, extra, keep)
        launch = config.contestant_launch()
        # One boundary for every stage: a later referee may serve a larger export than this.
        self._largest_file_bytes = max(self._largest_file_bytes, launch.max_file_bytes)
        ahead = replace(launch, max_file_bytes=self._largest_file_bytes)
        warm = self._ahead.popleft() if self._ahead else None
        if launch.device != "cpu":
            self._start_ahead(ahead, self.gpu_ahead)
        data = run_judge(candidate, config, on_progress, extra, keep, warm)
        self._start_ahead(ahead, 1)
        return data

    def _start_ahead(self, launch: ContestantLaunch, depth: int) -> None:
        while len(self._ahead) < depth:
            self._ahead.append(RefereeProcess(launch))

    @property
    def referees_ahead(self) -> int:
        """How many referees are starting or waiting for runs to come."""
        return len(self._ahead)

    @property
    def next_referee(self) -> RefereeProcess | None:
        """The referee started for the next run, if one waits."""
        return self._ahead[0] if self._ahead else None

    def close(self) -> None:
        """End the referees started for runs that will not come."""
        while self._ahead:
            self._ahead.popleft().close()


LOCAL = LocalExecutor()
