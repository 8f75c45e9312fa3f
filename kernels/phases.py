"""Phases a candidate marks, so a profile can say where its time went.

A candidate wraps each stage in `with phase("panel"): ...`. The mark is a `torch.profiler`
range named `qrsup:<name>`: outside a profile it costs a few microseconds and changes nothing;
inside one, `qrsup profile` splits the profiled time by the innermost phase around it, and time
outside every phase is "other".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from qrsup.kernels.profiling.trace import PHASE_PREFIX


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Attribute the work done inside to phase `name` in profiles."""
    with torch.profiler.record_function(PHASE_PREFIX + name):
        yield
