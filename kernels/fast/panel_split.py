"""Row-split panel: one panel's rows spread over many programs per matrix (`panel_split_rows`).

Why: a one-program panel holds all n − col rows in one program's registers. At n = 4096 that
forces 8-column panels, and each panel's reflector chain runs on `batch` SMs while the rest idle
(2 × 4096 spends ~40% of its time there). Here the chain is cut by rows instead, without any
grid-wide barrier, in three launches (TSQR, then Householder reconstruction: Ballard et al.,
"Reconstructing Householder vectors from tall-skinny QR", 2014):

1. qr_slab_kernel, grid (batch, slabs): each slab of `slab_rows` rows is factored alone
   (householder_tile). Its V goes to H in place and its R stays in the slab's top rows of H; to
   scratch goes X_s = T_s·V_s,topᵀ, so the slab's explicit Q columns are Q_s·E = E − V_s·X_s.
2. qr_slab_join_kernel, grid (batch,): the slabs' R's, stacked (slabs·nb × nb), are factored;
   Q₁ = diag(Q_s·E)·(Q_st·E) is the panel's orthonormal Q and R_st its R. With a sign per column
   chosen as it goes so every pivot is at least 1 in size, Q₁·S − E = Y·U (LU, no pivoting);
   then Y is the panel's V, T = −U·Y₁⁻ᵀ, τ = diag(T) and R = S·R_st: the panel's top nb rows,
   τ and T are stored, and per slab K_s = (Q_st·E)_s·S·U⁻¹.
3. qr_slab_rebuild_kernel, grid (batch, slabs): V's rows below the top block,
   Y_s = (Q_s·E)·K_s = E·K_s − V_s·(X_s·K_s).

The result is a compact Householder form (unit lower V, τ, T) of the same panel, with each
reflector's sign set by S. Where geqrf gives τ = 0 (a column already zero below its diagonal),
this gives a genuine reflector (τ in [1, 2]) that leaves the column's R entry zero. Small products
run at fp32 ("ieee"), so V is no less accurate than the one-program panel's. A tall tile's top
rows are taken by a masked sum over its blocks: a product with a 0/1 matrix did the same exactly,
but its operand layouts made the join spill.
"""

import triton
import triton.language as tl

from .panel import householder_tile
from .scale import scale_for

EXACT = tl.constexpr("ieee")  # a constexpr global, so the compiled kernels may read it
DOT_K = tl.constexpr(16)  # the least K tl.dot takes


