"""Panel stage: Householder QR of one column panel per matrix, held in registers, and its T.

Each step needs one cross-warp reduction: the pair (zᶜ, ρᶜ) = (Σ_{r>i} x_r·P_rc, P_ic) over the
panel's rows. From it come alpha = ρᵢ and ‖x_tail‖² = zᵢ (LAPACK larfg conventions), the update
vector w = vᵢᵀP = ρ + z/(alpha − beta) for the columns right of i, and, for free, the columns left
of i: wᶜ = (Vᵀvᵢ)ᶜ, the Gram column that T needs. T is then grown one column per step by forward
substitution on T⁻¹ = diag(1/τ) + strict_upper(VᵀV):
    T[:i, i] = −τᵢ·T[:i, :i]·(Vᵀvᵢ)[:i],  T[i, i] = τᵢ,
which never divides by τ, so a reflector with τ = 0 leaves a zero row and column in T.
"""

import triton
import triton.language as tl

from .scale import abs_or_inf, scale_for


@triton.jit
def _add_pair(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@triton.jit
def householder_tile(
    p,
    BLOCK_M: tl.constexpr,
    NB: tl.constexpr,
    PAIR_REDUCE: tl.constexpr,
    SKIP_T: tl.constexpr,  # nothing reads the tile's T (a panel that is the whole matrix)
    UNROLL: tl.constexpr,  # the NB steps unrolled at compile time (`panel_unroll`)
    GATHER: tl.constexpr,  # column i taken by a gather along the lanes (`panel_gather`)
):
    """Householder QR of a BLOCK_M × NB register tile (rows past the matrix are zero).

    Returns the tile with R on and above its diagonal and V below it, the tile's T (NB × NB;
    zero under SKIP_T, which saves a reduction a step) and its taus (1 × NB); shared by the panel
    program and the fused whole-matrix program. Unrolled, each step knows its column at compile
    time, so the selects that replace column i and mask the columns left of it vanish: 34% fewer
    sm_90 instructions at 32 × 32 and 15% at 512 × 16, for 7–9 times the code and 6–20 times the
    compile time (kernels/README.md).
    """
    r = tl.arange(0, BLOCK_M)
    c = tl.arange(0, NB)
    # Every vector stays a 2-D row (1 × NB) or column (BLOCK_M × 1) of p's layout, and scalars
    # are 1 × 1: their reductions then stay inside warps and need no layout conversions.
    rows = r[:, None]  # BLOCK_M × 1
    cols = c[None, :]  # 1 × NB
    t_rows = c[:, None]  # NB × 1
    t = tl.zeros((NB, NB), tl.float32)
    taus = tl.zeros((1, NB), tl.float32)
    if UNROLL:
        for i in tl.static_range(NB):
            p, t, taus = _reflect(p, t, taus, i, rows, cols, t_rows, PAIR_REDUCE, SKIP_T, GATHER)
    else:
        for i in range(NB):
            p, t, taus = _reflect(p, t, taus, i, rows, cols, t_rows, PAIR_REDUCE, SKIP_T, GATHER)
    return p, t, taus


@triton.jit
def _reflect(
    p, t, taus, i, rows, cols, t_rows, PAIR_REDUCE: tl.constexpr, SKIP_T: tl.constexpr,
    GATHER: tl.constexpr,
):  # fmt: skip
    """Step i of householder_tile: reflector i applied to the tile, T and the taus grown by it."""
    # One-hot selectors times p, not tl.where: the products fuse into the reductions' adds
    # (one FFMA an element instead of a select and an add), and the panel is ALU-bound.
    at_col = (cols == i).to(tl.float32)  # 1 × NB
    at_row = (rows == i).to(tl.float32)  # BLOCK_M × 1
    # Column i. Gathered: a shuffle from the lane that holds it, where the masked sum multiplies
    # every element and then sums across lanes (sm_90, Triton 3.6, a 256 × 16 look-ahead panel:
    # 418 → 331 instructions a step; the 512 × 16 panel: 598 → 521, at 163 registers, not 128).
    x = tl.gather(p, rows * 0 + i, 1) if GATHER else tl.sum(p * at_col, axis=1, keep_dims=True)
    below = rows > i
    x_tail = tl.where(below, x, 0.0)
    if PAIR_REDUCE:
        z, rho = tl.reduce((x_tail * p, at_row * p), 0, _add_pair, keep_dims=True)
    else:
        z = tl.sum(x_tail * p, axis=0, keep_dims=True)  # 1 × NB
        rho = tl.sum(at_row * p, axis=0, keep_dims=True)  # row i
    alpha = tl.sum(rho * at_col, axis=1, keep_dims=True)  # 1 × 1
    sigma = tl.sum(z * at_col, axis=1, keep_dims=True)  # ‖x_tail‖²
    reflect = sigma > 0.0
    norm = tl.sqrt(alpha * alpha + sigma)
    beta = tl.where(reflect, tl.where(alpha >= 0.0, -norm, norm), alpha)
    tau = tl.where(reflect, (beta - alpha) / tl.where(reflect, beta, 1.0), 0.0)
    inv_pivot = tl.where(reflect, 1.0 / tl.where(reflect, alpha - beta, 1.0), 0.0)
    w = rho + inv_pivot * z  # vᵢᵀP
    v = tl.where(rows == i, 1.0, inv_pivot * x_tail)
    column = tl.where(rows == i, beta, tl.where(below, inv_pivot * x, x))
    # Columns up to i take a zero multiple of v, so one FFMA and one select an element.
    tau_w = tl.where(cols > i, tau * w, 0.0)  # 1 × NB
    p = tl.where(cols == i, column, p - v * tau_w)

    if not SKIP_T:
        gram = tl.where(cols < i, w, 0.0)  # (Vᵀvᵢ) over the earlier columns
        t_gram = tl.sum(t * gram, axis=1, keep_dims=True)  # NB × 1
        t_column = tl.where(t_rows < i, -tau * t_gram, tl.where(t_rows == i, tau, 0.0))
        t = tl.where(cols == i, t_column, t)
    taus = tl.where(cols == i, tau, taus)
    return p, t, taus


@triton.jit
def factor_and_store(
    p,  # BLOCK_M × NB: the panel's rows [col0, n), already at the working scale
    dst,  # one matrix of H
    tau,  # its taus
    t,  # where the panel's T goes (NB × NB at row stride t_sr)
    m,  # n − col0
    col0,
    scale,  # R is divided by this as it is stored
    dst_sr,
    dst_sc,
    t_sr,
    BLOCK_M: tl.constexpr,
    NB: tl.constexpr,
    PAIR_REDUCE: tl.constexpr,
    SKIP_T: tl.constexpr,  # as householder_tile's: T is neither formed nor stored
    UNROLL: tl.constexpr,  # as householder_tile's
    GATHER: tl.constexpr,  # as householder_tile's
):
    """Factor a loaded panel and store its V/R, taus and T; shared by the panel programs of
    qr_panel_kernel and qr_lookahead_kernel."""
    ncols = tl.minimum(m, NB)
    r = tl.arange(0, BLOCK_M)
    c = tl.arange(0, NB)
    mask = (r[:, None] < m) & (c[None, :] < ncols)
    p, tt, taus = householder_tile(p, BLOCK_M, NB, PAIR_REDUCE, SKIP_T, UNROLL, GATHER)
    rows = r[:, None]  # BLOCK_M × 1
    cols = c[None, :]  # 1 × NB
    t_rows = c[:, None]  # NB × 1
    unscaled = tl.where(rows <= cols, p / scale, p)  # R back to A's scale
    offs_dst = (col0 + r)[:, None] * dst_sr + (col0 + c)[None, :] * dst_sc
    tl.store(dst + offs_dst, unscaled, mask=mask)
    tl.store(tau + col0 + cols, taus, mask=cols < ncols)
    if not SKIP_T:
        tl.store(t + t_rows * t_sr + cols, tt)


@triton.jit
def qr_panel_kernel(
    src_ptr,  # batch × n × n: the panel's columns are read from here (A for the first panel)
    dst_ptr,  # batch × n × n: H, written with R (upper) and V (strictly lower)
    tau_ptr,  # batch × n
    t_ptr,  # batch × NB × NB (row stride t_stride_r): the panel's T
    amax_ptr,  # batch: |A|max, read (or written when SELF_SCALE)
    live_ptr,  # batch: one past A's last column holding a nonzero (unread when SELF_SCALE)
    n,
    col0,  # first column (and first row) of the panel
    src_sb,
    src_sr,
    src_sc,
    dst_sb,
    dst_sr,
    dst_sc,
    tau_sb,
    t_sb,
    t_sr,
    BLOCK_M: tl.constexpr,  # ≥ n − col0, a power of two
    NB: tl.constexpr,  # panel width, a power of two
    SELF_SCALE: tl.constexpr,  # the panel is the whole matrix: find |A|max here, skip T
    PAIR_REDUCE: tl.constexpr,  # one two-output reduction per step instead of two sums
    UNROLL: tl.constexpr,  # the reflector steps unrolled at compile time (`panel_unroll`)
    GATHER: tl.constexpr,  # column i by a gather along the lanes (`panel_gather`)
):
    """One program per matrix: factor rows [col0, n) × columns [col0, col0 + NB) in place.

    A later panel whose columns are all past the matrix's live ones finds them zero in H (the
    first update wrote them so): its reflectors are τ = 0 with a zero T, stored without work."""
    b = tl.program_id(0).to(tl.int64)
    m = n - col0
    ncols = tl.minimum(m, NB)
    r = tl.arange(0, BLOCK_M)
    c = tl.arange(0, NB)
    dead = False
    if not SELF_SCALE:
        dead = (col0 > 0) & (col0 >= tl.load(live_ptr + b))
    if dead:
        tl.store(tau_ptr + b * tau_sb + col0 + c, tl.zeros((NB,), tl.float32), mask=c < ncols)
        tl.store(t_ptr + b * t_sb + c[:, None] * t_sr + c[None, :], tl.zeros((NB, NB), tl.float32))
    else:
        mask = (r[:, None] < m) & (c[None, :] < ncols)
        offs_src = (col0 + r)[:, None] * src_sr + (col0 + c)[None, :] * src_sc
        p = tl.load(src_ptr + b * src_sb + offs_src, mask=mask, other=0.0)  # BLOCK_M × NB
        if SELF_SCALE:
            amax = tl.max(tl.max(abs_or_inf(p), axis=1), axis=0)
            tl.store(amax_ptr + b, amax)
        else:
            amax = tl.load(amax_ptr + b)
        scale = scale_for(amax)
        # Only the first panel reads A; later panels read H, which is already scaled.
        p = p * tl.where(col0 == 0, scale, 1.0)

        factor_and_store(
            p, dst_ptr + b * dst_sb, tau_ptr + b * tau_sb, t_ptr + b * t_sb, m, col0, scale,
            dst_sr, dst_sc, t_sr, BLOCK_M, NB, PAIR_REDUCE, SELF_SCALE, UNROLL, GATHER,
        )  # fmt: skip
