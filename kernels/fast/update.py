"""Trailing-update stage, fused: C ← C − V·(Tᵀ·(Vᵀ·C)) on the columns [c_start, c_end).

Each program owns BN trailing columns of one matrix and makes two passes down the rows: the first
accumulates W = Vᵀ·C (NBP × BN), the second subtracts V·(Tᵀ·W). Vᵀ·C and Tᵀ·W contract against
trailing-matrix data and run at `update_precision` (fp32 "ieee", 3×TF32 "tf32x3" or its fp16
form "f16x3"; plain "tf32" fails the factor gate on hard cases at n = 512); V·W runs at
`update_apply_precision`, where plain TF32 failed at n = 512 on the H200 and passed without
margin at n = 1024 (kernels/README.md). Products are products.py's: the splits by hand, each
added to its running sum in IEEE, fp16 operands fitted to V's bound and the trailing matrix's. Rows
above the next panel are final R after this update and are scaled back to A's scale as they are
stored. When batch × column blocks cannot fill the GPU, update_split.py spreads the rows over
programs instead. With `update_two_pass`, the two walks are two launches: qr_update_tw_kernel
stores each column block's Tᵀ·Vᵀ·C, and update_split.py's apply kernel subtracts V·W with one
program per tile, so the second walk is no longer a chain of row steps inside one program.
"""

import triton
import triton.language as tl

from .products import column_fit, fitted_product, product, reflector_fit, trailing_fit
from .scale import scale_for


@triton.jit
def load_v(base, rows, k, n, col0, nb, stride_r, stride_c, EVICT: tl.constexpr):
    """V's rows `rows` (BM × NBP): the stored reflector tails with the implied unit diagonal,
    read under the L2 policy EVICT ("" for the default; no default value here, which Triton
    3.6 cannot take for a string)."""
    vcols = col0 + k
    inside = (rows[:, None] < n) & (k[None, :] < nb)
    tail = tl.load(
        base + rows[:, None] * stride_r + vcols[None, :] * stride_c,
        mask=inside & (rows[:, None] > vcols[None, :]),
        other=0.0,
        eviction_policy=EVICT,
    )
    return tl.where(inside & (rows[:, None] == vcols[None, :]), 1.0, tail)


@triton.jit
def load_v_below(base, rows, k, n, col0, nb, stride_r, stride_c, EVICT: tl.constexpr):
    """load_v for rows that all lie below V's unit triangle (≥ col0 + nb): no diagonal to put
    in and no R above it to mask off, so a tile costs its bounds check alone."""
    inside = (rows[:, None] < n) & (k[None, :] < nb)
    at = base + rows[:, None] * stride_r + (col0 + k)[None, :] * stride_c
    return tl.load(at, mask=inside, other=0.0, eviction_policy=EVICT)


@triton.jit
def triangle_end(col0, NBP: tl.constexpr, BM: tl.constexpr):
    """The first row step at or past V's unit triangle: steps before it load V with load_v,
    steps from it with load_v_below."""
    return col0 + tl.cdiv(NBP, BM) * BM


@triton.jit
def project_rows(
    w, v, src, rows, cols, n, c_end, scale_in, src_sr, src_sc, PRECISION: tl.constexpr, KEEP
):
    """w + Vᵀ·C over one row step, V's rows `rows` already loaded."""
    mask = (rows[:, None] < n) & (cols[None, :] < c_end)
    c = tl.load(src + rows[:, None] * src_sr + cols[None, :] * src_sc, mask=mask, other=0.0,
                eviction_policy=KEEP)  # fmt: skip
    vt_c = fitted_product(tl.trans(v), reflector_fit(), c * scale_in, trailing_fit(n), PRECISION)
    return w + vt_c  # NBP × BN


