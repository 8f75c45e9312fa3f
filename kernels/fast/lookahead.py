"""Look-ahead stage: one launch that updates the trailing columns and factors the next panel.

Without it a panel waits for the whole update before it, and the update for the panel before it,
so the GPU runs the panel's reflector chain (one program per matrix) with most SMs idle. Here the
program (b, 0) first takes matrix b's next-panel columns through the update itself
(update_columns, both passes over its rows), then, after a barrier that makes its stores visible
to its own threads, factors that panel in registers (factor_and_store); the programs (b, j ≥ 1)
meanwhile apply the same update to the columns right of the panel, which the panel never reads.
The panel's T goes to its own place in the T buffers: on the block's diagonal away from the
update's T, or, for a block's first panel, in the other T slot (plan.py alternates them).
"""

import triton
import triton.language as tl

from .panel import factor_and_store
from .scale import scale_for
from .update import update_columns


@triton.jit
def qr_lookahead_kernel(
    src_ptr,  # batch × n × n: C is read from here (A when the update's reflectors start at 0)
    h_ptr,  # batch × n × n: H, holding the update's V; C and the panel are written here
    tau_ptr,  # batch × n
    t_ptr,  # batch × NBP × NBP (row stride t_sr): the update's T
    tp_ptr,  # batch × PNB × PNB (row stride t_sr): the panel's T, written
    amax_ptr,  # batch: |A|max
    n,
    col0,  # the update's first reflector column (and row)
    nb,  # how many reflectors the update applies (≤ NBP)
    pcol,  # the panel's first column: the update covers [pcol, c_end)
    c_end,
    src_sb,
    src_sr,
    src_sc,
    h_sb,
    h_sr,
    h_sc,
    tau_sb,
    t_sb,
    t_sr,
    NBP: tl.constexpr,  # nb padded for tl.dot
    BM: tl.constexpr,
    BN: tl.constexpr,
    PANEL_M: tl.constexpr,  # ≥ n − pcol, a power of two: the panel's row tile
    PNB: tl.constexpr,  # panel width, a power of two
    PNBP: tl.constexpr,  # PNB as tl.dot sees it (≥ 16): the panel program's column tile
    PRECISION: tl.constexpr,
    APPLY_PRECISION: tl.constexpr,
    PAIR_REDUCE: tl.constexpr,
    UNROLL: tl.constexpr,  # the panel's reflector steps unrolled (`panel_unroll`)
    GATHER: tl.constexpr,  # the panel's column i by a gather along the lanes (`panel_gather`)
):
    """Grid (batch, 1 + column blocks of [pcol + PNB, c_end)): program 0 the panel, the rest BN
    trailing columns each."""
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    src = src_ptr + b * src_sb
    h = h_ptr + b * h_sb
    t = t_ptr + b * t_sb
    scale = scale_for(tl.load(amax_ptr + b))
    scale_in = tl.where(col0 == 0, scale, 1.0)  # only an update of the first block reads A
    # A name bound in both branches of this runtime `if` must have one type there, so the
    # panel's PNBP columns and the update's BN columns go by different names.
    if j == 0:
        p_end = tl.minimum(pcol + PNB, n)
        panel_cols = pcol + tl.arange(0, PNBP)
        update_columns(
            src, h, t, t_sr, n, col0, nb, panel_cols, p_end, scale_in, scale, src_sr, src_sc, h_sr,
            h_sc, NBP, BM, PNBP, PRECISION, APPLY_PRECISION, "", "", h, 0, 0, False, None,
        )  # fmt: skip
        tl.debug_barrier()
        m = n - pcol
        r = tl.arange(0, PANEL_M)
        c = tl.arange(0, PNB)
        mask = (r[:, None] < m) & (c[None, :] < tl.minimum(m, PNB))
        offs = (pcol + r)[:, None] * h_sr + (pcol + c)[None, :] * h_sc
        p = tl.load(h + offs, mask=mask, other=0.0)  # PANEL_M × PNB
        factor_and_store(
            p, h, tau_ptr + b * tau_sb, tp_ptr + b * t_sb, m, pcol, scale, h_sr, h_sc, t_sr,
            PANEL_M, PNB, PAIR_REDUCE, False, UNROLL, GATHER,
        )  # fmt: skip
    else:
        rest_cols = pcol + PNB + (j - 1) * BN + tl.arange(0, BN)
        update_columns(
            src, h, t, t_sr, n, col0, nb, rest_cols, c_end, scale_in, scale, src_sr, src_sc, h_sr,
            h_sc, NBP, BM, BN, PRECISION, APPLY_PRECISION, "", "", h, 0, 0, False, None,
        )  # fmt: skip
