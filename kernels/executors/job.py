"""A judge run packed to travel: the candidate's source by value, its config, what to keep.

A worker node may share no file system with the supervisor, so the job carries the source, and
the run's kept files (a profile's trace) come back as bytes. `run_job` is the worker's half: it
writes the source to a private temporary directory and runs the ordinary judge on it there.
"""

from __future__ import annotations

import base64
import hashlib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from qrsup.kernels.judge.runner import JudgeConfig, Progress, run_judge
from qrsup.kernels.judge.triton_cache import user_cache_root


@dataclass(frozen=True)
class JudgeJob:
    """One judge run, independent of the machine that asked for it."""

    candidate_name: str
    source: bytes
    config: JudgeConfig
    extra: dict = field(default_factory=dict)
    keep: Mapping[str, str] = field(default_factory=dict)  # run file → name of its local copy

    @classmethod
    def of(
        cls,
        candidate: Path,
        config: JudgeConfig,
        extra: dict | None = None,
        keep: Mapping[str, Path] | None = None,
    ) -> JudgeJob:
        """Read the candidate now: what is judged is the file as it was when the run was asked."""
        kept = {name: destination.name for name, destination in (keep or {}).items()}
        return cls(candidate.name, candidate.read_bytes(), config, dict(extra or {}), kept)


@dataclass(frozen=True)
class JobResult:
    """The referee's report and the kept files' bytes."""

    report: dict
    kept: dict[str, bytes] = field(default_factory=dict)

    def to_dict(self) -> dict:
        kept = {name: base64.b64encode(data).decode() for name, data in self.kept.items()}
        return {"report": self.report, "kept": kept}

    @classmethod
    def from_dict(cls, data: Mapping) -> JobResult:
        kept = {name: base64.b64decode(text) for name, text in (data.get("kept") or {}).items()}
        return cls(dict(data["report"]), kept)

    def save_kept(self, keep: Mapping[str, Path]) -> None:
        """Write each kept file where the caller asked for it."""
        for name, destination in keep.items():
            if name in self.kept:
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(self.kept[name])


def run_job(job: JudgeJob, on_progress: Progress | None = None) -> JobResult:
    """Judge the job's source on this machine; never raises for anything the candidate does."""
    with tempfile.TemporaryDirectory(prefix="qrsup-job-") as temp:
        root = Path(temp)
        candidate = root / job.candidate_name
        candidate.write_bytes(job.source)
        keep = {name: root / "kept" / copy for name, copy in job.keep.items()}
        config = replace(job.config, triton_cache=node_cache(job.config.triton_cache))
        report = run_judge(candidate, config, on_progress, job.extra, keep)
        kept = {name: path.read_bytes() for name, path in keep.items() if path.is_file()}
    return JobResult(report, kept)


def node_cache(requested: Path | None) -> Path | None:
    """This node's Triton cache for the caller's cache `requested`.

    Runs that share a cache on the supervisor's host share one here, and no others: the cache's
    identity is the caller's path, which may not exist on this machine.
    """
    if requested is None:
        return None
    key = hashlib.sha256(str(requested).encode()).hexdigest()[:16]
    return user_cache_root().parent / "remote-triton" / key
