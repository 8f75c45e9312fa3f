"""Reading a Chrome trace written by torch.profiler in the contestant: untrusted data, read warily.

The file comes from the process where candidate code runs, so it is bounded in size, every event
is type-checked, and malformed events are skipped: a forged trace can mislead a profile (which is
only information), never crash the referee or touch a verdict.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

TRACE_FILE = "profile-trace.json"  # in the judge's private work dir
PHASE_PREFIX = "qrsup:"  # a candidate's phase marks (qrsup.kernels.phases)
CALL_RANGE = "qrsup.call"  # the harness's range around one custom_kernel call; never a phase
OTHER = "other"  # the phase of time outside every mark
MAX_TRACE_BYTES = 256 * 2**20
MAX_NAME_CHARS = 200
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


class TraceError(ValueError):
    """The trace cannot be summarised, with a one-line reason."""


@dataclass(frozen=True)
class Span:
    """One complete trace event: what ran, on which thread or GPU queue, and when (microseconds)."""

    category: str
    name: str
    track: str
    start_us: float
    dur_us: float
    correlation: int | None = None

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@dataclass(frozen=True)
class MemorySample:
    """The allocator's total after one allocation or free, on one device type (0 CPU, 1 CUDA)."""

    device_type: int
    total_bytes: int
    change_bytes: int


@dataclass(frozen=True)
class Trace:
    """The spans and memory samples of one profile, in trace order."""

    spans: tuple[Span, ...]
    memory: tuple[MemorySample, ...]


def load_trace(path: Path) -> Trace:
    """Parse a trace file; a TraceError says why it cannot be used."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise TraceError("the profiler wrote no trace") from None
    if size > MAX_TRACE_BYTES:
        cap = MAX_TRACE_BYTES >> 20
        raise TraceError(f"the trace is {size / 2**20:.0f} MiB, over the {cap} MiB cap")
    try:
        data = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise TraceError(f"the trace is not JSON: {exc}") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise TraceError("the trace has no traceEvents list")
    spans = tuple(s for s in map(_span, events) if s is not None)
    memory = tuple(m for m in map(_memory, events) if m is not None)
    return Trace(spans, memory)


def _span(event: object) -> Span | None:
    if not isinstance(event, dict) or event.get("ph") != "X":
        return None
    category, name = event.get("cat"), event.get("name")
    start, dur = _number(event.get("ts")), _number(event.get("dur"))
    if not isinstance(category, str) or not isinstance(name, str) or start is None or dur is None:
        return None
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    correlation = args.get("correlation")
    return Span(
        category=category,
        name=name[:MAX_NAME_CHARS],
        track=f"{event.get('pid')}:{event.get('tid')}",
        start_us=start,
        dur_us=max(0.0, dur),
        correlation=correlation if type(correlation) is int else None,
    )


def _memory(event: object) -> MemorySample | None:
    if not isinstance(event, dict) or event.get("name") != "[memory]":
        return None
    args = event.get("args")
    if not isinstance(args, dict):
        return None
    fields = (args.get("Device Type"), args.get("Total Allocated"), args.get("Bytes"))
    if not all(type(f) is int for f in fields):
        return None
    return MemorySample(*fields)  # type: ignore[arg-type]


def _number(value: object) -> float | None:
    if type(value) not in (int, float):
        return None
    number = float(value)  # type: ignore[arg-type]
    return number if math.isfinite(number) else None
