"""The referee's first check, paid for while the candidate loads and makes its first call.

On the H200 a referee's first check took 0.5–0.6 s, the next ones of the same size 0.01–0.02 s
(docs/benchmarks.md): CUDA loads the checker's kernels and the linear-algebra libraries make
their handles on first use. Done once in a background thread on a small batch of the first
spec's size, from the candidate's load on, that cost overlaps the load and the first call,
neither of which is timed; the referee waits for it before its first real check, so it is over
before any timed repetition starts.
"""

from __future__ import annotations

import dataclasses
import threading

import torch
from qrsup.kernels.checker import check_factors
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

WARMUP_BATCH = 2


class CheckerWarmup:
    """One throw-away check of each kind (graded and re-check), in a thread of its own."""

    def __init__(self, spec: Spec, device: torch.device) -> None:
        small = dataclasses.replace(spec, batch=min(spec.batch, WARMUP_BATCH))
        self._thread = threading.Thread(
            target=_warm, args=(small, device), name="checker-warmup", daemon=True
        )

    def start(self) -> CheckerWarmup:
        self._thread.start()
        return self

    def join(self) -> None:
        """Wait for it to finish; at once when it has, or was never started."""
        if self._thread.ident is not None:
            self._thread.join()


def _warm(spec: Spec, device: torch.device) -> None:
    """Factors that fail the gates (τ = 0 makes Q the identity) take the same paths through the
    checker as any others; the results are thrown away. A failure here is only a cold first
    check later, so nothing is raised."""
    try:
        a = generate_input(spec, device)
        tau = torch.zeros(a.shape[0], a.shape[-1], device=device)
        for exact in (True, False):
            check_factors(a, a.clone(), tau, exact_q=exact)
        torch.cuda.synchronize(device)
    except Exception:
        return
