"""Block stage: one launch factors a whole block of columns, one program per matrix.

The blocked launches factor a block as a chain of small launches (each panel, the update of the
rest of the block after it, then the T join), and every one of them runs one program per matrix:
at 640×512, 64 of its 72 launches. Here one program runs that chain for its matrix, so the
block's columns pass between stages through L1/L2 instead of between launches, and the GPU
drains and refills once per block instead of once per stage. A barrier separates every stage's
stores from the next stage's loads, which other threads of the same program make (as fused.py
does for a whole matrix). The trailing update after the block is still update.py's, over many
programs per matrix.
"""

import triton
import triton.language as tl

from .panel import factor_and_store
from .scale import scale_for
from .tfactor import join_t
from .update import update_columns


@triton.jit
def qr_block_kernel(
    src_ptr,  # batch × n × n: the block's columns are read from here (A for the first block)
    h_ptr,  # batch × n × n: H, written with the block's V and R
    tau_ptr,  # batch × n
    t_ptr,  # batch × KBP × KBP (row stride t_sr): the block's T, panel T's on its diagonal
    amax_ptr,  # batch: |A|max
    n,
    col0,  # the block's first column (and row)
    width,  # the block's width: a multiple of NB, > NB
    src_sb,
    src_sr,
    src_sc,
    h_sb,
    h_sr,
    h_sc,
    tau_sb,
    t_sb,
    t_sr,
    PANEL_M: tl.constexpr,  # ≥ n − col0, a power of two: every panel's row tile
    NB: tl.constexpr,  # panel width, a power of two
    NBP: tl.constexpr,  # NB as tl.dot sees it (≥ 16)
    KBP: tl.constexpr,  # width as tl.dot sees it
    BM: tl.constexpr,  # rows per step of the inner updates and of VᵀV
    BN: tl.constexpr,  # columns per step of the inner updates
    PRECISION: tl.constexpr,
    APPLY_PRECISION: tl.constexpr,
    T_PRECISION: tl.constexpr,
    PAIR_REDUCE: tl.constexpr,
):
    """Grid (batch,): the panels of [col0, col0 + width), the update of the rest of the block
    after each, and the block's T."""
    b = tl.program_id(0).to(tl.int64)
    src = src_ptr + b * src_sb
    h = h_ptr + b * h_sb
    tau = tau_ptr + b * tau_sb
    t = t_ptr + b * t_sb
    scale = scale_for(tl.load(amax_ptr + b))
    k1 = tl.minimum(col0 + width, n)
    r = tl.arange(0, PANEL_M)
    c = tl.arange(0, NB)
    for j0 in range(col0, k1, NB):
        m = n - j0
        mask = (r[:, None] < m) & (c[None, :] < tl.minimum(m, NB))
        if j0 == 0:  # the matrix's first panel: A, brought to the working scale
            offs = (j0 + r)[:, None] * src_sr + (j0 + c)[None, :] * src_sc
            p = tl.load(src + offs, mask=mask, other=0.0) * scale
        else:
            offs = (j0 + r)[:, None] * h_sr + (j0 + c)[None, :] * h_sc
            p = tl.load(h + offs, mask=mask, other=0.0)
        t_panel = t + (j0 - col0) * (t_sr + 1)
        factor_and_store(
            p, h, tau, t_panel, m, j0, scale, h_sr, h_sc, t_sr, PANEL_M, NB, PAIR_REDUCE,
            False, False, False,
        )  # fmt: skip
        tl.debug_barrier()
        for c0 in range(j0 + NB, k1, BN):  # the rest of the block takes this panel's reflectors
            cols = c0 + tl.arange(0, BN)
            if j0 == 0:  # those columns are still A's
                update_columns(
                    src, h, t_panel, t_sr, n, j0, NB, cols, k1, scale, scale, src_sr, src_sc, h_sr,
                    h_sc, NBP, BM, BN, PRECISION, APPLY_PRECISION, "", "", h, 0, 0, False, None,
                )  # fmt: skip
            else:
                update_columns(
                    h, h, t_panel, t_sr, n, j0, NB, cols, k1, 1.0, scale, h_sr, h_sc, h_sr,
                    h_sc, NBP, BM, BN, PRECISION, APPLY_PRECISION, "", "", h, 0, 0, False, None,
                )  # fmt: skip
        tl.debug_barrier()
    join_t(h, t, n, col0, k1 - col0, NB, h_sr, h_sc, t_sr, t, 0, KBP, NBP, BM, T_PRECISION, False)
