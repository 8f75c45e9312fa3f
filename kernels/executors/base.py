"""The executor interface every judge caller uses, and the local one (today's behaviour)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

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
    """Judge runs on this host, in a child process group of the caller."""

    def run_judge(
        self,
        candidate: Path,
        config: JudgeConfig,
        on_progress: Progress | None = None,
        extra: dict | None = None,
        keep: dict[str, Path] | None = None,
    ) -> dict:
        return run_judge(candidate, config, on_progress, extra, keep)

    def close(self) -> None:
        """Nothing is kept between runs on this host."""


LOCAL = LocalExecutor()