@triton.jit
def _top_rows(tile, M: tl.constexpr, NB: tl.constexpr):
    """The first NB rows of a tall M × NB register tile, exactly: a sum over M / NB blocks of
    which all but the first are masked to zero."""
    blocks = tl.reshape(tile, (M // NB, NB, NB))
    first = tl.arange(0, M // NB)[:, None, None] == 0
    return tl.sum(tl.where(first, blocks, 0.0), axis=0)


@triton.jit
def _signed_lu(a, NB: tl.constexpr):
    """LU of a·S − I without pivoting, S's signs chosen per column so each pivot is ≥ 1 in size.

    Returns U on and above the diagonal with Y's multipliers below it, and the signs (1 × NB).
    A step takes row k and column k by one sum each; the pivot, s·a_kk − 1, is then known
    without a third, and row k after the sign change differs from row k before it only there.
    """
    i = tl.arange(0, NB)[:, None]
    c = tl.arange(0, NB)[None, :]
    signs = tl.zeros((1, NB), tl.float32)
    for k in range(NB):
        row = tl.sum(tl.where(i == k, a, 0.0), axis=0, keep_dims=True)  # 1 × NB
        d = tl.sum(tl.where(c == k, row, 0.0), axis=1, keep_dims=True)  # 1 × 1
        s = tl.where(d >= 0.0, -1.0, 1.0)
        a = tl.where(c == k, s * a - tl.where(i == k, 1.0, 0.0), a)
        pivot = s * d - 1.0
        row = tl.where(c == k, pivot, row)
        column = tl.sum(tl.where(c == k, a, 0.0), axis=1, keep_dims=True)  # NB × 1
        mult = tl.where(i > k, column / pivot, 0.0)
        a = tl.where((i > k) & (c > k), a - mult * row, tl.where((i > k) & (c == k), mult, a))
        signs = tl.where(c == k, s, signs)
    return a, signs


@triton.jit
def _upper_inverse(u, NB: tl.constexpr):
    """U⁻¹ of an upper triangular NB × NB tile (NB a power of two ≤ 64) with nonzero diagonal,
    by doubling: with the inverses of the diagonal blocks of size s known, each block of size
    2s, [[A, B], [0, C]], gets −A⁻¹·B·C⁻¹ from two products of whole tiles. log₂ NB rounds of two
    products replace NB dependent steps of cross-warp sums (the join's steps are its cost)."""
    i = tl.arange(0, NB)[:, None]
    c = tl.arange(0, NB)[None, :]
    inv = tl.where(i == c, 1.0 / tl.where(i == c, u, 1.0), 0.0)
    for level in tl.static_range(6):
        if (1 << level) < NB:
            # B's places at this size: a row in the first half of its pair of blocks, a column
            # in the block right of it. inv is block-diagonal at size s, so the products mix
            # rows within A's block and columns within C's, and stay in B's places.
            rows_block = i >> level
            upper = ((rows_block & 1) == 0) & ((c >> level) == rows_block + 1)
            b = tl.where(upper, u, 0.0)
            inv -= tl.dot(tl.dot(inv, b, input_precision=EXACT), inv, input_precision=EXACT)
    return inv


@triton.jit
def _slab_tile(n, col0, slab_rows, SLAB_M: tl.constexpr, NB: tl.constexpr):
    """What both per-slab kernels start from: the program's matrix and slab, the slab's first
    row, the tile's row and column indices, and which of its rows lie in the slab (SLAB_M × 1,
    for a tile of any width)."""
    b = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1)
    first = col0 + s * slab_rows
    m = tl.minimum(slab_rows, n - first)
    r = tl.arange(0, SLAB_M)
    c = tl.arange(0, NB)
    return b, s, first, r, c, r[:, None] < m


@triton.jit
def qr_slab_kernel(
    src_ptr,  # batch × n × n: the panel's columns (A for the first panel)
    dst_ptr,  # batch × n × n: H, gets each slab's local V and R
    x_ptr,  # batch × slabs × NB × NB: X_s = T_s·V_s,topᵀ
    amax_ptr,
    n,
    col0,
    slab_rows,  # ≥ NB, so the first slab holds the panel's top block
    src_sb,
    src_sr,
    src_sc,
    dst_sb,
    dst_sr,
    dst_sc,
    x_sb,
    SLAB_M: tl.constexpr,  # ≥ slab_rows, a power of two
    NB: tl.constexpr,  # ≥ 16 (tl.dot)
    PAIR_REDUCE: tl.constexpr,
):
    """Grid (batch, slabs): Householder QR of rows [col0 + s·slab_rows, …) of the panel."""
    b, s, first, r, c, mask = _slab_tile(n, col0, slab_rows, SLAB_M, NB)
    rows = r[:, None]  # SLAB_M × 1
    cols = c[None, :]  # 1 × NB
    offs_src = (first + r)[:, None] * src_sr + (col0 + c)[None, :] * src_sc
    p = tl.load(src_ptr + b * src_sb + offs_src, mask=mask, other=0.0)  # SLAB_M × NB
    p = p * tl.where(col0 == 0, scale_for(tl.load(amax_ptr + b)), 1.0)
    p, t, _ = householder_tile(p, SLAB_M, NB, PAIR_REDUCE, False, False, False)
    offs_dst = (first + r)[:, None] * dst_sr + (col0 + c)[None, :] * dst_sc
    tl.store(dst_ptr + b * dst_sb + offs_dst, p, mask=mask)

    v = tl.where(rows > cols, p, tl.where(rows == cols, 1.0, 0.0))
    x = tl.dot(t, tl.trans(_top_rows(v, SLAB_M, NB)), input_precision=EXACT)  # NB × NB
    tl.store(x_ptr + b * x_sb + s * NB * NB + c[:, None] * NB + cols, x)


@triton.jit
def qr_slab_join_kernel(
    h_ptr,  # batch × n × n: H with the slabs' V and R; gets the panel's top block
    tau_ptr,  # batch × n
    t_ptr,  # batch × NB × NB (row stride t_sr): the panel's T
    x_ptr,  # batch × slabs × NB × NB: the slabs' X_s
    k_ptr,  # batch × slabs·NB × NB: gets K_s
    amax_ptr,
    n,
    col0,
    slab_rows,
    slabs,
    h_sb,
    h_sr,
    h_sc,
    tau_sb,
    t_sb,
    t_sr,
    x_sb,
    k_sb,
    STACK_M: tl.constexpr,  # ≥ slabs·NB, a power of two
    NB: tl.constexpr,
    PAIR_REDUCE: tl.constexpr,
):
    """One program per matrix: QR of the stacked R's, then the panel's V top block, R, τ, T, K."""
    b = tl.program_id(0).to(tl.int64)
    h = h_ptr + b * h_sb
    j = tl.arange(0, STACK_M)
    c = tl.arange(0, NB)
    rows = j[:, None]  # STACK_M × 1
    cols = c[None, :]  # 1 × NB
    i = c[:, None]  # NB × 1
    slab = j // NB
    within = j % NB
    first = col0 + slab * slab_rows
    real = (slab < slabs) & (within < n - first)
    stack_offs = (first + within)[:, None] * h_sr + (col0 + c)[None, :] * h_sc
    stack = tl.load(h + stack_offs, mask=real[:, None] & (cols >= within[:, None]), other=0.0)
    p, t_st, _ = householder_tile(stack, STACK_M, NB, PAIR_REDUCE, False, False, False)
    v_st = tl.where(rows > cols, p, tl.where(rows == cols, 1.0, 0.0))
    x_st = tl.dot(t_st, tl.trans(_top_rows(v_st, STACK_M, NB)), input_precision=EXACT)
    q_st = tl.where(rows == cols, 1.0, 0.0) - tl.dot(v_st, x_st, input_precision=EXACT)
    r_st = _top_rows(p, STACK_M, NB)  # R of the panel, up to S, on and above the diagonal

    top_offs = (col0 + i) * h_sr + (col0 + cols) * h_sc  # NB × NB
    v0 = tl.load(h + top_offs, mask=i > cols, other=0.0)
    v0 = tl.where(i == cols, 1.0, v0)
    x0 = tl.load(x_ptr + b * x_sb + i * NB + cols)
    q0 = tl.where(i == cols, 1.0, 0.0) - tl.dot(v0, x0, input_precision=EXACT)
    q1 = tl.dot(q0, _top_rows(q_st, STACK_M, NB), input_precision=EXACT)  # Q₁'s top block

    lu, signs = _signed_lu(q1, NB)
    u = tl.where(i <= cols, lu, 0.0)
    y = tl.where(i > cols, lu, tl.where(i == cols, 1.0, 0.0))
    t = -tl.dot(u, _upper_inverse(tl.trans(y), NB), input_precision=EXACT)  # −U·Y₁⁻ᵀ
    taus = tl.sum(tl.where(i == cols, t, 0.0), axis=0, keep_dims=True)  # 1 × NB
    k = tl.dot(q_st * signs, _upper_inverse(u, NB), input_precision=EXACT)  # STACK_M × NB
    tl.store(k_ptr + b * k_sb + rows * NB + cols, k, mask=(rows < slabs * NB) & (cols < NB))

    row_signs = tl.sum(tl.where(i == cols, signs, 0.0), axis=1, keep_dims=True)  # NB × 1
    scale = scale_for(tl.load(amax_ptr + b))
    tl.store(h + top_offs, tl.where(i <= cols, row_signs * r_st / scale, lu))
    tl.store(tau_ptr + b * tau_sb + col0 + cols, taus)
    tl.store(t_ptr + b * t_sb + i * t_sr + cols, t)


@triton.jit
def qr_slab_rebuild_kernel(
    h_ptr,  # batch × n × n: H, the slabs' local V in, the panel's V out (below its top block)
    x_ptr,
    k_ptr,
    n,
    col0,
    slab_rows,
    h_sb,
    h_sr,
    h_sc,
    x_sb,
    k_sb,
    SLAB_M: tl.constexpr,
    NB: tl.constexpr,
):
    """Grid (batch, slabs): the slab's rows of V, E·K_s − V_s·(X_s·K_s), summed over V_s's
    columns DOT_K at a time: with the whole slab tile as one fp32 product's operand, a 32-wide
    panel's rebuild spilled 6.8 KB a thread."""
    b, s, first, r, c, in_slab = _slab_tile(n, col0, slab_rows, SLAB_M, NB)
    rows = r[:, None]
    cols = c[None, :]
    h = h_ptr + b * h_sb
    k_s = k_ptr + b * k_sb + s * NB * NB
    x_s = x_ptr + b * x_sb + s * NB * NB
    k = tl.load(k_s + c[:, None] * NB + cols)
    y = tl.load(k_s + rows * NB + cols, mask=(rows < NB) & (cols < NB), other=0.0)
    part = tl.arange(0, DOT_K)
    for k0 in tl.static_range(0, NB, DOT_K):
        v_cols = k0 + part[None, :]  # 1 × DOT_K of the slab's local V, unit lower
        v_offs = (first + r)[:, None] * h_sr + (col0 + v_cols) * h_sc
        v = tl.load(h + v_offs, mask=in_slab & (rows > v_cols), other=0.0)
        v = tl.where(in_slab & (rows == v_cols), 1.0, v)  # SLAB_M × DOT_K
        x = tl.load(x_s + (k0 + part)[:, None] * NB + cols)  # X_s's rows k0…: DOT_K × NB
        y -= tl.dot(v, tl.dot(x, k, input_precision=EXACT), input_precision=EXACT)
    skip = tl.where(s == 0, NB, 0)  # the join stored the first slab's top NB rows
    offs = (first + r)[:, None] * h_sr + (col0 + c)[None, :] * h_sc
    tl.store(h + offs, y, mask=in_slab & (rows >= skip))
