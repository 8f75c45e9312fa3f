"""Trailing update through cuBLAS: C ← C − V·(Tᵀ·(Vᵀ·C)) as three batched fp32 GEMMs, and the
T join of an outer block (`outer_block_width`), too wide for one Triton program.

Triton's update (update.py) gives each program a strip of columns and walks it down every row
twice, at 3×TF32. At 640×512 that ran at about 19 TFLOP/s, where the H200 does 51 TFLOP/s of
plain fp32 on GEMMs; cuBLAS's batched SGEMM is the measure of how much of that gap is the
update's tiling. V is made explicit (unit diagonal, zeros above it) once per update.

Each product runs at the precision its config asks, whatever torch's TF32 switch says: Vᵀ·C and
Tᵀ·W at `update_precision`, V·W at `update_apply_precision`. A caller that enabled TF32 for its
own matmuls must not weaken this factorization, since plain TF32 in these products fails the
factor gate at n = 512, while n ≥ 1024 is reported to pass with every product in TF32 (cuBLAS's
TF32 rate is eight times its fp32 one here). The switch is process-wide, so a thread running its
own matmuls at the same moment sees this precision too; the caller's setting is restored after.

cuBLAS has no 3×TF32 product. Under `update_library_split` the update makes one from TF32
GEMMs of its operands' splits, as update.py does inside a tile: x = hi + lo with hi rounded to
TF32's 10 fraction bits, so a TF32 GEMM reads it exactly, and lo the exact rest. hi·hi + hi·lo +
lo·hi then misses x·y by lo·lo (2^-22 of it) and by lo's own rounding to TF32. Otherwise
"tf32x3", like "f16x3" always and the T join's products here, runs at IEEE, at least as
accurate.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def cublas_precision(precision: str) -> Iterator[None]:
    """cuBLAS fp32 matmuls inside at a config's precision ("tf32": TF32, else IEEE), torch's own
    setting restored after."""
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32" if precision == "tf32" else "ieee"
    try:
        yield
    finally:
        matmul.fp32_precision = before


def scale_of(amax: torch.Tensor) -> torch.Tensor:
    """scale.py's `scale_for` on the host side: the power of two that brings |A|max into
    [1, 2), 1 for a zero or non-finite one; one per matrix (batch × 1 × 1, to broadcast)."""
    bits = amax.view(torch.int32)
    exponent = (bits >> 23) & 255
    power = ((254 - exponent) << 23).view(torch.float32)
    return torch.where((amax > 0) & (exponent < 255), power, 1.0)[:, None, None]


def explicit_v(h: torch.Tensor, col: int, nb: int) -> torch.Tensor:
    """V of h's columns [col, col + nb), rows [col, n): the stored tails below a unit diagonal,
    zeros above it (a copy)."""
    v = h[:, col:, col : col + nb].tril(-1)
    v.diagonal(dim1=1, dim2=2).fill_(1.0)
    return v


def library_join(
    h: torch.Tensor,
    t: torch.Tensor,
    col: int,
    width: int,
    starts: tuple[int, ...],
    precision: str,
) -> None:
    """Join the T's of the blocks starting at `starts` (from col) on t's diagonal into the T of
    h's columns [col, col + width), in place: with G = VᵀV, block by block left to right,
        T[:s, s:e] = −T[:s, :s]·G[:s, s:e]·T[s:e, s:e],
    the block form of T⁻¹ = diag(1/τ) + strict_upper(VᵀV) (tfactor.py's join, at cuBLAS's
    batched GEMMs: an outer block's T is too wide for one program's registers)."""
    v = explicit_v(h, col, width)
    tt = t[:, :width, :width]
    tt.triu_()  # below the blocks' T's lies whatever an earlier block left there
    with cublas_precision(precision):
        g = torch.bmm(v.mT, v)
        for s, e in zip(starts[1:], (*starts[2:], width), strict=True):
            tt[:, :s, s:e] = -torch.bmm(torch.bmm(tt[:, :s, :s], g[:, :s, s:e]), tt[:, s:e, s:e])


Split = tuple[torch.Tensor, torch.Tensor]


def tf32_split(x: torch.Tensor) -> Split:
    """x = hi + lo exactly, hi rounded to nearest on TF32's 10 fraction bits (the carry of a
    round-up moves into the exponent, as it should) and lo at most 2^-11 of |x|."""
    hi = ((x.view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)
    return hi, x - hi


def transposed(x: Split) -> Split:
    """The split of xᵀ, without splitting again (a split is elementwise)."""
    return x[0].mT, x[1].mT


def split_bmm(a: Split, b: Split) -> torch.Tensor:
    """a·b as hi·lo + lo·hi + hi·hi of the operands' TF32 splits, three TF32 GEMMs summed into
    one output, the small terms first: for Vᵀ·C and Tᵀ·W, whose outputs are small."""
    a_hi, a_lo = a
    b_hi, b_lo = b
    with cublas_precision("tf32"):
        out = torch.bmm(a_hi, b_lo)
        out.baddbmm_(a_lo, b_hi)
        return out.baddbmm_(a_hi, b_hi)


def subtract_split_bmm(c: torch.Tensor, a: Split, b: Split) -> None:
    """c −= a·b from the same three products as one TF32 GEMM over their inner dimensions side
    by side, [a_hi a_lo a_hi]·[b_lo; b_hi; b_hi]: C − V·W then reads and writes C once, where
    three GEMMs into C would pass over it three times."""
    a_hi, a_lo = a
    b_hi, b_lo = b
    with cublas_precision("tf32"):
        c.baddbmm_(
            torch.cat((a_hi, a_lo, a_hi), dim=2), torch.cat((b_lo, b_hi, b_hi), dim=1), alpha=-1.0
        )


def library_update(
    src: torch.Tensor,
    h: torch.Tensor,
    t: torch.Tensor,
    scale: torch.Tensor,
    col: int,
    nb: int,
    c_start: int,
    c_end: int,
    precisions: tuple[str, str],
    split: bool,
) -> None:
    """Apply the block reflector of h's columns [col, col + nb) (T: t's leading nb × nb) to the
    columns [c_start, c_end) of rows [col, n), in h, at (update, apply) precisions, "tf32x3"
    from TF32 splits where `split` says. `src` is A where col = 0, read at `scale`; the rows
    that become final R (< col + nb) are scaled back as update.py does."""
    v = explicit_v(h, col, nb)
    c = h[:, col:, c_start:c_end]
    if col == 0:
        torch.mul(src[:, :, c_start:c_end], scale, out=c)
    precision, apply_precision = precisions
    tt = t[:, :nb, :nb].mT
    v_split = tf32_split(v) if split and "tf32x3" in precisions else None
    if v_split is not None and precision == "tf32x3":
        vtc = split_bmm(transposed(v_split), tf32_split(c))
        w = split_bmm(tf32_split(tt), tf32_split(vtc))
    else:
        with cublas_precision(precision):
            w = torch.bmm(tt, torch.bmm(v.mT, c))
    if v_split is not None and apply_precision == "tf32x3":
        subtract_split_bmm(c, v_split, tf32_split(w))
    else:
        with cublas_precision(apply_precision):
            c.baddbmm_(v, w, alpha=-1.0)
    c[:, :nb].div_(scale)
