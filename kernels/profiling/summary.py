"""A profile as people and models read it: one spec's trace figures, or why there are none."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from qrsup.kernels.profiling.ncu import KernelCounters
from qrsup.kernels.profiling.timeline import TraceFigures

FAILURE_KINDS = ("usage", "refused", "profiler")
TEXT_TOP = 6
TEXT_NAME_CHARS = 60


@dataclass(frozen=True)
class ProfileSummary:
    """Where one benchmark spec's time went, for a table, a model's prompt or the store."""

    candidate: str
    suite: str
    spec_index: int
    spec_label: str
    device: str
    figures: TraceFigures
    ncu: tuple[KernelCounters, ...] = ()
    ncu_note: str = ""  # why Nsight Compute gave no counters, when they were asked for
    trace_file: str = ""  # the full Chrome trace (chrome://tracing, Perfetto), where it was kept

    def to_text(self) -> str:
        """A few hundred tokens at most: what a model needs to choose its next change."""
        f = self.figures
        calls = max(1, f.calls)
        what = "kernels" if f.clock == "device" else "torch ops"
        bound = "launch-bound" if f.launch_bound else "not launch-bound"
        if f.clock == "device":
            launched = f"{f.launches / calls:.0f} kernels from {f.launch_calls / calls:.0f} calls"
        else:
            launched = f"{f.launches / calls:.0f} top-level torch ops"
        lines = [
            f"profile of {self.candidate}: {self.suite} benchmark {self.spec_index} "
            f"({self.spec_label}) on {self.device}, {f.calls} calls",
            f"per call: {_time(f.busy_us / calls)} busy in {what} over {_time(f.span_us / calls)}"
            f" (idle {f.idle_share:.0%}: {bound})",
            f"launches per call: {launched}, median gap {_time(f.median_gap_us)}",
            "phases: " + " · ".join(f"{name} {share:.0%}" for name, share in f.phases.items()),
            f"top {what} by self time (share, calls per call): "
            + " · ".join(
                f"{op.name[:TEXT_NAME_CHARS]} {op.self_us / f.busy_us if f.busy_us else 0:.0%}"
                f" ×{op.calls / calls:g}"
                for op in f.top[:TEXT_TOP]
            ),
        ]
        if f.peak_memory_bytes is not None:
            start = f.start_memory_bytes or 0
            lines.append(f"peak memory: {_mib(f.peak_memory_bytes)} ({_mib(start)} at start)")
        if self.ncu or self.ncu_note:
            lines.append("ncu: " + (" · ".join(map(_counters, self.ncu)) or self.ncu_note))
        if self.trace_file:
            lines.append(f"trace: {self.trace_file}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ProfileSummary:
        figures = TraceFigures.from_dict(data["figures"])
        ncu = tuple(KernelCounters(**c) for c in data.get("ncu", ()))
        return cls(**{**data, "figures": figures, "ncu": ncu})


@dataclass(frozen=True)
class ProfileFailure:
    """No profile, and why: a bad request, a candidate that fails the gates, or the profiler.

    `verdict` is the gates' verdict on the spec where they ran: a profiler failure leaves it
    "pass", so it never changes an evaluation.
    """

    kind: str  # one of FAILURE_KINDS
    reason: str
    verdict: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"kind must be one of {FAILURE_KINDS}, not {self.kind!r}")

    def to_text(self) -> str:
        return f"no profile ({self.kind}): {one_line(self.reason)}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def profile_from_dict(data: dict) -> ProfileSummary | ProfileFailure:
    """Either kind of result back from its `to_dict` (a summary is the one with figures)."""
    return ProfileSummary.from_dict(data) if "figures" in data else ProfileFailure(**data)


def one_line(text: str) -> str:
    """A reason's first line, and its last (an exception's message) when it runs on."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no reason given"
    return lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"


def _counters(c: KernelCounters) -> str:
    def pct(value: float | None) -> str:
        return "?" if value is None else f"{value:.0f}%"

    return (
        f"{c.name[:TEXT_NAME_CHARS]}: occupancy {pct(c.occupancy_pct)}, DRAM {pct(c.dram_pct)},"
        f" SM {pct(c.sm_pct)} ({_time(c.duration_us)})"
    )


def _time(us: float) -> str:
    if us < 1000:
        return f"{us:.1f} us"
    if us < 1e6:
        return f"{us / 1e3:.2f} ms"
    return f"{us / 1e6:.2f} s"


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"
