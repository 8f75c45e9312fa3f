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
TF32 rate is eight times its fp32 one here). cuBLAS has no 3×TF32, so "tf32x3" (and "f16x3")
runs at IEEE, which is at least as accurate. The switch is process-wide, so a thread running its
own matmuls at the same moment sees this precision too; the caller's setting is restored after.
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


def library_update(
    src: torch.Tensor,
    h: torch.Tensor,
    t: torch.Tensor,
    scale: torch.Tensor,
    col: int,
    nb: int,
    c_start: int,
    c_end: int,
    precision: str,
    apply_precision: str,
) -> None:
    """Apply the block reflector of h's columns [col, col + nb) (T: t's leading nb × nb) to the
    columns [c_start, c_end) of rows [col, n), in h. `src` is A where col = 0, read at `scale`;
    the rows that become final R (< col + nb) are scaled back as update.py does."""
    v = explicit_v(h, col, nb)
    c = h[:, col:, c_start:c_end]
    if col == 0:
        torch.mul(src[:, :, c_start:c_end], scale, out=c)
    with cublas_precision(precision):
        w = torch.bmm(t[:, :nb, :nb].mT, torch.bmm(v.mT, c))
    with cublas_precision(apply_precision):
        c.baddbmm_(v, w, alpha=-1.0)
    c[:, :nb].div_(scale)
