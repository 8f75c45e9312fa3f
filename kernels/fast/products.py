"""Tensor-core products at a chosen precision, with 3×TF32 split by hand.

Triton's own "tf32x3" rounds each operand with `cvt.rna.tf32.f32`, which sm_90 has no instruction
for: it becomes four (an add, an infinity test, a mask and a select) an element, and each product
then guards its accumulator against NaN with a compare and a select an element. The updates feed
every element of their tiles through that split, so the rounding here is the add and the mask
alone. It differs only for Inf and NaN operands, which a finite input never produces (the
prescale keeps magnitudes in range) and a non-finite input has no defined factors for (|A|max
flags it); a finite value rounds the same way either way, to nearest with ties away from zero.

A product starts from a zero accumulator and callers add it to their running sums with IEEE adds:
the tensor cores align and truncate what they add to an accumulator, so a large running sum (C
itself, or W over many row steps) taken as the accumulator loses low bits at every instruction
(640×512's factor residuals grew from 0.03 to 0.27 of the allowed 20 that way).
"""

import triton
import triton.language as tl


@triton.jit
def split_tf32(x):
    """x = hi + lo with hi exact in TF32 (x rounded to nearest on its top 10 mantissa bits) and
    lo the exact fp32 remainder."""
    bits = x.to(tl.int32, bitcast=True)
    hi = ((bits + 0x1000) & -0x2000).to(tl.float32, bitcast=True)
    return hi, x - hi


@triton.jit
def product(a, b, PRECISION: tl.constexpr):
    """a·b at PRECISION ("ieee", "tf32", or "tf32x3": hi·hi + hi·lo + lo·hi, the small terms
    first, which is within a few fp32 roundings of the exact product)."""
    if PRECISION == "tf32x3":
        a_hi, a_lo = split_tf32(a)
        b_hi, b_lo = split_tf32(b)
        acc = tl.dot(a_lo, b_hi, input_precision="tf32")
        acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
        return tl.dot(a_hi, b_hi, acc, input_precision="tf32")
    else:
        return tl.dot(a, b, input_precision=PRECISION)
