"""Trailing-update stage, row-split: the same C ← C − V·(Tᵀ·(Vᵀ·C)) for batches too small to fill
the GPU with one program per column block (2 × 4096 has 128 such blocks, each 4096 rows deep).

qr_update_w_kernel sums W = Vᵀ·C over row slabs in parallel, adding each slab's part into a zeroed
W buffer with atomics, and zeroes the next row-split update's part of the other W buffer, so that
update needs no fill launch of its own; qr_update_apply_kernel then gives every (row block,
column block) tile its own program, which forms Tᵀ·W for its columns and subtracts V·(Tᵀ·W).
Precisions as in update.py.
The two-pass update (update.py's qr_update_tw_kernel) ends with the same apply kernel, its W
already multiplied by Tᵀ.
"""

import triton
import triton.language as tl

from .products import column_fit, fitted_product, product, reflector_fit, trailing_fit
from .scale import scale_for
from .update import load_v, store_mirror


@triton.jit
def qr_update_w_kernel(
    src_ptr,  # batch × n × n: C is read from here (A for an update whose panel starts at 0)
    dst_ptr,  # batch × n × n: H, holding V in the panel's columns
    w_ptr,  # batch × ≥NBP × n, zeroed: W = Vᵀ·C accumulates into columns [c_start, c_end)
    next_w_ptr,  # the other W buffer (w_ptr's strides), where the next row-split update sums
    amax_ptr,
    n,
    col0,
    nb,
    c_start,
    c_end,
    slab_rows,  # rows per program, a multiple of BM
    next_nb,  # the next row-split update's part of W: rows [0, next_nb) × columns
    next_start,  # [next_start, next_end), zeroed here by the first slab's programs (0, 0, 0:
    next_end,  # none)
    src_sb,
    src_sr,
    src_sc,
    dst_sb,
    dst_sr,
    dst_sc,
    w_sb,
    w_sr,
    NBP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    BY_COLUMNS: tl.constexpr,  # `update_w_by_columns`: (Cᵀ·V)ᵀ, the columns of C along M
):
    """Grid (batch, column blocks, row slabs): one slab's share of Vᵀ·C, added atomically.
    The update before this one finished reading the other W buffer, so zeroing there is safe.
    Vᵀ·C puts NBP (16 or 32) along the product's M, below the 64 rows that sm_90's warpgroup
    MMA takes, so it runs as mma.sync with its fp32 operands read from shared memory one word
    at a time; Cᵀ·V puts BN there instead (sm_90, Triton 3.6, 2 × 4096's launch: 128 scalar
    shared loads a row step → 64, 140 registers → 94)."""
    b = tl.program_id(0).to(tl.int64)
    cols = c_start + tl.program_id(1) * BN + tl.arange(0, BN)
    first = col0 + tl.program_id(2) * slab_rows
    k = tl.arange(0, NBP)
    src = src_ptr + b * src_sb
    dst = dst_ptr + b * dst_sb
    scale_in = tl.where(col0 == 0, scale_for(tl.load(amax_ptr + b)), 1.0)
    fit = trailing_fit(n)
    if BY_COLUMNS:
        wt = tl.zeros((BN, NBP), tl.float32)
    else:
        w = tl.zeros((NBP, BN), tl.float32)
    for r0 in range(first, tl.minimum(first + slab_rows, n), BM):
        rows = r0 + tl.arange(0, BM)
        v = load_v(dst, rows, k, n, col0, nb, dst_sr, dst_sc, "")  # BM × NBP
        mask = (rows[:, None] < n) & (cols[None, :] < c_end)
        c = tl.load(src + rows[:, None] * src_sr + cols[None, :] * src_sc, mask=mask, other=0.0)
        if BY_COLUMNS:
            wt += fitted_product(tl.trans(c * scale_in), fit, v, reflector_fit(), PRECISION)
        else:
            w += fitted_product(tl.trans(v), reflector_fit(), c * scale_in, fit, PRECISION)
    if BY_COLUMNS:
        w = tl.trans(wt)
    wmask = (k[:, None] < nb) & (cols[None, :] < c_end)
    tl.atomic_add(w_ptr + b * w_sb + k[:, None] * w_sr + cols[None, :], w, mask=wmask)
    if tl.program_id(2) == 0:
        zero_next_w(next_w_ptr + b * w_sb, w_sr, next_nb, next_start, next_end, NBP, BN)