@triton.jit
def project_columns(
    src,
    dst,
    t,
    t_sr,
    n,
    col0,
    nb,
    cols,
    c_end,
    scale_in,
    src_sr,
    src_sc,
    dst_sr,
    dst_sc,
    NBP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    KEEP: tl.constexpr,
):
    """Tᵀ·(Vᵀ·C) (NBP × BN) for BN columns: the first walk down rows [col0, n), the half of an
    update that contracts over the rows. The steps through V's unit triangle and those below it
    are two loops, not one loop with a branch: a branch-free loop's loads of V are pipelined
    (copied to shared memory asynchronously), where a branch kept them in registers."""
    k = tl.arange(0, NBP)
    w = tl.zeros((NBP, BN), tl.float32)
    below = triangle_end(col0, NBP, BM)
    for r0 in range(col0, tl.minimum(below, n), BM):
        rows = r0 + tl.arange(0, BM)
        v = load_v(dst, rows, k, n, col0, nb, dst_sr, dst_sc, KEEP)  # BM × NBP
        w = project_rows(w, v, src, rows, cols, n, c_end, scale_in, src_sr, src_sc, PRECISION, KEEP)
    for r0 in range(below, n, BM):
        rows = r0 + tl.arange(0, BM)
        v = load_v_below(dst, rows, k, n, col0, nb, dst_sr, dst_sc, KEEP)
        w = project_rows(w, v, src, rows, cols, n, c_end, scale_in, src_sr, src_sc, PRECISION, KEEP)
    tmask = (k[:, None] < nb) & (k[None, :] < nb)
    tt = tl.load(t + k[:, None] * t_sr + k[None, :], mask=tmask, other=0.0)
    return product(tl.trans(tt), w, PRECISION)


@triton.jit
def update_columns(
    src,  # one matrix of C (read); the same as dst where C is updated in place
    dst,  # one matrix of H: V in the reflectors' columns, C written here
    t,  # the reflectors' T (NBP × NBP at row stride t_sr)
    t_sr,
    n,
    col0,  # the reflectors' first column and row
    nb,  # how many reflectors (≤ NBP)
    cols,  # BN columns to update (1-D)
    c_end,  # columns at or past c_end are masked off
    scale_in,  # C is multiplied by this as it is read
    scale_out,  # rows that become final R (< col0 + nb) are divided by this as they are stored
    src_sr,
    src_sc,
    dst_sr,
    dst_sc,
    NBP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    APPLY_PRECISION: tl.constexpr,
    KEEP: tl.constexpr,  # L2 policy of what is read again: V, and C in the first walk
    ONCE: tl.constexpr,  # and of what is not: C in the second walk, and its stores
    mirror,  # one matrix of the panels' row-major copy (column-major H), when MIRROR
    mirror_sr,
    mirror_end,  # columns below this are also stored there: the next panel's
    MIRROR: tl.constexpr,
    APPLY_STAGES: tl.constexpr,  # the second walk's pipeline depth (None: only V's loads ahead)
):
    """C ← C − V·(Tᵀ·(Vᵀ·C)) on BN columns, walking rows [col0, n) twice; shared by the fused
    update programs and the whole-matrix program. Only the column block that holds the next
    panel's columns mirrors them: the others run a second walk without the mirror's store, whose
    change of register layout goes through shared memory on every row step even when masked off
    (640×512: −0.8% to −2.0% on an H100, docs/benchmarks.md)."""
    w = project_columns(
        src, dst, t, t_sr, n, col0, nb, cols, c_end, scale_in, src_sr, src_sc, dst_sr, dst_sc,
        NBP, BM, BN, PRECISION, KEEP,
    )  # fmt: skip
    mirrored = False
    if MIRROR:
        mirrored = tl.min(cols, axis=0) < mirror_end
    if mirrored:
        apply_columns(
            w, src, dst, n, col0, nb, cols, c_end, scale_in, scale_out, src_sr, src_sc, dst_sr,
            dst_sc, NBP, BM, APPLY_PRECISION, KEEP, ONCE, mirror, mirror_sr, mirror_end, True,
            APPLY_STAGES,
        )  # fmt: skip
    else:
        apply_columns(
            w, src, dst, n, col0, nb, cols, c_end, scale_in, scale_out, src_sr, src_sc, dst_sr,
            dst_sc, NBP, BM, APPLY_PRECISION, KEEP, ONCE, mirror, mirror_sr, mirror_end, False,
            APPLY_STAGES,
        )  # fmt: skip


