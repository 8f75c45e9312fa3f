"""Launch sequence of one factorization: prescale, then the plan's panel, T and update launches
(or the fused or warp path's single launch)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton

from .block import qr_block_kernel
from .fused import qr_fused_kernel
from .launch_record import copy, launch, zero
from .library_update import library_join, library_update, scale_of
from .lookahead import qr_lookahead_kernel
from .panel import qr_panel_kernel
from .panel_split import qr_slab_join_kernel, qr_slab_kernel, qr_slab_rebuild_kernel
from .plan import (
    BlockOp,
    FusedOp,
    LookaheadOp,
    Op,
    OuterJoinOp,
    PanelOp,
    Plan,
    SplitPanelOp,
    TFactorOp,
    UpdateOp,
    WarpOp,
    dot_width,
)
from .scale import qr_amax_kernel
from .tfactor import qr_gram_kernel, qr_tfactor_kernel
from .update import qr_update_kernel, qr_update_tw_kernel
from .update_split import qr_update_apply_kernel, qr_update_w_kernel
from .warp_qr import qr_warp_kernel, qr_warp_kernel_interpreted, warp_arguments

AMAX_BLOCK_R = 32
AMAX_BLOCK_C = 128
AMAX_PROGRAMS = 4096  # the prescale's columns are split until its grid has about this many


@dataclass(frozen=True)
class Buffers:
    """Outputs and scratch of one factorization: fresh per call, or static under a CUDA graph."""

    h: torch.Tensor  # batch × n × n, row- or column-major (`column_major`)
    tau: torch.Tensor  # batch × n
    t: torch.Tensor  # batch × (t_slots · t_width) × t_width: the T slots stacked
    w: torch.Tensor  # batch × (w_slots · w_width) × n: the W slots stacked (row-split and two-pass)
    g: torch.Tensor  # batch × g_slabs × t_width × t_width (row-split T joins only)
    q: torch.Tensor  # batch × q_elems (row-split panels only)
    amax: torch.Tensor  # batch
    live: torch.Tensor  # batch: one past A's last column holding a nonzero (scale.py), in fp32
    bounds: torch.Tensor  # 2 × batch: amax and live, adjacent so that one zeroing clears both
    scale: torch.Tensor  # batch × 1 × 1: amax's power-of-two scale (cuBLAS updates only)
    rows: torch.Tensor  # batch × n × n, row-major: the panels' columns (column-major H only)

    @classmethod
    def allocate(cls, a: torch.Tensor, plan: Plan) -> Buffers:
        """Uninitialised buffers for `a` (every element of h and tau gets written); the scratch
        shares one allocation, since small shapes pay per allocation."""
        batch, n, tw = a.shape[0], a.shape[-1], plan.t_width
        shapes = (
            (batch, plan.t_slots * tw, tw),
            (batch, plan.w_slots * plan.w_width, n),
            (batch, plan.g_slabs, tw, tw),
            (batch, plan.q_elems),
            (2, batch),
            (batch, 1, 1),
        )
        sizes = [math.prod(shape) for shape in shapes]
        scratch = torch.empty(sum(sizes), dtype=a.dtype, device=a.device)
        t, w, g, q, bounds, scale = (
            part.view(shape) for part, shape in zip(scratch.split(sizes), shapes, strict=True)
        )
        h, tau = cls.outputs(a, plan)
        rows_shape = (batch, n, n) if plan.h_by_columns else (0,)
        rows = torch.empty(rows_shape, dtype=a.dtype, device=a.device)
        amax, live = bounds
        return cls(h, tau, t, w, g, q, amax, live, bounds, scale=scale, rows=rows)

    @staticmethod
    def outputs(a: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh, uninitialised H and τ for `a`. new_empty, not torch.empty(device=a.device): the
        host's time per call counts at small shapes (2.7 against 3.5 µs on an H100's host)."""
        batch, n = plan.batch, plan.n
        h = a.new_empty((batch, n, n))
        if plan.h_by_columns:
            h = h.transpose(1, 2)  # the same tensor, each matrix stored by columns
        return h, a.new_empty((batch, n))


def run_plan(a: torch.Tensor, plan: Plan, out: Buffers) -> None:
    """Factor `a` (batch × n × n, any strides) into `out` by the launches `plan` lists."""
    first = plan.ops[0]
    if isinstance(first, FusedOp):
        _fused(a, plan, first, out)
        return
    if isinstance(first, WarpOp):
        # Gluon compiles for GPUs only: the CPU's interpreter runs the same steps in Triton.
        kernel = qr_warp_kernel_interpreted if a.device.type == "cpu" else qr_warp_kernel
        args = warp_arguments(a, out.h, out.tau, out.amax, plan.n)
        launch(kernel, (plan.batch,), *args, N=first.block, num_warps=1)
        return
    if not (len(plan.ops) == 1 and isinstance(first, PanelOp)):  # a lone panel scales itself
        prescale(a, plan, out)
    for op in plan.ops:
        run_op(a, plan, op, out)


