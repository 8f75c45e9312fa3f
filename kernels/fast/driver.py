"""Launch sequence of one factorization: prescale, then the plan's panel, T and update launches."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

from kernels.fast.panel import qr_panel_kernel
from kernels.fast.plan import PanelOp, Plan, TFactorOp, UpdateOp
from kernels.fast.scale import qr_amax_kernel
from kernels.fast.tfactor import qr_tfactor_kernel
from kernels.fast.update import qr_update_kernel
from kernels.fast.update_split import qr_update_apply_kernel, qr_update_w_kernel

AMAX_BLOCK_R = 32
AMAX_BLOCK_C = 128


@dataclass(frozen=True)
class Buffers:
    """Outputs and scratch of one factorization: fresh per call, or static under a CUDA graph."""

    h: torch.Tensor  # batch × n × n
    tau: torch.Tensor  # batch × n
    t: torch.Tensor  # batch × t_width × t_width
    w: torch.Tensor  # batch × w_width × n (row-split updates only)
    amax: torch.Tensor  # batch

    @classmethod
    def allocate(cls, a: torch.Tensor, plan: Plan) -> Buffers:
        """Uninitialised buffers for `a` (every element of h and tau gets written)."""
        batch, n = a.shape[0], a.shape[-1]

        def empty(*shape: int) -> torch.Tensor:
            return torch.empty(shape, dtype=a.dtype, device=a.device)

        return cls(
            h=empty(batch, n, n),
            tau=empty(batch, n),
            t=empty(batch, plan.t_width, plan.t_width),
            w=empty(batch, plan.w_width, n),
            amax=empty(batch),
        )


def run_plan(a: torch.Tensor, plan: Plan, out: Buffers) -> None:
    """Factor `a` (batch × n × n, any strides) into `out` by the launches `plan` lists."""
    single = len(plan.ops) == 1
    if not single:
        out.amax.zero_()
        grid = (plan.batch, triton.cdiv(plan.n, AMAX_BLOCK_R))
        qr_amax_kernel[grid](
            a, out.amax, plan.n, *a.stride(), BLOCK_R=AMAX_BLOCK_R, BLOCK_C=AMAX_BLOCK_C
        )
    for op in plan.ops:
        src = a if op.col == 0 else out.h  # only launches that start at column 0 read A
        if isinstance(op, PanelOp):
            _panel(src, plan, op, out, single)
        elif isinstance(op, UpdateOp):
            _update(src, plan, op, out)
        else:
            _tfactor(plan, op, out)


def _panel(src: torch.Tensor, plan: Plan, op: PanelOp, out: Buffers, single: bool) -> None:
    t = out.t[:, op.t_offset :, op.t_offset :]
    qr_panel_kernel[(plan.batch,)](
        src, out.h, out.tau, t, out.amax, plan.n, op.col,
        *src.stride(), *out.h.stride(), out.tau.stride(0), t.stride(0), t.stride(1),
        BLOCK_M=op.block_m, NB=op.nb, SELF_SCALE=single,
        PAIR_REDUCE=plan.shape.panel_pair_reduce and src.is_cuda, num_warps=op.warps,
    )  # fmt: skip


def _update(src: torch.Tensor, plan: Plan, op: UpdateOp, out: Buffers) -> None:
    shape, h = plan.shape, out.h
    t = out.t[:, op.t_offset :, op.t_offset :]
    col_blocks = triton.cdiv(op.c_end - op.c_start, shape.update_block_n)
    tiles = dict(NBP=op.dot_width, BM=shape.update_block_m, BN=shape.update_block_n)
    tiles |= dict(PRECISION=shape.update_precision, num_warps=shape.update_warps)
    span = (plan.n, op.col, op.nb, op.c_start, op.c_end)
    if not op.slab_rows:
        qr_update_kernel[(plan.batch, col_blocks)](
            src, h, t, out.amax, *span, *src.stride(), *h.stride(), t.stride(0), t.stride(1),
            num_stages=shape.update_stages, **tiles,
        )  # fmt: skip
        return
    w = out.w
    w.zero_()
    slabs = triton.cdiv(plan.n - op.col, op.slab_rows)
    qr_update_w_kernel[(plan.batch, col_blocks, slabs)](
        src, h, w, out.amax, *span, op.slab_rows, *src.stride(), *h.stride(),
        w.stride(0), w.stride(1), num_stages=shape.update_stages, **tiles,
    )  # fmt: skip
    row_blocks = triton.cdiv(plan.n - op.col, shape.update_block_m)
    qr_update_apply_kernel[(plan.batch, col_blocks, row_blocks)](
        src, h, w, t, out.amax, *span, *src.stride(), *h.stride(),
        w.stride(0), w.stride(1), t.stride(0), t.stride(1), **tiles,
    )  # fmt: skip


def _tfactor(plan: Plan, op: TFactorOp, out: Buffers) -> None:
    h, t = out.h, out.t
    qr_tfactor_kernel[(plan.batch,)](
        h, t, plan.n, op.col, op.width, op.nb, *h.stride(), t.stride(0), t.stride(1),
        KBP=op.dot_width, BM=plan.shape.update_block_m, PRECISION=plan.shape.update_precision,
        num_warps=op.warps,
    )  # fmt: skip
