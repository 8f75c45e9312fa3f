"""A matrix of n ≤ 32 factored by one warp, each lane holding one column in registers (Gluon).

At 20×32 the factorization is one panel launch, and its reflector chain sets the device time. The
Triton panel kernel's tile spreads rows and columns over the warp's lanes, so each step reduces
across lanes twice and updates the whole tile. Here lane c holds column c, laid out by Gluon:
- a step broadcasts column i with one shuffle per row, and every sum over rows is inside a lane;
- each register's row is known at compile time, so with the steps unrolled the rows above the
  step fold away, and the work of step i is proportional to n − i.

Reflectors follow LAPACK `larfg`, as `panel.py`'s do; T is not formed, since nothing reads it.
The factorization itself is plain Triton code: the Gluon kernel only lays its tile out, and Triton's
interpreter, which cannot run Gluon, runs the same code in `qr_warp_kernel_interpreted`.
"""

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .scale import abs_or_inf, scale_for

WARP = tl.constexpr(32)  # lanes of a warp, one column each


@triton.jit
def _reflect(p, taus, i: tl.constexpr, rows, cols, zeros):
    """Step i: reflector i from column i (rows ≥ i), applied to the columns right of it.

    Terms outside the rows a sum covers are −0.0, which an add folds away, where +0.0 would not:
    the compiler then drops them, since each register's row is a constant."""
    x = tl.gather(p, zeros + i, 1)  # column i in every lane: one shuffle an element
    alpha = tl.sum(tl.where(rows == i, x, -0.0), axis=0, keep_dims=True)  # 1 × N
    sigma = tl.sum(tl.where(rows > i, x * x, -0.0), axis=0, keep_dims=True)  # ‖x_tail‖²
    z = tl.sum(tl.where(rows > i, x * p, -0.0), axis=0, keep_dims=True)  # x_tailᵀP
    rho = tl.sum(tl.where(rows == i, p, -0.0), axis=0, keep_dims=True)  # row i
    reflect = sigma > 0.0
    norm = tl.sqrt(alpha * alpha + sigma)
    beta = tl.where(reflect, tl.where(alpha >= 0.0, -norm, norm), alpha)
    tau = tl.where(reflect, (beta - alpha) / tl.where(reflect, beta, 1.0), 0.0)
    inv_pivot = tl.where(reflect, 1.0 / tl.where(reflect, alpha - beta, 1.0), 0.0)
    tau_w = tl.where(cols > i, tau * (rho + inv_pivot * z), 0.0)  # τ·vᵢᵀP right of column i
    # Below row i one select and one FFMA an element: column i becomes v's tail (x/pivot), the
    # columns right of it lose (x/pivot)·τw, and those left of it, where τw = 0, keep p.
    multiplier = tl.where(cols == i, inv_pivot, -(inv_pivot * tau_w))
    below = tl.where(cols == i, 0.0, p) + x * multiplier
    at_row = tl.where(cols == i, beta, p - tau_w)
    p = tl.where(rows > i, below, tl.where(rows == i, at_row, p))
    taus = tl.where(cols == i, tau, taus)
    return p, taus


@triton.jit
def _factor(
    a_ptr, h_ptr, tau_ptr, amax_ptr, n, a_sb, a_sr, a_sc, h_sb, h_sr, h_sc, tau_sb, rows, cols,
    N: tl.constexpr,
):  # fmt: skip
    """This program's matrix, on the tile that `rows` (N × 1) and `cols` (1 × N) lay out."""
    b = tl.program_id(0).to(tl.int64)
    mask = (rows < n) & (cols < n)
    p = tl.load(a_ptr + b * a_sb + rows * a_sr + cols * a_sc, mask=mask, other=0.0)
    amax = tl.max(tl.max(abs_or_inf(p), axis=1), axis=0)
    tl.store(amax_ptr + b, amax)
    scale = scale_for(amax)
    p = p * scale
    taus = (cols * 0).to(tl.float32)  # 1 × N, in p's layout
    zeros = (rows + cols) * 0  # N × N, the lanes' shuffle sources are built from it
    for i in tl.static_range(N):
        p, taus = _reflect(p, taus, i, rows, cols, zeros)
    h = tl.where(rows <= cols, p / scale, p)  # R back to A's scale
    tl.store(h_ptr + b * h_sb + rows * h_sr + cols * h_sc, h, mask=mask)
    tl.store(tau_ptr + b * tau_sb + cols, taus, mask=cols < n)


@gluon.jit
def qr_warp_kernel(
    a_ptr,  # batch × n × n, any strides
    h_ptr,  # batch × n × n: R on and above the diagonal, V below it
    tau_ptr,  # batch × n
    amax_ptr,  # batch: |A|max, written (+inf flags NaN/Inf)
    n,
    a_sb,
    a_sr,
    a_sc,
    h_sb,
    h_sr,
    h_sc,
    tau_sb,
    N: gl.constexpr,  # ≥ n, a power of two ≤ WARP
):
    """One program of one warp per matrix, lane c holding column c: torch.geqrf's (H, τ)."""
    layout: gl.constexpr = gl.BlockedLayout([N, 1], [1, WARP], [1, 1], [0, 1])
    rows = gl.arange(0, N, layout=gl.SliceLayout(1, layout))[:, None]
    cols = gl.arange(0, N, layout=gl.SliceLayout(0, layout))[None, :]
    _factor(
        a_ptr, h_ptr, tau_ptr, amax_ptr, n, a_sb, a_sr, a_sc, h_sb, h_sr, h_sc, tau_sb, rows, cols,
        N,
    )  # fmt: skip


@triton.jit
def qr_warp_kernel_interpreted(
    a_ptr, h_ptr, tau_ptr, amax_ptr, n, a_sb, a_sr, a_sc, h_sb, h_sr, h_sc, tau_sb,
    N: tl.constexpr,
):  # fmt: skip
    """qr_warp_kernel for Triton's interpreter, with the tile laid out as Triton chooses."""
    rows = tl.arange(0, N)[:, None]
    cols = tl.arange(0, N)[None, :]
    _factor(
        a_ptr, h_ptr, tau_ptr, amax_ptr, n, a_sb, a_sr, a_sc, h_sb, h_sr, h_sc, tau_sb, rows, cols,
        N,
    )  # fmt: skip


def warp_arguments(
    a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor, amax: torch.Tensor, n: int
) -> tuple[object, ...]:
    """The kernels' arguments up to their constexpr, in order."""
    return (a, h, tau, amax, n, *a.stride(), *h.stride(), tau.stride(0))
