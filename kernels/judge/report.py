"""The judge's report: what every caller (CLI, agents, promotion) reads about a candidate."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class JudgeReport:
    """A verdict and the per-spec evidence for it; JSON-serialisable through `to_dict`."""

    verdict: str
    reason: str
    candidate: str
    source_sha256: str
    suite: str
    mode: str
    seed: int | None
    device: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    rule: str = ""
    recheck: str = ""
    calibration: dict[str, Any] = field(default_factory=dict)  # figures, what was warmed, split_s
    phases_s: dict[str, float] = field(default_factory=dict)
    geomean_ns: float | None = None
    specs: list[dict[str, Any]] = field(default_factory=list)
    candidate_output: str = ""
    isolation: dict[str, Any] = field(default_factory=dict)
    placement: dict[str, Any] = field(default_factory=dict)  # where a Ray executor ran it
    seeded: str = ""  # what the shipped kernels' compile put in a new kept cache (shipped_seed)
    triton_cache_removed: str = ""  # why the kept cache was removed after the run (triton_cache)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def device_name(self) -> str:
        """What the judge ran on (`torch.cuda.get_device_name`, or the CPU's name): figures
        compare only with figures from the same."""
        return self.device.get("name", "")

    def isolation_warning(self) -> str:
        """One line when the candidate ran without the judge's full boundary, else ""."""
        missing = self.isolation.get("missing") or []
        if not missing:
            return ""
        return "warning: the judge's isolation was incomplete: " + "; ".join(missing)

    def spec_means_ns(self) -> dict[int, float]:
        """Benchmark index → mean time per call, for specs that were timed."""
        return {
            s["index"]: s["stats"]["mean_ns"]
            for s in self.specs
            if s["kind"] == "benchmark" and s.get("stats")
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeReport:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
