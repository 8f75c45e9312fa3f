"""T stage for a block of several panels: join their T's into the block's T.

Each panel of a block leaves its own T on the block T's diagonal. With G = VᵀV over the block,
the panels are joined left to right by the block form of T⁻¹ = diag(1/τ) + strict_upper(VᵀV):
    T[:s, s:s+nb] = −T[:s, :s]·G[:s, s:s+nb]·T[s:s+nb, s:s+nb],
two small products per panel, so the trailing matrix is swept once per block, not per panel.
"""

import triton
import triton.language as tl

from kernels.fast.update import load_v


@triton.jit
def qr_tfactor_kernel(
    h_ptr,  # batch × n × n: H, holding the block's V
    t_ptr,  # batch × KBP × KBP (row stride t_sr): panel T's on the diagonal in, block T out
    n,
    col0,  # the block's first column
    width,  # the block's width (≤ KBP)
    nb,  # width of each panel in the block
    h_sb,
    h_sr,
    h_sc,
    t_sb,
    t_sr,
    KBP: tl.constexpr,
    BM: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One program per matrix: G = VᵀV over rows [col0, n), then join the panels' T's."""
    b = tl.program_id(0).to(tl.int64)
    k = tl.arange(0, KBP)
    h = h_ptr + b * h_sb
    g = tl.zeros((KBP, KBP), tl.float32)
    for r0 in range(col0, n, BM):
        rows = r0 + tl.arange(0, BM)
        v = load_v(h, rows, k, n, col0, width, h_sr, h_sc)  # BM × KBP
        g = tl.dot(tl.trans(v), v, g, input_precision=PRECISION)

    panel = k // nb
    inside = k < width
    diagonal = (panel[:, None] == panel[None, :]) & inside[:, None] & inside[None, :]
    t_offs = k[:, None] * t_sr + k[None, :]
    t = tl.load(t_ptr + b * t_sb + t_offs, mask=diagonal, other=0.0)
    for s in range(nb, width, nb):
        joined = tl.where(k[None, :] < s, t, 0.0)  # T[:, :s], upper triangular
        new = (k >= s) & (k < s + nb)
        g_new = tl.where((k[:, None] < s) & new[None, :], g, 0.0)  # G[:s, s:s+nb]
        t_new = tl.where(new[:, None] & new[None, :], t, 0.0)
        left = tl.dot(joined, g_new, input_precision=PRECISION)
        t = t - tl.dot(left, t_new, input_precision=PRECISION)
    tl.store(t_ptr + b * t_sb + t_offs, t)
