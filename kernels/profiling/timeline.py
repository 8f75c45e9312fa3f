"""What a trace says about time: the top ops or kernels, phase shares, launches, gaps, memory.

Two clocks. On a GPU ("device"), kernels and copies are what take time: each is charged to the
phase around the host call that launched it. On the CPU ("cpu"), torch ops on the calling thread
are: each microsecond of the profiled calls is charged to the innermost phase around it.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from qrsup.kernels.profiling.trace import (
    CALL_RANGE,
    DEVICE_CATEGORIES,
    LAUNCH_CATEGORIES,
    OTHER,
    PHASE_PREFIX,
    MemorySample,
    Span,
    Trace,
    TraceError,
)

TOP_COUNT = 10
LAUNCH_BOUND_IDLE_SHARE = 0.3  # idle this much between kernels or ops: the host is the limit
CLOCKS = ("device", "cpu")


@dataclass(frozen=True)
class OpTime:
    """One kernel or op name: its total self time and how often it ran."""

    name: str
    self_us: float
    calls: int


@dataclass(frozen=True)
class TraceFigures:
    """The numbers of one profile; shares are fractions of the clock's total time."""

    clock: str
    calls: int  # custom_kernel calls profiled
    busy_us: float  # device: time any kernel or copy ran; cpu: time in top-level torch ops
    span_us: float  # device: first kernel start to last end; cpu: the calls' own time
    launches: int  # device: kernels run; cpu: top-level torch ops dispatched
    launch_calls: int  # device: host launch API calls (a CUDA graph is one); cpu: 0
    median_gap_us: float  # between consecutive kernels (device) or top-level ops (cpu)
    top: tuple[OpTime, ...]
    phases: dict[str, float] = field(default_factory=dict)
    peak_memory_bytes: int | None = None
    start_memory_bytes: int | None = None

    @property
    def idle_share(self) -> float:
        return max(0.0, 1.0 - self.busy_us / self.span_us) if self.span_us > 0 else 0.0

    @property
    def launch_bound(self) -> bool:
        """Idle for a large share between kernels or ops: launches, not work, set the pace."""
        return self.idle_share >= LAUNCH_BOUND_IDLE_SHARE

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TraceFigures:
        top = tuple(OpTime(**op) for op in data["top"])
        return cls(**{**data, "top": top})


def summarize(trace: Trace, clock: str) -> TraceFigures:
    """The figures of a trace taken by the contestant's `profile` command."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    calls = sorted(
        (s for s in trace.spans if s.category == "user_annotation" and s.name == CALL_RANGE),
        key=lambda s: s.start_us,
    )
    if not calls:
        raise TraceError("the trace holds no profiled custom_kernel call")
    tracks = {c.track for c in calls}
    phases = [
        s
        for s in trace.spans
        if s.category == "user_annotation" and s.name.startswith(PHASE_PREFIX) and s.track in tracks
    ]
    if clock == "device":
        return _device_figures(trace, calls, phases)
    return _cpu_figures(trace, calls, phases, tracks)


def _device_figures(trace: Trace, calls: list[Span], phases: list[Span]) -> TraceFigures:
    work = sorted(
        (s for s in trace.spans if s.category in DEVICE_CATEGORIES), key=lambda s: s.start_us
    )
    if not work:
        raise TraceError("the trace holds no GPU kernels: CUDA activity was not recorded")
    launches = {
        s.correlation: s
        for s in trace.spans
        if s.category in LAUNCH_CATEGORIES and s.correlation is not None
    }
    locate = _PhaseLocator(phases)
    charged: dict[str, float] = defaultdict(float)
    for span in work:
        launch = launches.get(span.correlation)
        name = locate.at(launch.track, launch.start_us) if launch is not None else OTHER
        charged[name] += span.dur_us
    busy, gaps = _union_and_gaps(work)
    return TraceFigures(
        clock="device",
        calls=len(calls),
        busy_us=busy,
        span_us=max(s.end_us for s in work) - work[0].start_us,
        launches=sum(1 for s in work if s.category == "kernel"),
        launch_calls=sum(1 for s in launches.values() if "Launch" in s.name),
        median_gap_us=statistics.median(gaps) if gaps else 0.0,
        top=_top((s.name, s.dur_us) for s in work),
        phases=_shares(charged, sum(s.dur_us for s in work)),
        **_memory(trace.memory, device_type=1),
    )


def _cpu_figures(
    trace: Trace, calls: list[Span], phases: list[Span], tracks: set[str]
) -> TraceFigures:
    window = sum(c.dur_us for c in calls)
    inside = _Calls(calls)
    ops = [
        s
        for s in trace.spans
        if s.category == "cpu_op" and s.track in tracks and inside.contains(s.start_us)
    ]
    nested = _self_times(ops)
    top_level = sorted((s for s, _, top in nested if top), key=lambda s: s.start_us)
    gaps = [max(0.0, b.start_us - a.end_us) for a, b in itertools.pairwise(top_level)]
    charged: dict[str, float] = defaultdict(float)
    for span, self_us, _ in _self_times(phases):
        charged[_phase_name(span)] += self_us
    return TraceFigures(
        clock="cpu",
        calls=len(calls),
        busy_us=sum(s.dur_us for s in top_level),
        span_us=window,
        launches=len(top_level),
        launch_calls=0,
        median_gap_us=statistics.median(gaps) if gaps else 0.0,
        top=_top((s.name, self_us) for s, self_us, _ in nested),
        phases=_shares(charged, window),
        **_memory(trace.memory, device_type=0),
    )


def _shares(charged: dict[str, float], total_us: float) -> dict[str, float]:
    """Each phase's share of the total, "other" the rest, largest first; they sum to 1."""
    named = {k: v for k, v in charged.items() if k != OTHER and v > 0}
    marked = sum(named.values())
    if total_us <= 0:
        return {OTHER: 1.0}
    scale = min(1.0, total_us / marked) if marked > 0 else 1.0  # a forged overlap can't pass 100%
    shares = {k: v * scale / total_us for k, v in named.items()}
    shares[OTHER] = max(0.0, 1.0 - sum(shares.values()))
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def _top(samples: Iterable[tuple[str, float]]) -> tuple[OpTime, ...]:
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for name, self_us in samples:
        totals[name] += self_us
        counts[name] += 1
    ranked = sorted(totals, key=lambda n: -totals[n])[:TOP_COUNT]
    return tuple(OpTime(n, totals[n], counts[n]) for n in ranked)


