"""Whole-matrix path: one program factors one matrix, panels + T + trailing updates in one launch.

For small n the blocked path's launches, not its arithmetic, set the time. Here one program per
matrix copies A into H (finding |A|max on the way), then runs the same two-level compact-WY
algorithm as the launch sequence: blocks of KB columns, each factored as panels of NB columns held
in registers (householder_tile); after each panel the rest of its block is updated, the panels'
T's are joined (join_t), and the trailing matrix is updated once per block (update_columns). The
matrix stays in global memory (L1/L2-resident at these sizes); a barrier separates every stage's
stores from the next stage's loads, which other threads of the same program make. Panels take the
smallest of three row tiles that holds them, so late, short panels do not pay for the first one.
"""

import triton
import triton.language as tl

from .panel import householder_tile
from .scale import abs_or_inf, scale_for
from .tfactor import join_t
from .update import update_columns


@triton.jit
def _copy_in(a, h, n, a_sr, a_sc, h_sr, BM: tl.constexpr, BN: tl.constexpr):
    """H ← A tile by tile (A may have any strides); returns |A|max (+inf if A holds NaN/Inf)."""
    best = tl.zeros((BM, BN), tl.float32)
    for r0 in range(0, n, BM):
        rows = r0 + tl.arange(0, BM)
        for c0 in range(0, n, BN):
            cols = c0 + tl.arange(0, BN)
            mask = (rows[:, None] < n) & (cols[None, :] < n)
            x = tl.load(a + rows[:, None] * a_sr + cols[None, :] * a_sc, mask=mask, other=0.0)
            tl.store(h + rows[:, None] * h_sr + cols[None, :], x, mask=mask)
            best = tl.maximum(best, abs_or_inf(x))
    return tl.max(tl.max(best, axis=1), axis=0)


@triton.jit
def _rescale(h, n, h_sr, factor, UPPER: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """H ← H·factor, on the upper triangle only (R) when UPPER, else everywhere."""
    for r0 in range(0, n, BM):
        rows = r0 + tl.arange(0, BM)
        for c0 in range(0, n, BN):
            cols = c0 + tl.arange(0, BN)
            mask = (rows[:, None] < n) & (cols[None, :] < n)
            if UPPER:
                mask = mask & (rows[:, None] <= cols[None, :])
            offs = rows[:, None] * h_sr + cols[None, :]
            tl.store(h + offs, tl.load(h + offs, mask=mask) * factor, mask=mask)


@triton.jit
def _factor_panel(
    h,
    tau,
    t,
    n,
    col,
    t_off,  # where the panel's T goes on the diagonal of the block's T
    h_sr,
    t_sr,
    ROWS: tl.constexpr,  # ≥ n − col
    NB: tl.constexpr,
    PAIR_REDUCE: tl.constexpr,
):
    """Factor H[col:, col:col+NB] ∩ H in registers; store V/R, tau and the panel's T."""
    r = tl.arange(0, ROWS)
    c = tl.arange(0, NB)
    ncols = tl.minimum(NB, n - col)
    mask = (r[:, None] < n - col) & (c[None, :] < ncols)
    offs = (col + r)[:, None] * h_sr + (col + c)[None, :]
    p = tl.load(h + offs, mask=mask, other=0.0)  # ROWS × NB
    p, tt, taus = householder_tile(p, ROWS, NB, PAIR_REDUCE, False, False, False)
    tl.store(h + offs, p, mask=mask)
    tl.store(tau + col + c[None, :], taus, mask=c[None, :] < ncols)
    tl.store(t + (t_off + c[:, None]) * t_sr + t_off + c[None, :], tt)


@triton.jit
def qr_fused_kernel(
    a_ptr,  # batch × n × n, any strides: the input, never written
    h_ptr,  # batch × n × n, contiguous rows: H out
    tau_ptr,  # batch × n
    t_ptr,  # batch × KBP × KBP: scratch for the T of the current block
    amax_ptr,  # batch: |A|max out (the caller's NaN/Inf check)
    n,
    a_sb,
    a_sr,
    a_sc,
    h_sb,
    h_sr,
    tau_sb,
    t_sb,
    ROWS0: tl.constexpr,  # next power of two ≥ n: the first panels' row tile
    ROWS1: tl.constexpr,  # ROWS0 / 2 (≥ 16)
    ROWS2: tl.constexpr,  # ROWS0 / 4 (≥ 16)
    NB: tl.constexpr,  # panel width (a power of two)
    KB: tl.constexpr,  # block width: a multiple of NB
    NBP: tl.constexpr,  # NB as tl.dot sees it (≥ 16)
    KBP: tl.constexpr,  # KB as tl.dot sees it (≥ 16)
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,  # Vᵀ·C and Tᵀ·W
    APPLY_PRECISION: tl.constexpr,  # V·W
    T_PRECISION: tl.constexpr,  # VᵀV and the T joins
    PAIR_REDUCE: tl.constexpr,
):
    """One program per matrix: the whole blocked compact-WY QR of that matrix."""
    b = tl.program_id(0).to(tl.int64)
    a = a_ptr + b * a_sb
    h = h_ptr + b * h_sb
    tau = tau_ptr + b * tau_sb
    t = t_ptr + b * t_sb
    amax = _copy_in(a, h, n, a_sr, a_sc, h_sr, BM, BN)
    tl.store(amax_ptr + b, amax)
    scale = scale_for(amax)
    if scale != 1.0:
        _rescale(h, n, h_sr, scale, False, BM, BN)
    tl.debug_barrier()

    for k0 in range(0, n, KB):
        k1 = tl.minimum(k0 + KB, n)
        for j0 in range(k0, k1, NB):
            if n - j0 > ROWS1:
                _factor_panel(h, tau, t, n, j0, j0 - k0, h_sr, KBP, ROWS0, NB, PAIR_REDUCE)
            elif n - j0 > ROWS2:
                _factor_panel(h, tau, t, n, j0, j0 - k0, h_sr, KBP, ROWS1, NB, PAIR_REDUCE)
            else:
                _factor_panel(h, tau, t, n, j0, j0 - k0, h_sr, KBP, ROWS2, NB, PAIR_REDUCE)
            tl.debug_barrier()
            if j0 + NB < k1:  # the rest of the block takes this panel's reflectors
                t_panel = t + (j0 - k0) * (KBP + 1)
                for c0 in range(j0 + NB, k1, BN):
                    cols = c0 + tl.arange(0, BN)
                    update_columns(
                        h, h, t_panel, KBP, n, j0, NB, cols, k1, 1.0, 1.0, h_sr, 1, h_sr, 1,
                        NBP, BM, BN, PRECISION, APPLY_PRECISION, "", "", h, 0, 0, False, None,
                    )  # fmt: skip
                tl.debug_barrier()
        if k1 < n:  # the trailing matrix takes the whole block's reflectors once
            if k1 - k0 > NB:
                join_t(
                    h, t, n, k0, k1 - k0, NB, h_sr, 1, KBP, t, 0, KBP, NBP, BM, T_PRECISION, False
                )
                tl.debug_barrier()
            for c0 in range(k1, n, BN):
                cols = c0 + tl.arange(0, BN)
                update_columns(
                    h, h, t, KBP, n, k0, k1 - k0, cols, n, 1.0, 1.0, h_sr, 1, h_sr, 1, KBP, BM,
                    BN, PRECISION, APPLY_PRECISION, "", "", h, 0, 0, False, None,
                )  # fmt: skip
            tl.debug_barrier()

    if scale != 1.0:
        _rescale(h, n, h_sr, 1.0 / scale, True, BM, BN)
