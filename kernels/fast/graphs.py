"""CUDA-graph replay of a whole factorization, for shapes whose launches outweigh their work."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .driver import Buffers, run_plan
from .plan import Plan


@dataclass(frozen=True)
class _Captured:
    graph: torch.cuda.CUDAGraph
    static_a: torch.Tensor
    out: Buffers


class GraphCache:
    """One captured launch sequence per (shape, device, plan), replayed on a static input copy."""

    def __init__(self) -> None:
        self._captured: dict[tuple[object, ...], _Captured] = {}

    def run(self, a: torch.Tensor, plan: Plan) -> Buffers:
        """Factor `a` by replaying its graph; the result lives in static buffers until next call."""
        key = (tuple(a.shape), a.device, plan)
        captured = self._captured.get(key)
        if captured is None:
            captured = _capture(a, plan)
            self._captured[key] = captured
        captured.static_a.copy_(a)
        captured.graph.replay()
        return captured.out


def _capture(a: torch.Tensor, plan: Plan) -> _Captured:
    static_a = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    static_a.copy_(a)
    out = Buffers.allocate(static_a, plan)
    run_plan(static_a, plan, out)  # compiles and loads every kernel outside the capture
    torch.cuda.synchronize(a.device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run_plan(static_a, plan, out)
    return _Captured(graph=graph, static_a=static_a, out=out)
