"""The executor interface every judge caller uses, and the local one (today's behaviour)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path

from qrsup.kernels.judge.referee_process import RefereeProcess
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.runner import JudgeConfig, Progress, run_judge

EXECUTORS = ("local", "ray")


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

    With `warm`, the referee of the next run is started ahead of it, so its interpreters, torch
    and the device are loaded by the time a candidate arrives: during this run on a GPU (whose
    host's cores are idle while the device is timed), after it on the CPU (the timed device
    itself). Each referee still judges exactly one candidate.
    """

    def __init__(self, warm: bool = False) -> None:
        self.warm = warm
        self._next: RefereeProcess | None = None
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
        # One boundary for every stage: the next referee may serve a larger export than this.
        self._largest_file_bytes = max(self._largest_file_bytes, launch.max_file_bytes)
        ahead = replace(launch, max_file_bytes=self._largest_file_bytes)
        warm, self._next = self._next, None
        if launch.device != "cpu":
            self._next = RefereeProcess(ahead)
        data = run_judge(candidate, config, on_progress, extra, keep, warm)
        if self._next is None:
            self._next = RefereeProcess(ahead)
        return data

    @property
    def next_referee(self) -> RefereeProcess | None:
        """The referee started for the next run, if one waits."""
        return self._next

    def close(self) -> None:
        """End the referee started for a run that will not come."""
        if self._next is not None:
            self._next.close()
            self._next = None


LOCAL = LocalExecutor()