@triton.jit
def apply_columns(
    w, src, dst, n, col0, nb, cols, c_end, scale_in, scale_out, src_sr, src_sc, dst_sr, dst_sc,
    NBP: tl.constexpr, BM: tl.constexpr, APPLY_PRECISION: tl.constexpr, KEEP: tl.constexpr,
    ONCE: tl.constexpr, mirror, mirror_sr, mirror_end, MIRROR: tl.constexpr,
    APPLY_STAGES: tl.constexpr,
):  # fmt: skip
    """C − V·W on BN columns, W being Tᵀ·(Vᵀ·C) (NBP × BN): the second walk down rows [col0, n),
    the half of an update that writes. Its C feeds no product, so Triton's pipeliner leaves
    that load in the loop unless the loop names its depth (APPLY_STAGES): then C, like V, is
    copied into shared memory steps ahead, for 16 KB more a program at BM = BN = 64."""
    k = tl.arange(0, NBP)
    w_fit = column_fit(w, APPLY_PRECISION)
    unscale = 1.0 / scale_out  # a power of two: exact
    below = triangle_end(col0, NBP, BM)
    # Two loops, as in project_columns; only rows above the triangle's end can be final R.
    for r0 in range(col0, tl.minimum(below, n), BM):
        rows = r0 + tl.arange(0, BM)
        v = load_v(dst, rows, k, n, col0, nb, dst_sr, dst_sc, KEEP)
        c = apply_rows(v, w, w_fit, src, rows, cols, n, c_end, scale_in, src_sr, src_sc,
                       APPLY_PRECISION, ONCE)  # fmt: skip
        c = tl.where(rows[:, None] < col0 + nb, c * unscale, c)
        store_rows(c, dst, mirror, rows, cols, n, c_end, dst_sr, dst_sc, mirror_sr, mirror_end,
                   MIRROR, ONCE)  # fmt: skip
    for r0 in tl.range(below, n, BM, num_stages=APPLY_STAGES):
        rows = r0 + tl.arange(0, BM)
        v = load_v_below(dst, rows, k, n, col0, nb, dst_sr, dst_sc, KEEP)
        c = apply_rows(v, w, w_fit, src, rows, cols, n, c_end, scale_in, src_sr, src_sc,
                       APPLY_PRECISION, ONCE)  # fmt: skip
        store_rows(c, dst, mirror, rows, cols, n, c_end, dst_sr, dst_sc, mirror_sr, mirror_end,
                   MIRROR, ONCE)  # fmt: skip


@triton.jit
def apply_rows(
    v, w, w_fit, src, rows, cols, n, c_end, scale_in, src_sr, src_sc,
    APPLY_PRECISION: tl.constexpr, ONCE,
):  # fmt: skip
    """C − V·W over one row step, V's rows `rows` already loaded (w_fit: column_fit(W))."""
    mask = (rows[:, None] < n) & (cols[None, :] < c_end)
    c = tl.load(src + rows[:, None] * src_sr + cols[None, :] * src_sc, mask=mask, other=0.0,
                eviction_policy=ONCE)  # fmt: skip
    return c * scale_in - fitted_product(v, reflector_fit(), w, w_fit, APPLY_PRECISION)


@triton.jit
def store_rows(
    c, dst, mirror, rows, cols, n, c_end, dst_sr, dst_sc, mirror_sr, mirror_end,
    MIRROR: tl.constexpr, ONCE,
):  # fmt: skip
    """One row step's updated C, into H and, under MIRROR, the panels' row-major copy."""
    mask = (rows[:, None] < n) & (cols[None, :] < c_end)
    tl.store(dst + rows[:, None] * dst_sr + cols[None, :] * dst_sc, c, mask=mask,
             eviction_policy=ONCE)  # fmt: skip
    store_mirror(mirror, rows, cols, c, mask, mirror_sr, mirror_end, MIRROR)


@triton.jit
def store_mirror(mirror, rows, cols, c, mask, mirror_sr, mirror_end, MIRROR: tl.constexpr):
    """With H column-major, a panel reads its columns from a row-major copy (driver.py): the
    update that finishes those columns stores them there too, so no copy launch is needed."""
    if MIRROR:
        at = mirror + rows[:, None] * mirror_sr + cols[None, :]
        tl.store(at, c, mask=mask & (cols[None, :] < mirror_end))


