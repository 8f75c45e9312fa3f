"""Launch sequence of one factorization: prescale, then panel and trailing update per panel."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

from kernels.fast.panel import qr_panel_kernel
from kernels.fast.plan import Plan
from kernels.fast.scale import qr_amax_kernel
from kernels.fast.update import qr_update_kernel

AMAX_BLOCK_R = 32
AMAX_BLOCK_C = 128


@dataclass(frozen=True)
class Buffers:
    """Outputs and scratch of one factorization: fresh per call, or static under a CUDA graph."""

    h: torch.Tensor  # batch × n × n
    tau: torch.Tensor  # batch × n
    t: torch.Tensor  # batch × t_width × t_width
    amax: torch.Tensor  # batch

    @classmethod
    def allocate(cls, a: torch.Tensor, plan: Plan) -> Buffers:
        """Uninitialised buffers for `a` (every element of h and tau gets written)."""
        batch, n = a.shape[0], a.shape[-1]
        w = plan.t_width
        return cls(
            h=torch.empty((batch, n, n), dtype=a.dtype, device=a.device),
            tau=torch.empty((batch, n), dtype=a.dtype, device=a.device),
            t=torch.empty((batch, w, w), dtype=a.dtype, device=a.device),
            amax=torch.empty((batch,), dtype=a.dtype, device=a.device),
        )


def run_plan(a: torch.Tensor, plan: Plan, out: Buffers) -> None:
    """Factor `a` (batch × n × n, any strides) into `out` by the launches `plan` lists."""
    batch, n, shape = a.shape[0], plan.n, plan.shape
    single = len(plan.steps) == 1
    if not single:
        out.amax.zero_()
        grid = (batch, triton.cdiv(n, AMAX_BLOCK_R))
        qr_amax_kernel[grid](
            a, out.amax, n, *a.stride(), BLOCK_R=AMAX_BLOCK_R, BLOCK_C=AMAX_BLOCK_C
        )
    h, t = out.h, out.t
    for index, step in enumerate(plan.steps):
        src = a if index == 0 else h
        qr_panel_kernel[(batch,)](
            src,
            h,
            out.tau,
            t,
            out.amax,
            n,
            step.col,
            *src.stride(),
            *h.stride(),
            out.tau.stride(0),
            t.stride(0),
            t.stride(1),
            BLOCK_M=step.block_m,
            NB=step.nb,
            SELF_SCALE=single,
            PAIR_REDUCE=shape.panel_pair_reduce and a.is_cuda,
            num_warps=step.warps,
        )
        trailing = n - step.col - step.nb
        if trailing <= 0:
            continue
        grid = (batch, triton.cdiv(trailing, shape.update_block_n))
        qr_update_kernel[grid](
            src,
            h,
            t,
            out.amax,
            n,
            step.col,
            step.nb,
            *src.stride(),
            *h.stride(),
            t.stride(0),
            t.stride(1),
            NBP=step.dot_width,
            BM=shape.update_block_m,
            BN=shape.update_block_n,
            PRECISION=shape.update_precision,
            num_warps=shape.update_warps,
            num_stages=shape.update_stages,
        )
