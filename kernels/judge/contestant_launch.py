"""What the referee decides about the contestant before it starts: its boundary, as data.

Kept apart from the process that runs it (contestant_process.py), so that the caller's side of the
judge can describe a contestant without loading what running one takes (torch, for the exports).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from qrsup.kernels.judge.sandbox import IsolationSettings


@dataclass(frozen=True)
class ContestantLaunch:
    """What the referee decides about the contestant before it starts."""

    device: str
    work_dir: Path
    memory_limit_bytes: int
    max_file_bytes: int
    isolation: IsolationSettings
    triton_cache: Path | None = None
    start_timeout_s: float = 60.0

    def to_dict(self) -> dict[str, object]:
        return {
            **asdict(self),
            "work_dir": str(self.work_dir),
            "isolation": self.isolation.to_dict(),
            "triton_cache": str(self.triton_cache) if self.triton_cache is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ContestantLaunch:
        cache = data.get("triton_cache")
        return cls(
            **{
                **data,
                "work_dir": Path(data["work_dir"]),
                "isolation": IsolationSettings.from_dict(data["isolation"]),
                "triton_cache": Path(cache) if cache else None,
            }
        )

    def serves(self, wanted: ContestantLaunch) -> bool:
        """A contestant launched so may run one that `wanted` describes: the same boundary,
        wherever its work directory is, with at least the file size `wanted` needs."""
        same = replace(self, work_dir=wanted.work_dir, max_file_bytes=wanted.max_file_bytes)
        return same == wanted and self.max_file_bytes >= wanted.max_file_bytes
