"""Trailing update that carries W from one block to the next (`update_carry_w`).

The fused update (update.py) walks C's rows twice per block: once for W = Vᵀ·C, once to apply
C − V·(Tᵀ·W). Once the next block is factored before the rest of this block's update, the apply
walk can also sum the next block's W' = V'ᵀ·C on the values it just computed, and the next
update skips its first walk: one pass over the trailing matrix per block instead of two. The next
block's own columns are updated first, by a short update whose W was carried too, then factored;
T alternates between two slots, since the next block's T is written while this one's is read.

W' for the columns this launch updates goes to the plan's W scratch, where each program reads its
own columns' W first and writes their W' last, so no two programs share a column of it. The sums
are those the next update's first walk would take, on the same fp32 values and at the same
precision, so the factors do not change beyond the order of the sums.
"""

import triton
import triton.language as tl

from .scale import scale_for
from .update import load_v


@triton.jit
def qr_update_carry_kernel(
    src_ptr,  # batch × n × n: C is read from here (A for the first block's updates)
    dst_ptr,  # batch × n × n: H, holding V and (if NEXT) the next block's V; C written here
    t_ptr,  # batch × NBP × NBP (row stride t_sr): this block's T
    w_ptr,  # batch × ≥NBP × n: W carried in (W_GIVEN) and the next block's W' carried out (NEXT)
    amax_ptr,  # batch: |A|max
    n,
    col0,  # this block's first column and row
    nb,  # this block's width (≤ NBP)
    next0,  # the next block's first column (if NEXT)
    next_nb,  # its width (≤ NEXT_NBP)
    c_start,  # first column to update
    c_end,  # one past the last column to update
    src_sb,
    src_sr,
    src_sc,
    dst_sb,
    dst_sr,
    dst_sc,
    t_sb,
    t_sr,
    w_sb,
    w_sr,
    NBP: tl.constexpr,
    NEXT_NBP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    APPLY_PRECISION: tl.constexpr,
    W_GIVEN: tl.constexpr,  # W = Vᵀ·C of these columns is in w_ptr: skip the first walk
    NEXT: tl.constexpr,  # sum the next block's W' = V'ᵀ·C on the updated columns into w_ptr
):
    """Grid (batch × column blocks,), a matrix's column blocks adjacent, as qr_update_kernel."""
    col_blocks = tl.cdiv(c_end - c_start, BN)
    b = (tl.program_id(0) // col_blocks).to(tl.int64)
    cols = c_start + (tl.program_id(0) % col_blocks) * BN + tl.arange(0, BN)
    src, dst, w_at = src_ptr + b * src_sb, dst_ptr + b * dst_sb, w_ptr + b * w_sb
    scale = scale_for(tl.load(amax_ptr + b))
    scale_in = tl.where(col0 == 0, scale, 1.0)  # only the first block's updates read A
    k = tl.arange(0, NBP)
    in_cols = cols[None, :] < c_end
    if W_GIVEN:
        w_mask = (k[:, None] < nb) & in_cols
        w = tl.load(w_at + k[:, None] * w_sr + cols[None, :], mask=w_mask, other=0.0)
    else:
        w = tl.zeros((NBP, BN), tl.float32)
        for r0 in range(col0, n, BM):
            rows = r0 + tl.arange(0, BM)
            v = load_v(dst, rows, k, n, col0, nb, dst_sr, dst_sc, "")  # BM × NBP
            mask = (rows[:, None] < n) & in_cols
            c = tl.load(src + rows[:, None] * src_sr + cols[None, :] * src_sc, mask=mask, other=0.0)
            w = tl.dot(tl.trans(v), c * scale_in, w, input_precision=PRECISION)  # NBP × BN

    tmask = (k[:, None] < nb) & (k[None, :] < nb)
    tt = tl.load(t_ptr + b * t_sb + k[:, None] * t_sr + k[None, :], mask=tmask, other=0.0)
    w = tl.dot(tl.trans(tt), w, input_precision=PRECISION)  # Tᵀ·Vᵀ·C

    k_next = tl.arange(0, NEXT_NBP)
    w_next = tl.zeros((NEXT_NBP, BN), tl.float32)
    for r0 in range(col0, n, BM):
        rows = r0 + tl.arange(0, BM)
        v = load_v(dst, rows, k, n, col0, nb, dst_sr, dst_sc, "")
        mask = (rows[:, None] < n) & in_cols
        c = tl.load(src + rows[:, None] * src_sr + cols[None, :] * src_sc, mask=mask, other=0.0)
        c = c * scale_in - tl.dot(v, w, input_precision=APPLY_PRECISION)
        if NEXT:  # V' is zero above next0, so the rows that became final R add nothing
            v_next = load_v(dst, rows, k_next, n, next0, next_nb, dst_sr, dst_sc, "")
            w_next = tl.dot(tl.trans(v_next), c, w_next, input_precision=PRECISION)
        c = tl.where(rows[:, None] < col0 + nb, c / scale, c)  # final R rows
        tl.store(dst + rows[:, None] * dst_sr + cols[None, :] * dst_sc, c, mask=mask)

    if NEXT:
        next_mask = (k_next[:, None] < next_nb) & in_cols
        tl.store(w_at + k_next[:, None] * w_sr + cols[None, :], w_next, mask=next_mask)
