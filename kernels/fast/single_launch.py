"""A one-launch plan (a single panel: n ≤ the panel width) launched without Triton's dispatch.

At 20×32 the factorization is one panel launch of 27 µs on an H200, and a call through Triton's
dispatch or a CUDA graph's replay (input copy, replay, two output copies) took 44–54 µs: the host
set the pace (docs/benchmarks.md, 2026-12-02). Here Triton's dispatch (binding, specialization,
cache key) runs once per input layout, and later calls hand the compiled kernel its arguments
directly, with only H and τ allocated per call.

Triton specializes a launch on its integer arguments' values and its pointers' alignment. Every
argument but A's is fixed for one plan (fresh outputs of one shape, scratch made once), so a
compiled kernel is kept per A's strides, A's alignment and the device.

T, which nothing reads after a single panel, and |A|max, which the call reads back at once or not
at all, live in scratch made once per layout: each allocation is host time in a call that the
host already paces. Calls of one solver on one shape must therefore not overlap on the device, as
for its CUDA graphs.
"""

from __future__ import annotations

import torch

from .panel import qr_panel_kernel
from .plan import PanelOp, Plan

ALIGNMENT_BYTES = 16  # what Triton's pointer specialization looks at


def single_panel(plan: Plan) -> PanelOp | None:
    """The plan's one launch, where it is one panel (which then scales itself)."""
    if len(plan.ops) == 1 and isinstance(plan.ops[0], PanelOp):
        return plan.ops[0]
    return None


class SinglePanelLaunch:
    """One plan's panel kernel, compiled per input layout, launched straight from the host."""

    def __init__(self, plan: Plan, op: PanelOp) -> None:
        self.plan, self.op = plan, op
        # Per layout: the compiled kernel, then T's and |A|max's scratch.
        self._compiled: dict[tuple[object, ...], tuple[object, torch.Tensor, torch.Tensor]] = {}

    def __call__(self, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(H, τ, |A|max) of `a`, a CUDA tensor of the plan's shape; |A|max is scratch that the
        next call on this layout overwrites."""
        plan, op = self.plan, self.op
        h = torch.empty((plan.batch, plan.n, plan.n), dtype=a.dtype, device=a.device)
        tau = torch.empty((plan.batch, plan.n), dtype=a.dtype, device=a.device)
        key = (a.get_device(), a.stride(), a.data_ptr() % ALIGNMENT_BYTES)
        entry = self._compiled.get(key)
        if entry is None:
            t, amax = a.new_empty((plan.batch, plan.t_width, plan.t_width)), a.new_empty(plan.batch)
        else:
            t, amax = entry[1:]
        args = (
            a, h, tau, t, amax, plan.n, 0, *a.stride(), *h.stride(), tau.stride(0),
            t.stride(0), t.stride(1),
        )  # fmt: skip
        pair, unroll = plan.shape.panel_pair_reduce, plan.shape.panel_unroll
        if entry is None:
            kernel = qr_panel_kernel[(plan.batch,)](
                *args, BLOCK_M=op.block_m, NB=op.nb, SELF_SCALE=True, PAIR_REDUCE=pair,
                UNROLL=unroll, num_warps=op.warps, maxnreg=op.max_registers or None,
            )  # fmt: skip
            self._compiled[key] = (kernel, t, amax)
        else:
            # Every parameter in order, constexprs too, as Triton's own launch passes them.
            entry[0][(plan.batch, 1, 1)](*args, op.block_m, op.nb, True, pair, unroll)
        return h, tau, amax
