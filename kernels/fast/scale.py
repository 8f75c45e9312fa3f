"""Prescale stage: per-matrix |A|max, by whose exact power of two each matrix is scaled.

Every finite nonzero matrix is worked on with its largest entry in [1, 2), and R is scaled back
on its final store. Householder norms are sums of squares, which that keeps from under- or
overflowing, and it bounds every trailing-matrix entry by 2√n whatever A's magnitude, which
fp16-split products need (products.py). A power of two is exact, so the factors are those of the
unscaled matrix wherever no subnormal is involved. |A|max is
+inf when A holds NaN or Inf, which is how the driver detects bad input without a second pass.
The same pass finds each matrix's live columns: one past its last column holding a nonzero.
Columns past it are exactly zero and stay so under every update, so their reflectors are τ = 0
and the update and panel programs that own only such columns skip their work (update.py).
"""

import triton
import triton.language as tl


@triton.jit
def scale_for(amax):
    """Exact power of two that brings |A|max into [1, 2); 1 for a zero or non-finite one."""
    bits = amax.to(tl.int32, bitcast=True)
    exponent = (bits >> 23) & 255
    power = ((254 - exponent) << 23).to(tl.float32, bitcast=True)
    return tl.where((amax > 0.0) & (exponent < 255), power, 1.0)


@triton.jit
def abs_or_inf(x):
    """|x|, with NaN mapped to +inf so that a max over it flags the NaN."""
    return tl.where(x == x, tl.abs(x), float("inf"))


@triton.jit
def qr_amax_kernel(
    a_ptr,
    amax_ptr,  # batch, zeroed before launch
    live_ptr,  # batch, zeroed before launch: one past the last column holding a nonzero
    n,
    stride_b,
    stride_r,
    stride_c,
    span,  # columns a program covers, a multiple of BLOCK_C
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """Grid (matrix, row block, column span): atomic max of |A| over its tile into amax[b].

    Spans split the columns so that a small batch of large matrices still fills the GPU: with
    one program per row block, 8 × 2048 had 512 programs each reading 2048 columns in turn."""
    b = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    first = tl.program_id(2) * span
    base = a_ptr + b.to(tl.int64) * stride_b
    best = tl.zeros((BLOCK_R, BLOCK_C), tl.float32)
    last = tl.zeros((BLOCK_R, BLOCK_C), tl.float32)  # column count, exact in fp32 below 2^24
    for c0 in range(first, tl.minimum(first + span, n), BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = (rows[:, None] < n) & (cols[None, :] < n)
        tile = tl.load(base + rows[:, None] * stride_r + cols[None, :] * stride_c, mask=mask)
        size = tl.where(mask, abs_or_inf(tile), 0.0)
        best = tl.maximum(best, size)
        last = tl.maximum(last, tl.where(size > 0.0, (cols + 1).to(tl.float32)[None, :], 0.0))
    tl.atomic_max(amax_ptr + b, tl.max(tl.max(best, axis=1), axis=0))
    tl.atomic_max(live_ptr + b, tl.max(tl.max(last, axis=1), axis=0))
