"""Per-spec outcomes and the report the referee assembles from them."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

import torch
from qrsup.kernels.suites import Spec
from qrsup.kernels.timing import Stats, geomean


@dataclass
class SpecOutcome:
    """What the referee found for one spec; the first failure recorded is the one reported."""

    index: int
    kind: str  # "test" or "benchmark"
    spec: Spec
    status: str = "pass"
    reason: str = ""
    gate: str | None = None
    diagnostics: dict[str, float] = field(default_factory=dict)
    stats: Stats | None = None
    referee_mean_ns: float | None = None
    checks: int = 0
    count: int = 1
    integrity: dict[str, object] | None = None
    check_s: float = 0.0
    calls: int = 0
    wall_s: float = 0.0  # the whole spec, as the referee's clock saw it
    first_call_s: float = 0.0  # its first call's window: compilation and loading land here

    def fail(self, status: str, reason: str, gate: str | None = None) -> None:
        if self.status == "pass":
            self.status, self.reason, self.gate = status, reason, gate

    def merge_diagnostics(self, new: dict[str, float]) -> None:
        """Keep the worst value seen for each diagnostic across checked outputs."""
        for key, value in new.items():
            self.diagnostics[key] = max(value, self.diagnostics.get(key, value))

    def to_dict(self) -> dict[str, object]:
        spec = self.spec
        return {
            "index": self.index,
            "kind": self.kind,
            "spec": {
                "batch": spec.batch,
                "n": spec.n,
                "cond": spec.cond,
                "case": spec.case,
                "seed": spec.seed,
            },
            "label": spec.label,
            "status": self.status,
            "reason": self.reason,
            "gate": self.gate,
            "diagnostics": self.diagnostics,
            "stats": self.stats.to_dict() if self.stats else None,
            "referee_mean_ns": self.referee_mean_ns,
            "checks": self.checks,
            "count": self.count,
            "integrity": self.integrity,
            "check_s": self.check_s,
            "wall_s": self.wall_s,
            "first_call_s": self.first_call_s,
        }


def assemble_report(
    outcomes: list[SpecOutcome],
    load_error: str,
    device: torch.device,
    extra: dict[str, object],
) -> dict[str, object]:
    """The final report frame: verdict from the first failure, geomean only when all passed."""
    failed = [o for o in outcomes if o.status != "pass"]
    benchmarks = [o for o in outcomes if o.kind == "benchmark"]
    means = [o.stats.mean_ns for o in benchmarks if o.stats is not None]
    complete = bool(benchmarks) and len(means) == len(benchmarks) and not failed
    if load_error:
        verdict, reason = "error", load_error
    elif failed:
        first = failed[0]
        verdict = first.status
        reason = f"{first.kind} {first.index} ({first.spec.label}): {first.reason}"
    else:
        verdict, reason = "pass", ""
    return {
        "type": "report",
        "verdict": verdict,
        "reason": reason,
        "device": device_info(device),
        "versions": versions(),
        "geomean_ns": geomean(means) if complete else None,
        "specs": [o.to_dict() for o in outcomes],
        **extra,
    }


def device_info(device: torch.device) -> dict[str, str]:
    """What the judge ran on. Its name keys a candidate's figures (Store.candidate): figures
    from one device are compared only with figures from the same."""
    if device.type == "cuda":
        return {"type": "cuda", "name": torch.cuda.get_device_name(device)}
    return {"type": "cpu", "name": cpu_model()}


def cpu_model() -> str:
    """The CPU's model name ("x86_64" said nothing of which CPU host timed a figure)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        found["triton"] = triton.__version__
    except ImportError:
        found["triton"] = "absent"
    if torch.version.cuda:
        found["cuda"] = torch.version.cuda
    return found
