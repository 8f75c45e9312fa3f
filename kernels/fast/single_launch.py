"""A one-launch plan (a single panel, or the warp path: n ≤ 32) launched without Triton's dispatch.

At 20×32 the factorization is one panel launch of 27 µs on an H200, and a call through Triton's
dispatch or a CUDA graph's replay (input copy, replay, two output copies) took 44–54 µs: the host
set the pace (docs/benchmarks.md, 2026-12-02). Here Triton's dispatch (binding, specialization,
cache key) runs once per input layout, and later calls hand the compiled kernel its arguments
directly, with only H and τ allocated per call.

Triton specializes a launch on its integer arguments' values and its pointers' alignment. Every
argument but A's is fixed for one plan (fresh outputs of one shape, scratch made once), so a
compiled kernel is kept per A's strides, A's alignment and the device.

A single panel's T, which nothing reads, and |A|max, which the call reads back at once or not
at all, live in scratch made once per layout: each allocation is host time in a call that the
host already paces. Calls of one solver on one shape must therefore not overlap on the device, as
for its CUDA graphs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from triton import knobs
from triton.compiler import CompiledKernel
from triton.runtime import driver

from .panel import qr_panel_kernel
from .plan import PanelOp, Plan, WarpOp
from .warp_qr import qr_warp_kernel, warp_arguments

ALIGNMENT_BYTES = 16  # what Triton's pointer specialization looks at


def single_launch(plan: Plan) -> SingleLaunch | None:
    """The dispatch-free launch of a plan that is one launch (a panel, which then scales itself,
    or the warp path's); None for any other plan."""
    if len(plan.ops) == 1:
        op = plan.ops[0]
        if isinstance(op, PanelOp):
            return PanelLaunch(plan, op)
        if isinstance(op, WarpOp):
            return WarpLaunch(plan, op)
    return None


class CompiledLayout:
    """One input layout's compiled kernel, the arguments after A, H and τ that its calls share
    (pointers as addresses), and its scratch (|A|max last)."""

    def __init__(
        self,
        kernel: CompiledKernel,
        programs: int,
        tail: tuple[object, ...],
        scratch: tuple[torch.Tensor, ...],
    ) -> None:
        self.kernel, self.programs, self.scratch = kernel, programs, scratch
        self.tail = tuple(x.data_ptr() if isinstance(x, torch.Tensor) else x for x in tail)
        self._launcher = kernel.run
        active = driver.active
        self._device, self._stream = active.get_current_device, active.get_current_stream

    def launch(self, a: int, h: int, tau: int) -> None:
        """What Triton's launch of a compiled kernel does, less its per-call set-up, given the
        addresses of A, H and τ (as integers, which Triton's launcher takes without asking the
        driver about each pointer). Its launch hooks are empty chains, never None, so Triton builds
        their metadata and calls both on every launch; with no hook registered they are passed as
        None here, and with one, Triton's own launch runs."""
        runtime = knobs.runtime
        if runtime.launch_enter_hook.calls or runtime.launch_exit_hook.calls:
            self.kernel[(self.programs, 1, 1)](a, h, tau, *self.tail)
            return
        kernel = self.kernel
        self._launcher(
            self.programs, 1, 1, self._stream(self._device()), kernel.function,
            kernel.packed_metadata, None, None, None, a, h, tau, *self.tail,
        )  # fmt: skip


class SingleLaunch(ABC):
    """One plan's kernel, compiled per input layout, launched straight from the host."""

    def __init__(self, plan: Plan, op: PanelOp | WarpOp) -> None:
        self.plan, self.op = plan, op
        self._layouts: dict[tuple[object, ...], CompiledLayout] = {}
        self._h_shape, self._tau_shape = (plan.batch, plan.n, plan.n), (plan.batch, plan.n)

    def __call__(
        self, a: torch.Tensor, device: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(H, τ, |A|max) of `a`, a tensor of the plan's shape on CUDA device `device`; |A|max
        is scratch that the next call on this layout overwrites."""
        # new_empty, not torch.empty(device=a.device): 2.7 against 3.5 µs on an H100's host.
        h, tau = a.new_empty(self._h_shape), a.new_empty(self._tau_shape)
        address = a.data_ptr()
        key = (device, a.stride(), address % ALIGNMENT_BYTES)
        layout = self._layouts.get(key)
        if layout is None:
            scratch = self._scratch(a)
            args = self._arguments(a, h, tau, scratch)
            tail = (*args[3:], *self._constexprs())
            layout = CompiledLayout(self._first_launch(args), self.plan.batch, tail, scratch)
            self._layouts[key] = layout
        else:
            layout.launch(address, h.data_ptr(), tau.data_ptr())
        return h, tau, layout.scratch[-1]

    @abstractmethod
    def _scratch(self, a: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Scratch of one layout's launches, |A|max last."""

    @abstractmethod
    def _arguments(
        self, a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor, scratch: tuple[torch.Tensor, ...]
    ) -> tuple[object, ...]:
        """The kernel's arguments up to its constexprs, A, H and τ first."""

    @abstractmethod
    def _first_launch(self, args: tuple[object, ...]) -> CompiledKernel:
        """Launch through Triton's dispatch, which compiles; the compiled kernel."""

    @abstractmethod
    def _constexprs(self) -> tuple[object, ...]:
        """The kernel's constexpr values, in order."""


class PanelLaunch(SingleLaunch):
    """A lone panel (panel.py), which finds |A|max itself and forms no T."""

    op: PanelOp

    def _scratch(self, a: torch.Tensor) -> tuple[torch.Tensor, ...]:
        plan = self.plan
        return a.new_empty((plan.batch, plan.t_width, plan.t_width)), a.new_empty(plan.batch)

    def _arguments(
        self, a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor, scratch: tuple[torch.Tensor, ...]
    ) -> tuple[object, ...]:
        t, amax = scratch
        return (
            a, h, tau, t, amax, self.plan.n, 0, *a.stride(), *h.stride(), tau.stride(0),
            t.stride(0), t.stride(1),
        )  # fmt: skip

    def _first_launch(self, args: tuple[object, ...]) -> CompiledKernel:
        op, shape = self.op, self.plan.shape
        return qr_panel_kernel[(self.plan.batch,)](
            *args, BLOCK_M=op.block_m, NB=op.nb, SELF_SCALE=True,
            PAIR_REDUCE=shape.panel_pair_reduce, UNROLL=shape.panel_unroll, num_warps=op.warps,
            maxnreg=op.max_registers or None,
        )  # fmt: skip

    def _constexprs(self) -> tuple[object, ...]:
        shape = self.plan.shape
        return self.op.block_m, self.op.nb, True, shape.panel_pair_reduce, shape.panel_unroll


class WarpLaunch(SingleLaunch):
    """The warp path (warp_qr.py)."""

    op: WarpOp

    def _scratch(self, a: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (a.new_empty(self.plan.batch),)

    def _arguments(
        self, a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor, scratch: tuple[torch.Tensor, ...]
    ) -> tuple[object, ...]:
        return warp_arguments(a, h, tau, scratch[0], self.plan.n)

    def _first_launch(self, args: tuple[object, ...]) -> CompiledKernel:
        return qr_warp_kernel[(self.plan.batch,)](*args, N=self.op.block, num_warps=1)

    def _constexprs(self) -> tuple[object, ...]:
        return (self.op.block,)