@triton.jit
def qr_update_kernel(
    src_ptr,  # batch × n × n: C is read from here (A for the first panel's update)
    dst_ptr,  # batch × n × n: H, holding V in the panel's columns; C is written here
    t_ptr,  # batch × NBP × NBP (row stride t_sr): the panel's T
    amax_ptr,  # batch: |A|max
    live_ptr,  # batch: one past the last column of A holding a nonzero (scale.py)
    n,
    col0,  # the panel's first column and row
    nb,  # the panel's width (≤ NBP)
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
    NBP: tl.constexpr,  # panel width padded to a power of two ≥ 16 (tl.dot's minimum)
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    APPLY_PRECISION: tl.constexpr,
    KEEP: tl.constexpr,  # "evict_last" with `update_l2_hints`, else "" (the default policy)
    ONCE: tl.constexpr,  # "evict_first" with `update_l2_hints`, else ""
    mirror_ptr,  # batch × n × n, row-major: the panels' copy, when MIRROR
    mirror_sb,
    mirror_sr,
    mirror_end,
    MIRROR: tl.constexpr,
    APPLY_STAGES: tl.constexpr,  # `update_apply_ahead`: the launch's stages, else None
):
    """Grid (batch × column blocks,), a matrix's column blocks adjacent: apply the panel's block
    reflector to BN trailing columns. Programs that run side by side then share one matrix's V
    in L2; with the batch outermost, each read its own V from DRAM (640×512: V was a third of
    the update's DRAM traffic). A program whose columns are all past the matrix's live ones has
    nothing to update: it only writes their zeros where nothing else will, into H on the first
    update (the one that reads A) and into the panels' copy of the next panel's columns."""
    col_blocks = tl.cdiv(c_end - c_start, BN)
    b = (tl.program_id(0) // col_blocks).to(tl.int64)
    first = c_start + (tl.program_id(0) % col_blocks) * BN
    cols = first + tl.arange(0, BN)
    dst, mirror = dst_ptr + b * dst_sb, mirror_ptr + b * mirror_sb
    if first < tl.load(live_ptr + b):
        scale = scale_for(tl.load(amax_ptr + b))
        scale_in = tl.where(col0 == 0, scale, 1.0)  # only the first update reads A
        update_columns(
            src_ptr + b * src_sb, dst, t_ptr + b * t_sb, t_sr, n, col0, nb, cols, c_end,
            scale_in, scale, src_sr, src_sc, dst_sr, dst_sc, NBP, BM, BN, PRECISION,
            APPLY_PRECISION, KEEP, ONCE, mirror, mirror_sr, mirror_end, MIRROR, APPLY_STAGES,
        )  # fmt: skip
    else:
        unwritten = col0 == 0
        if MIRROR:
            unwritten = unwritten | (first < mirror_end)
        if unwritten:
            zeros = tl.zeros((BM, BN), tl.float32)
            for r0 in range(col0, n, BM):
                rows = r0 + tl.arange(0, BM)
                store_rows(zeros, dst, mirror, rows, cols, n, c_end, dst_sr, dst_sc, mirror_sr,
                           mirror_end, MIRROR, ONCE)  # fmt: skip


@triton.jit
def qr_update_tw_kernel(
    src_ptr,
    dst_ptr,
    t_ptr,
    w_ptr,  # batch × ≥NBP × n: Tᵀ·Vᵀ·C is stored into columns [c_start, c_end)
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
    t_sb,
    t_sr,
    w_sb,
    w_sr,
    NBP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    PRECISION: tl.constexpr,
    KEEP: tl.constexpr,
):
    """Grid (batch × column blocks,) as qr_update_kernel's: the first half of a two-pass update
    (`update_two_pass`). Each program walks the rows once and stores its Tᵀ·Vᵀ·C whole, with no
    atomics and no zeroed buffer; qr_update_apply_kernel then subtracts V·W one tile a program."""
    col_blocks = tl.cdiv(c_end - c_start, BN)
    b = (tl.program_id(0) // col_blocks).to(tl.int64)
    cols = c_start + (tl.program_id(0) % col_blocks) * BN + tl.arange(0, BN)
    scale_in = tl.where(col0 == 0, scale_for(tl.load(amax_ptr + b)), 1.0)
    w = project_columns(
        src_ptr + b * src_sb, dst_ptr + b * dst_sb, t_ptr + b * t_sb, t_sr, n, col0, nb, cols,
        c_end, scale_in, src_sr, src_sc, dst_sr, dst_sc, NBP, BM, BN, PRECISION, KEEP,
    )  # fmt: skip
    k = tl.arange(0, NBP)
    tl.store(w_ptr + b * w_sb + k[:, None] * w_sr + cols[None, :], w, mask=cols[None, :] < c_end)