def _memory(samples: tuple[MemorySample, ...], device_type: int) -> dict[str, int | None]:
    mine = [m for m in samples if m.device_type == device_type]
    if not mine:
        return {"peak_memory_bytes": None, "start_memory_bytes": None}
    return {
        "peak_memory_bytes": max(m.total_bytes for m in mine),
        "start_memory_bytes": mine[0].total_bytes - mine[0].change_bytes,
    }


def _union_and_gaps(work: list[Span]) -> tuple[float, list[float]]:
    """Time covered by at least one span, and the idle gaps between them (spans sorted by start)."""
    busy, gaps = 0.0, []
    start, end = work[0].start_us, work[0].end_us
    for span in work[1:]:
        if span.start_us > end:
            busy += end - start
            gaps.append(span.start_us - end)
            start, end = span.start_us, span.end_us
        else:
            end = max(end, span.end_us)
    return busy + end - start, gaps


@dataclass
class _Open:
    """A span whose children are still being read: its self time so far."""

    span: Span
    self_us: float
    top_level: bool


def _self_times(spans: list[Span]) -> list[tuple[Span, float, bool]]:
    """Each span with its duration less its direct children's, and whether it is top-level."""
    done: list[_Open] = []
    stack: list[_Open] = []
    for span in sorted(spans, key=lambda s: (s.track, s.start_us, -s.dur_us)):
        while stack and (
            stack[-1].span.track != span.track or stack[-1].span.end_us <= span.start_us
        ):
            done.append(stack.pop())
        if stack:
            stack[-1].self_us -= span.dur_us
        stack.append(_Open(span, span.dur_us, top_level=not stack))
    done.extend(reversed(stack))
    return [(o.span, max(0.0, o.self_us), o.top_level) for o in done]


def _phase_name(span: Span) -> str:
    return span.name[len(PHASE_PREFIX) :] or "unnamed"


class _Calls:
    """Answers "is this instant inside a profiled call?" for calls sorted by start."""

    def __init__(self, calls: list[Span]) -> None:
        self._starts = [c.start_us for c in calls]
        self._calls = calls

    def contains(self, t_us: float) -> bool:
        i = bisect.bisect_right(self._starts, t_us) - 1
        return i >= 0 and t_us < self._calls[i].end_us


class _PhaseLocator:
    """The innermost phase open on a thread at an instant: the latest-starting range around it."""

    def __init__(self, phases: list[Span]) -> None:
        self._by_track: dict[str, list[Span]] = defaultdict(list)
        for span in sorted(phases, key=lambda s: s.start_us):
            self._by_track[span.track].append(span)
        self._starts = {t: [s.start_us for s in spans] for t, spans in self._by_track.items()}

    def at(self, track: str, t_us: float) -> str:
        spans = self._by_track.get(track, [])
        for i in range(bisect.bisect_right(self._starts.get(track, []), t_us) - 1, -1, -1):
            if spans[i].start_us <= t_us < spans[i].end_us:
                return _phase_name(spans[i])
        return OTHER
