"""T stage for a block of several panels: join their T's into the block's T.

Each panel of a block leaves its own T on the block T's diagonal. With G = VᵀV over the block,
the panels are joined left to right by the block form of T⁻¹ = diag(1/τ) + strict_upper(VᵀV):
    T[:s, s:s+nb] = −T[:s, :s]·G[:s, s:s+nb]·T[s:s+nb, s:s+nb],
two small products per panel, so the trailing matrix is swept once per block, not per panel.
G is a sum over rows; for small batches of tall matrices (one program per matrix would walk all
n rows alone) qr_gram_kernel sums row slabs in parallel into per-slab parts, which the join adds.
"""

import triton
import triton.language as tl

from .products import exact_inverse, product, reflector_fit, split_f16, split_tf32
from .update import load_v, load_v_below, triangle_end


@triton.jit
def gram_rows(
    h, first, last, k, n, col0, width, h_sr, h_sc, KBP: tl.constexpr, BM: tl.constexpr,
    PRECISION: tl.constexpr,
):  # fmt: skip
    """VᵀV over rows [first, last) of the block's V (KBP × KBP), `first` on the block's row-step
    grid. Under 3×TF32 the terms lo·hi and hi·lo are each other's transposes: a row step forms
    hi·hi and hi·lo only, from one split of V (two products a step instead of three, and two
    splits), and the sum of the hi·lo terms is added with its transpose once, at the end, which
    also leaves G exactly symmetric. "f16x3" goes the same way, its sums in units of V's fit
    squared until the end. The Vᵀ·V sums are averaged with their transpose, a no-op where a dot
    sums (i, j) and (j, i) in one order (the tensor cores), so that G is exactly symmetric on any
    backend: numpy's matmul of fp16 casts, which Triton's interpreter runs, sums some of them in
    different orders. As in the update's walks, the steps below V's unit triangle load it with a
    bounds check alone."""
    g = tl.zeros((KBP, KBP), tl.float32)
    cross = tl.zeros((KBP, KBP), tl.float32)  # Σ hiᵀ·lo
    below = triangle_end(col0, KBP, BM)
    for r0 in range(first, tl.minimum(below, last), BM):
        v = load_v(h, r0 + tl.arange(0, BM), k, n, col0, width, h_sr, h_sc, "")  # BM × KBP
        g, cross = add_gram_step(g, cross, v, PRECISION)
    for r0 in range(tl.maximum(first, below), last, BM):
        v = load_v_below(h, r0 + tl.arange(0, BM), k, n, col0, width, h_sr, h_sc, "")
        g, cross = add_gram_step(g, cross, v, PRECISION)
    g = (g + tl.trans(g)) * 0.5
    if PRECISION == "tf32x3":
        g += cross + tl.trans(cross)
    elif PRECISION == "f16x3":
        fit = reflector_fit()
        g = (g + (cross + tl.trans(cross))) * exact_inverse(fit * fit)
    return g


@triton.jit
def add_gram_step(g, cross, v, PRECISION: tl.constexpr):
    """One row step of gram_rows: (g, cross) with this step's Vᵀ·V terms added."""
    if PRECISION == "tf32x3":
        hi, lo = split_tf32(v)
        g += tl.dot(tl.trans(hi), hi, input_precision="tf32")
        cross += tl.dot(tl.trans(hi), lo, input_precision="tf32")
    elif PRECISION == "f16x3":
        hi, lo = split_f16(v, reflector_fit())
        g += tl.dot(tl.trans(hi), hi)
        cross += tl.dot(tl.trans(hi), lo)
    else:
        g += product(tl.trans(v), v, PRECISION)
    return g, cross


