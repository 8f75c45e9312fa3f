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

"f16x3" is the same three-term split with fp16 halves: fp16 keeps TF32's 11 significant bits, so
hi·hi + hi·lo + lo·hi is as accurate, while sm_90's tensor cores multiply fp16 at twice the TF32
rate and its operands take half the shared memory. fp16's narrow exponent range is why each
operand is first brought below 2^14 by an exact power of two (its fit): a known bound for V
(entries ≤ 1) and for the trailing matrix (`trailing_fit`), else the largest entry of each row
of a and each column of b. What falls below fp16's subnormals then is under 2^-38 of the bound.
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
def fp16_fit(bound):
    """The power of two that brings magnitudes up to `bound` below 2^14, well inside fp16's range
    (65504); capped at 2^60, so that a product of two fits and its inverse stay normal fp32
    numbers (what the cap leaves below fp16's range is under 2^-60 at the working scale)."""
    exponent = (bound.to(tl.int32, bitcast=True) >> 23) & 255
    return (tl.minimum(267 - exponent, 187) << 23).to(tl.float32, bitcast=True)


@triton.jit
def exact_inverse(power):
    """1 / power for a power of two, by its exponent bits: a division may round."""
    return ((254 << 23) - power.to(tl.int32, bitcast=True)).to(tl.float32, bitcast=True)


@triton.jit
def reflector_fit():
    """fp16_fit(1.0): V's entries are at most 1 in magnitude (a scalar tensor, not a constant,
    which Triton's interpreter would keep a constant through a product with a tensor)."""
    return tl.full((), 8192.0, tl.float32)


@triton.jit
def trailing_fit(n):
    """fp16_fit for the trailing matrix: each entry is at most its column's 2-norm, below 2√n at
    the working scale (scale.py brings |A|max into [1, 2), and reflections keep column norms)."""
    return fp16_fit(2.0 * tl.sqrt(n.to(tl.float32)))


@triton.jit
def column_fit(x, PRECISION: tl.constexpr):
    """fp16_fit of each column of x (1 × columns) under "f16x3"; 1 otherwise, where no fit is
    read."""
    if PRECISION == "f16x3":
        return fp16_fit(tl.max(tl.abs(x), axis=0))[None, :]
    else:
        return 1.0


@triton.jit
def split_f16(x, fit):
    """x·fit = hi + lo, both fp16: hi x·fit rounded to nearest, lo the remainder rounded."""
    y = x * fit
    hi = y.to(tl.float16)
    return hi, (y - hi.to(tl.float32)).to(tl.float16)


@triton.jit
def f16x3_product(a, a_fit, b, b_fit):
    """a·b from the fp16 splits of a·a_fit and b·b_fit, the small terms first."""
    a_hi, a_lo = split_f16(a, a_fit)
    b_hi, b_lo = split_f16(b, b_fit)
    acc = tl.dot(a_lo, b_hi)
    acc = tl.dot(a_hi, b_lo, acc)
    acc = tl.dot(a_hi, b_hi, acc)
    return acc * exact_inverse(a_fit * b_fit)


@triton.jit
def fitted_product(a, a_fit, b, b_fit, PRECISION: tl.constexpr):
    """a·b at PRECISION, where under "f16x3" the caller knows the fits (powers of two: scalars,
    a_fit a column over a's rows, b_fit a row over b's columns); other precisions ignore them."""
    if PRECISION == "f16x3":
        return f16x3_product(a, a_fit, b, b_fit)
    else:
        return product(a, b, PRECISION)


@triton.jit
def product(a, b, PRECISION: tl.constexpr):
    """a·b at PRECISION ("ieee", "tf32", "tf32x3": hi·hi + hi·lo + lo·hi, the small terms first,
    which is within a few fp32 roundings of the exact product, or "f16x3": the same in fp16, each
    row of a and column of b fitted by its largest entry)."""
    if PRECISION == "f16x3":
        a_fit = fp16_fit(tl.max(tl.abs(a), axis=1))[:, None]
        return f16x3_product(a, a_fit, b, column_fit(b, PRECISION))
    elif PRECISION == "tf32x3":
        a_hi, a_lo = split_tf32(a)
        b_hi, b_lo = split_tf32(b)
        acc = tl.dot(a_lo, b_hi, input_precision="tf32")
        acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
        return tl.dot(a_hi, b_hi, acc, input_precision="tf32")
    else:
        return tl.dot(a, b, input_precision=PRECISION)