def prescale(a: torch.Tensor, plan: Plan, out: Buffers) -> None:
    """Each matrix's |A|max into `out.amax`, the scale every later step works at, and its live
    columns into `out.live` (the two are adjacent: one zeroing clears both)."""
    zero(out.bounds)
    row_blocks, col_blocks = triton.cdiv(plan.n, AMAX_BLOCK_R), triton.cdiv(plan.n, AMAX_BLOCK_C)
    splits = min(col_blocks, max(1, AMAX_PROGRAMS // (plan.batch * row_blocks)))
    span = triton.cdiv(col_blocks, splits) * AMAX_BLOCK_C
    grid = (plan.batch, row_blocks, triton.cdiv(plan.n, span))
    blocks = dict(BLOCK_R=AMAX_BLOCK_R, BLOCK_C=AMAX_BLOCK_C)
    launch(qr_amax_kernel, grid, a, out.amax, out.live, plan.n, *a.stride(), span, **blocks)
    if plan.library_updates:
        out.scale.copy_(scale_of(out.amax))


def run_op(a: torch.Tensor, plan: Plan, op: Op, out: Buffers) -> None:
    """One step of a blocked plan (after the prescale): what a per-step profile times."""
    if isinstance(op, PanelOp):
        _panel(_panel_source(a, plan, op, out), plan, op, out, len(plan.ops) == 1)
    elif isinstance(op, SplitPanelOp):
        _split_panel(a if op.col == 0 else out.h, plan, op, out)
    elif isinstance(op, UpdateOp):
        _update(a if op.col == 0 else out.h, plan, op, out)
    elif isinstance(op, TFactorOp):
        _tfactor(plan, op, out)
    elif isinstance(op, OuterJoinOp):
        t = _t_at(plan, out, op.t_slot, 0)
        library_join(out.h, t, op.col, op.width, op.starts, plan.shape.t_precision)
    elif isinstance(op, LookaheadOp):
        _lookahead(a if op.update.col == 0 else out.h, plan, op, out)
    elif isinstance(op, BlockOp):
        _block(a if op.col == 0 else out.h, plan, op, out)


def _w_at(plan: Plan, out: Buffers, slot: int) -> torch.Tensor:
    """The W slot `slot` (batch × w_width × n view)."""
    return out.w[:, slot * plan.w_width : (slot + 1) * plan.w_width]


def _t_at(plan: Plan, out: Buffers, slot: int, offset: int) -> torch.Tensor:
    """The T slot `slot` from its diagonal element `offset` on (batch × rows × cols view)."""
    row = slot * plan.t_width + offset
    return out.t[:, row:, offset:]


def _fused(a: torch.Tensor, plan: Plan, op: FusedOp, out: Buffers) -> None:
    shape, h, t = plan.shape, out.h, out.t
    launch(
        qr_fused_kernel, (plan.batch,),
        a, h, out.tau, t, out.amax, plan.n, *a.stride(), h.stride(0), h.stride(1),
        out.tau.stride(0), t.stride(0),
        ROWS0=op.rows[0], ROWS1=op.rows[1], ROWS2=op.rows[2], NB=op.nb, KB=op.kb,
        NBP=dot_width(op.nb), KBP=plan.t_width, BM=shape.update_block_m, BN=shape.update_block_n,
        PRECISION=shape.update_precision, APPLY_PRECISION=shape.update_apply_precision,
        T_PRECISION=shape.t_precision, PAIR_REDUCE=shape.panel_pair_reduce and a.is_cuda,
        num_warps=op.warps, num_stages=shape.update_stages,
    )  # fmt: skip


def _panel_source(a: torch.Tensor, plan: Plan, op: PanelOp, out: Buffers) -> torch.Tensor:
    """Where a panel reads its columns: A for the first, else H; with H column-major, a row-major
    copy of them. Triton lays a tile loaded from contiguous rows out down the rows, and the
    panel's steps then cost 1.7–3× more (docs/benchmarks.md)."""
    if op.col == 0:
        return a
    if not plan.h_by_columns:
        return out.h
    if op.mirrored:
        return out.rows
    below, cols = slice(op.col, None), slice(op.col, op.col + op.nb)
    copy(out.rows[:, below, cols], out.h[:, below, cols])
    return out.rows


def _panel(src: torch.Tensor, plan: Plan, op: PanelOp, out: Buffers, single: bool) -> None:
    t = _t_at(plan, out, op.t_slot, op.t_offset)
    launch(
        qr_panel_kernel, (plan.batch,),
        src, out.h, out.tau, t, out.amax, out.live, plan.n, op.col,
        *src.stride(), *out.h.stride(), out.tau.stride(0), t.stride(0), t.stride(1),
        BLOCK_M=op.block_m, NB=op.nb, SELF_SCALE=single,
        PAIR_REDUCE=plan.shape.panel_pair_reduce and src.is_cuda,
        UNROLL=plan.shape.panel_unroll, GATHER=plan.shape.panel_gather, num_warps=op.warps,
        maxnreg=op.max_registers or None,
    )  # fmt: skip


def _split_panel(src: torch.Tensor, plan: Plan, op: SplitPanelOp, out: Buffers) -> None:
    h, q = out.h, out.q
    t = _t_at(plan, out, op.t_slot, op.t_offset)
    x, k = q, q[:, op.slabs * op.nb * op.nb :]  # X_s, then K_s, per matrix
    span = (plan.n, op.col, op.slab_rows)
    pair = plan.shape.panel_pair_reduce and src.is_cuda
    launch(
        qr_slab_kernel, (plan.batch, op.slabs),
        src, h, x, out.amax, *span, *src.stride(), *h.stride(), q.stride(0),
        SLAB_M=op.slab_m, NB=op.nb, PAIR_REDUCE=pair, num_warps=op.slab_warps,
    )  # fmt: skip
    launch(
        qr_slab_join_kernel, (plan.batch,),
        h, out.tau, t, x, k, out.amax, *span, op.slabs, *h.stride(), out.tau.stride(0),
        t.stride(0), t.stride(1), q.stride(0), q.stride(0),
        STACK_M=op.stack_m, NB=op.nb, PAIR_REDUCE=pair, num_warps=op.join_warps,
    )  # fmt: skip
    launch(
        qr_slab_rebuild_kernel, (plan.batch, op.slabs),
        h, x, k, *span, *h.stride(), q.stride(0), q.stride(0),
        SLAB_M=op.slab_m, NB=op.nb, num_warps=op.rebuild_warps,
    )  # fmt: skip


def _update(src: torch.Tensor, plan: Plan, op: UpdateOp, out: Buffers) -> None:
    shape, h = plan.shape, out.h
    t = _t_at(plan, out, op.t_slot, op.t_offset)
    if op.library:
        span = (op.col, op.nb, op.c_start, op.c_end)
        precisions = (shape.update_precision, shape.update_apply_precision)
        library_update(src, h, t, out.scale, *span, precisions, shape.update_library_split)
        return
    col_blocks = triton.cdiv(op.c_end - op.c_start, op.block_n)
    tiles = dict(NBP=op.dot_width, BM=op.block_m, BN=op.block_n)
    tiles |= dict(PRECISION=shape.update_precision, num_warps=op.warps)
    tiles |= dict(maxnreg=op.max_registers or None)
    apply = dict(APPLY_PRECISION=shape.update_apply_precision)
    hints = l2_hints(shape.update_l2_hints)
    span = (plan.n, op.col, op.nb, op.c_start, op.c_end)
    w = _w_at(plan, out, op.w_slot)
    mirror = mirror_kwargs(h, out.rows if op.mirror else None, op.c_start + op.mirror)
    if op.two_pass:
        launch(
            qr_update_tw_kernel, (plan.batch * col_blocks,),
            src, h, t, w, out.amax, *span, *src.stride(), *h.stride(), t.stride(0), t.stride(1),
            w.stride(0), w.stride(1), num_stages=shape.update_stages, KEEP=hints["KEEP"],
            **tiles,
        )  # fmt: skip
    elif op.slab_rows:
        # Only what the slabs add into: zeroing all of W took 4.4 µs a launch at 60 × 1024 on an
        # H200, 0.23 ms a factorization (most of it under 16-reflector updates of ≤ 48 columns).
        # Most of these parts are zeroed by the update before, in the other slot (w_next).
        if not op.w_zeroed:
            zero(w[:, : op.nb, op.c_start : op.c_end])
        following = op.w_next or (0, 0, 0)
        other = _w_at(plan, out, 1 - op.w_slot) if op.w_next else w
        slabs = triton.cdiv(plan.n - op.col, op.slab_rows)
        launch(
            qr_update_w_kernel, (plan.batch, col_blocks, slabs),
            src, h, w, other, out.amax, *span, op.slab_rows, *following, *src.stride(),
            *h.stride(),
            w.stride(0), w.stride(1), num_stages=shape.update_stages,
            BY_COLUMNS=shape.update_w_by_columns, **tiles,
        )  # fmt: skip
    else:
        ahead = shape.update_stages if op.apply_ahead else None
        launch(
            qr_update_kernel, (plan.batch * col_blocks,),
            src, h, t, out.amax, out.live, *span, *src.stride(), *h.stride(), t.stride(0),
            t.stride(1), num_stages=shape.update_stages, **tiles, **apply, **hints, **mirror,
            APPLY_STAGES=ahead,
        )  # fmt: skip
        return
    row_blocks = triton.cdiv(plan.n - op.col, op.block_m)
    launch(
        qr_update_apply_kernel, (plan.batch * row_blocks * col_blocks,),
        src, h, w, t, out.amax, *span, *src.stride(), *h.stride(),
        w.stride(0), w.stride(1), t.stride(0), t.stride(1), W_HAS_T=op.two_pass, **tiles,
        **apply, **mirror,
    )  # fmt: skip


def mirror_kwargs(
    stand_in: torch.Tensor, rows: torch.Tensor | None = None, end: int = 0
) -> dict[str, object]:
    """The update kernels' store_mirror arguments: `rows`, the panels' row-major copy, gets the
    columns before `end`; without it nothing is mirrored, and `stand_in`, any tensor on the
    device, fills the pointer that is then never read."""
    target = stand_in if rows is None else rows
    mirror = dict(mirror_ptr=target, mirror_sb=target.stride(0), mirror_sr=target.stride(1))
    return mirror | dict(mirror_end=end, MIRROR=rows is not None)


def l2_hints(on: bool) -> dict[str, str]:
    """The fused update's L2 policies: V, and C until its second read, kept; C's second read and
    its stores let through to be evicted first. Off, both are the default policy."""
    return dict(KEEP="evict_last", ONCE="evict_first") if on else dict(KEEP="", ONCE="")


def _lookahead(src: torch.Tensor, plan: Plan, op: LookaheadOp, out: Buffers) -> None:
    shape, h, up, panel = plan.shape, out.h, op.update, op.panel
    t = _t_at(plan, out, up.t_slot, up.t_offset)
    tp = _t_at(plan, out, panel.t_slot, panel.t_offset)
    rest = triton.cdiv(max(0, up.c_end - op.rest_start), up.block_n)
    launch(
        qr_lookahead_kernel, (plan.batch, 1 + rest),
        src, h, out.tau, t, tp, out.amax, plan.n, up.col, up.nb, panel.col, up.c_end,
        *src.stride(), *h.stride(), out.tau.stride(0), t.stride(0), t.stride(1),
        NBP=up.dot_width, BM=up.block_m, BN=up.block_n,
        PANEL_M=panel.block_m, PNB=panel.nb, PNBP=dot_width(panel.nb),
        PRECISION=shape.update_precision, APPLY_PRECISION=shape.update_apply_precision,
        PAIR_REDUCE=shape.panel_pair_reduce and src.is_cuda, UNROLL=shape.panel_unroll,
        GATHER=shape.panel_gather, num_warps=op.warps, num_stages=shape.update_stages,
        maxnreg=up.max_registers or None,
    )  # fmt: skip


def _block(src: torch.Tensor, plan: Plan, op: BlockOp, out: Buffers) -> None:
    shape, h = plan.shape, out.h
    t = _t_at(plan, out, op.t_slot, op.t_offset)
    launch(
        qr_block_kernel, (plan.batch,),
        src, h, out.tau, t, out.amax, plan.n, op.col, op.width, *src.stride(), *h.stride(),
        out.tau.stride(0), t.stride(0), t.stride(1),
        PANEL_M=op.panel_m, NB=op.nb, NBP=dot_width(op.nb), KBP=op.dot_width,
        BM=op.block_m, BN=op.block_n, PRECISION=shape.update_precision,
        APPLY_PRECISION=shape.update_apply_precision, T_PRECISION=shape.t_precision,
        PAIR_REDUCE=shape.panel_pair_reduce and src.is_cuda,
        num_warps=op.warps, num_stages=shape.update_stages,
    )  # fmt: skip


def _tfactor(plan: Plan, op: TFactorOp, out: Buffers) -> None:
    h, g, shape = out.h, out.g, plan.shape
    t = _t_at(plan, out, op.t_slot, op.t_offset)
    tiles = dict(KBP=op.dot_width, BM=shape.update_block_m, PRECISION=shape.t_precision)
    slabs = triton.cdiv(plan.n - op.col, op.gram_rows) if op.gram_rows else 0
    if slabs:
        launch(
            qr_gram_kernel, (plan.batch, slabs),
            h, g, plan.n, op.col, op.width, op.gram_rows, *h.stride(), g.stride(0),
            num_warps=op.warps, **tiles,
        )  # fmt: skip
    launch(
        qr_tfactor_kernel, (plan.batch,),
        h, t, g, plan.n, op.col, op.width, op.nb, slabs, *h.stride(), t.stride(0), t.stride(1),
        g.stride(0), NBP=dot_width(op.nb), FROM_PARTS=bool(slabs), num_warps=op.warps, **tiles,
    )  # fmt: skip