@triton.jit
def join_t(
    h,  # one matrix of H, holding the block's V
    t,  # the block's T buffer (KBP × KBP at row stride t_sr): panel T's on its diagonal in
    n,
    col0,
    width,
    nb,
    h_sr,
    h_sc,
    t_sr,
    g_parts,  # the per-slab parts of G (KBP × KBP each, contiguous), when FROM_PARTS
    slabs,  # how many parts
    KBP: tl.constexpr,
    NBP: tl.constexpr,  # nb as tl.dot sees it (≥ 16)
    BM: tl.constexpr,
    PRECISION: tl.constexpr,
    FROM_PARTS: tl.constexpr,
):
    """G = VᵀV over rows [col0, n), then the panels' T's joined into the block's T, stored whole."""
    k = tl.arange(0, KBP)
    if FROM_PARTS:
        g = tl.zeros((KBP, KBP), tl.float32)
        for s in range(0, slabs):
            g += tl.load(g_parts + s * KBP * KBP + k[:, None] * KBP + k[None, :])
    else:
        g = gram_rows(h, col0, n, k, n, col0, width, h_sr, h_sc, KBP, BM, PRECISION)

    panel = k // nb
    inside = k < width
    diagonal = (panel[:, None] == panel[None, :]) & inside[:, None] & inside[None, :]
    t_offs = k[:, None] * t_sr + k[None, :]
    tt = tl.load(t + t_offs, mask=diagonal, other=0.0)
    # Each join's products are KBP × NBP, not KBP × KBP: G's columns of the panel are gathered
    # out of G, the panel's own T (its diagonal block, which no join changes) is read back from
    # memory, and the new columns of T are gathered back into place.
    j = tl.arange(0, NBP)
    j_of = tl.zeros((KBP, NBP), tl.int32) + j[None, :]  # KBP × NBP: a column of the panel
    for s in range(nb, width, nb):
        joined = tl.where(k[None, :] < s, tt, 0.0)  # T[:, :s], upper triangular
        ours = (j < nb) & (s + j < width)  # the panel's columns
        g_new = tl.gather(g, tl.minimum(s + j_of, KBP - 1), 1)  # G[:, s:s+nb]
        g_new = tl.where((k[:, None] < s) & ours[None, :], g_new, 0.0)
        at = (s + j)[:, None] * t_sr + (s + j)[None, :]
        t_new = tl.load(t + at, mask=ours[:, None] & ours[None, :], other=0.0)  # T[s:s+nb, s:s+nb]
        right = product(product(joined, g_new, PRECISION), t_new, PRECISION)  # KBP × NBP
        from_right = tl.minimum(tl.maximum(k - s, 0), NBP - 1)  # column c of T ← c − s of right
        back = tl.gather(right, tl.zeros((KBP, KBP), tl.int32) + from_right[None, :], 1)
        tt = tt - tl.where(((k >= s) & (k < s + nb))[None, :], back, 0.0)
    tl.store(t + t_offs, tt)


@triton.jit
def qr_gram_kernel(
    h_ptr,  # batch × n × n: H, holding the block's V
    g_ptr,  # batch × slabs × KBP × KBP: one part of G per row slab
    n,
    col0,
    width,
    slab_rows,  # rows per program, a multiple of BM
    h_sb,
    h_sr,
    h_sc,
    g_sb,
    KBP: tl.constexpr,
    BM: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """Grid (batch, row slabs): one slab's VᵀV, written to its own part (no atomics)."""
    b = tl.program_id(0).to(tl.int64)
    slab = tl.program_id(1)
    first = col0 + slab * slab_rows
    k = tl.arange(0, KBP)
    h = h_ptr + b * h_sb
    last = tl.minimum(first + slab_rows, n)
    g = gram_rows(h, first, last, k, n, col0, width, h_sr, h_sc, KBP, BM, PRECISION)
    tl.store(g_ptr + b * g_sb + slab * KBP * KBP + k[:, None] * KBP + k[None, :], g)


@triton.jit
def qr_tfactor_kernel(
    h_ptr,  # batch × n × n: H, holding the block's V
    t_ptr,  # batch × KBP × KBP (row stride t_sr): panel T's on the diagonal in, block T out
    g_ptr,  # batch × slabs × KBP × KBP: G's parts from qr_gram_kernel (when FROM_PARTS)
    n,
    col0,  # the block's first column
    width,  # the block's width (≤ KBP)
    nb,  # width of each panel in the block
    slabs,
    h_sb,
    h_sr,
    h_sc,
    t_sb,
    t_sr,
    g_sb,
    KBP: tl.constexpr,
    NBP: tl.constexpr,  # nb as tl.dot sees it (≥ 16)
    BM: tl.constexpr,
    PRECISION: tl.constexpr,
    FROM_PARTS: tl.constexpr,
):
    """One program per matrix: G = VᵀV over rows [col0, n) (or its parts), then the joins."""
    b = tl.program_id(0).to(tl.int64)
    join_t(
        h_ptr + b * h_sb, t_ptr + b * t_sb, n, col0, width, nb, h_sr, h_sc, t_sr, g_ptr + b * g_sb,
        slabs, KBP, NBP, BM, PRECISION, FROM_PARTS,
    )  # fmt: skip