@triton.jit
def zero_next_w(w, w_sr, nb, start, end, NBP: tl.constexpr, BN: tl.constexpr):
    """Rows [0, nb) × columns [start, end) of one matrix's W, shared by the column blocks."""
    step = tl.num_programs(1) * BN
    zeros = tl.zeros((NBP, BN), tl.float32)
    for c0 in range(start + tl.program_id(1) * BN, end, step):
        cols = c0 + tl.arange(0, BN)
        for r0 in range(0, nb, NBP):
            rows = r0 + tl.arange(0, NBP)
            mask = (rows[:, None] < nb) & (cols[None, :] < end)
            tl.store(w + rows[:, None] * w_sr + cols[None, :], zeros, mask=mask)


@triton.jit
def qr_update_apply_kernel(
    src_ptr,
    dst_ptr,
    w_ptr,  # batch × ≥NBP × n: the finished W = Vᵀ·C
    t_ptr,  # batch × NBP × NBP (row stride t_sr)
    amax_ptr,
    n,
    col0,
    nb,
    c_start,
    c_end,
    src_sb,
    src_sr,
    src_sc,
    dst_sb,
    dst_sr,
    dst_sc,
    w_sb,
    w_sr,
    t_sb,
    t_sr,
    NBP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    APPLY_PRECISION: tl.constexpr,
    W_HAS_T: tl.constexpr,  # W is already Tᵀ·Vᵀ·C (the two-pass update's), not Vᵀ·C
    mirror_ptr,  # as qr_update_kernel's (update.py)
    mirror_sb,
    mirror_sr,
    mirror_end,
    MIRROR: tl.constexpr,
):
    """Grid (batch × row blocks × column blocks,): C_tile ← C_tile − V_rows·(Tᵀ·W_cols). A
    matrix's tiles are adjacent, column blocks innermost, so the programs resident together
    share V's rows and W in L2 instead of each reading another matrix's."""
    col_blocks = tl.cdiv(c_end - c_start, BN)
    tiles = tl.cdiv(n - col0, BM) * col_blocks
    b = (tl.program_id(0) // tiles).to(tl.int64)
    tile = tl.program_id(0) % tiles
    cols = c_start + (tile % col_blocks) * BN + tl.arange(0, BN)
    rows = col0 + (tile // col_blocks) * BM + tl.arange(0, BM)
    k = tl.arange(0, NBP)
    src = src_ptr + b * src_sb
    dst = dst_ptr + b * dst_sb
    scale = scale_for(tl.load(amax_ptr + b))
    scale_in = tl.where(col0 == 0, scale, 1.0)

    wmask = (k[:, None] < nb) & (cols[None, :] < c_end)
    w = tl.load(w_ptr + b * w_sb + k[:, None] * w_sr + cols[None, :], mask=wmask, other=0.0)
    if not W_HAS_T:
        tmask = (k[:, None] < nb) & (k[None, :] < nb)
        t = tl.load(t_ptr + b * t_sb + k[:, None] * t_sr + k[None, :], mask=tmask, other=0.0)
        w = product(tl.trans(t), w, PRECISION)  # NBP × BN

    v = load_v(dst, rows, k, n, col0, nb, dst_sr, dst_sc, "")
    mask = (rows[:, None] < n) & (cols[None, :] < c_end)
    c = tl.load(src + rows[:, None] * src_sr + cols[None, :] * src_sc, mask=mask, other=0.0)
    c = c * scale_in - fitted_product(
        v, reflector_fit(), w, column_fit(w, APPLY_PRECISION), APPLY_PRECISION
    )
    c = tl.where(rows[:, None] < col0 + nb, c * (1.0 / scale), c)
    tl.store(dst + rows[:, None] * dst_sr + cols[None, :] * dst_sc, c, mask=mask)
    store_mirror(mirror_ptr + b * mirror_sb, rows, cols, c, mask, mirror_sr, mirror_end, MIRROR)
