"""Exact numpy, Z3 and interval building blocks for the primitive rows of the op table.

`fpir.ops` binds each primitive op to one numpy function (lifted by `np_lift`), one Z3 function and one
interval rule from here; nothing outside the table calls them, so the table stays the one place that says
what an op means. Invariants: numpy results are exact then wrapped to the result type (never a silent
int64 overflow: `np_lift` switches to Python ints when int64 cannot hold an intermediate); Z3 functions
use SMT-LIB bit-vector semantics at the op's width; an interval contains every value the op can produce
from operands in the given intervals.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fpir.lazy import numpy as np
from fpir.lazy import z3

from fpir.types import ScalarType
from fpir.types import work_arrays as _work

Interval = tuple[int, int]

#: result widths `wrap` takes from an int64 work array in one cast
_NARROW_BITS = frozenset({8, 16, 32})


# ---------------------------------------------------------------------------------------------
# Exact numpy helpers. Values are numpy arrays of the type's dtype (object for >64 bits). Each
# primitive computes the exact mathematical result in a wide work representation (int64 when every
# type involved has at most 16 bits, Python ints in object arrays otherwise) and then wraps.


def wrap(v: Any, t: ScalarType) -> Any:
    v = np.asarray(v)
    if t.bits == 1:
        return np.asarray(v & 1).astype(np.bool_)
    if v.dtype == np.int64 and t.bits in _NARROW_BITS:
        # A cast between integer dtypes keeps the low bits (two's complement): the same values as
        # the mask-and-sign-fold below, in one pass (the search's banks wrap millions of values)
        return v.astype(t.np_dtype)
    if v.dtype == object:
        # Elementwise on Python ints; np.asarray keeps 0-d results as object arrays. The masked
        # values fit in 64 bits, so uint64 then a cast to the type's dtype does the sign fold.
        w = np.asarray(v & ((1 << t.bits) - 1), dtype=object)
        if t.bits <= 64:
            return w.astype(np.uint64).astype(t.np_dtype)
        if t.signed:
            w = np.asarray(np.where(w >= (1 << (t.bits - 1)), w - (1 << t.bits), w), dtype=object)
        return w.astype(t.np_dtype)
    mask = (1 << t.bits) - 1
    w = v & mask
    if t.signed:
        half = 1 << (t.bits - 1)
        w = np.where(w >= half, w - (1 << t.bits), w)
    return np.asarray(w).astype(t.np_dtype)


def np_lift(fn: Callable[..., Any], limit: int = 32) -> Callable[..., Any]:
    """Wrap an exact integer function of work arrays into a primitive numpy implementation.

    `limit`: the widest type for which int64 holds every exact intermediate (32 for ops whose
    result magnitude is bounded by their operands', 16 for multiplications and shifts).
    """

    def impl(args: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType) -> Any:
        w, obj = _work(args, types, rt, limit)
        shape = np.broadcast_shapes(*(x.shape for x in w))
        if obj:
            # 0-d object arrays decay to Python ints (and np.where/np.minimum then fall back to int64,
            # overflowing on 128-bit values): compute on at-least-1-d arrays and restore the shape.
            w = [np.atleast_1d(x) for x in w]
        with np.errstate(all="ignore"):
            r = fn(*w, types=types, rt=rt, obj=obj)
            if obj:
                r = np.asarray(r, dtype=object).reshape(shape)
            return wrap(r, rt)

    return impl


def np_div(a: Any, b: Any, **_: Any) -> Any:
    safe = np.where(b == 0, 1, b)
    q = a // safe  # floor division
    r = a - q * safe
    q = np.where((r != 0) & (safe < 0), q + 1, q)  # Euclidean: remainder is never negative
    return np.where(b == 0, 0, q)


def np_mod(a: Any, b: Any, **_: Any) -> Any:
    safe = np.where(b == 0, 1, b)
    r = a - (a // safe) * safe
    r = np.where(r < 0, r - safe, r)  # only when safe < 0
    return np.where(b == 0, 0, r)


def shift_amounts(b: Any, bits: int) -> tuple[Any, Any]:
    """Split a signed shift amount into (left, right) magnitudes, each clamped to bits."""
    left = np.minimum(np.maximum(b, 0), bits)
    right = np.minimum(np.maximum(-b, 0), bits)
    return left, right


def np_shl(a: Any, b: Any, types: Sequence[ScalarType], obj: bool, **_: Any) -> Any:
    bits = types[0].bits
    left, right = shift_amounts(b, bits)
    return np.where(b >= 0, a * (np.asarray(2, dtype=object if obj else np.int64) ** left), a >> right)


def np_shr(a: Any, b: Any, types: Sequence[ScalarType], obj: bool, **_: Any) -> Any:
    bits = types[0].bits
    left, right = shift_amounts(b, bits)
    return np.where(b >= 0, a >> left, a * (np.asarray(2, dtype=object if obj else np.int64) ** right))


def np_cast(a: Any, types: Sequence[ScalarType], rt: ScalarType, **_: Any) -> Any:
    if rt.bits == 1:
        return (a != 0).astype(np.int64)
    return a


def np_reinterpret(a: Any, **_: Any) -> Any:
    return a  # wrapping to the result type reinterprets the bits


def np_not(a: Any, rt: ScalarType, **_: Any) -> Any:
    return -a - 1 if rt.bits > 1 else 1 - a


def np_abs(a: Any, **_: Any) -> Any:
    return np.abs(a)


# ---------------------------------------------------------------------------------------------
# Z3 helpers


def z3_cast(x: z3.BitVecRef, src: ScalarType, dst: ScalarType) -> z3.BitVecRef:
    if dst.bits == 1:
        return z3.If(x != 0, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
    if dst.bits > src.bits:
        ext = dst.bits - src.bits
        return z3.SignExt(ext, x) if src.signed else z3.ZeroExt(ext, x)
    if dst.bits < src.bits:
        return z3.Extract(dst.bits - 1, 0, x)
    return x


def z3_bool(c: z3.BoolRef) -> z3.BitVecRef:
    return z3.If(c, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))


def z3_lt(a: z3.BitVecRef, b: z3.BitVecRef, t: ScalarType) -> z3.BoolRef:
    return a < b if t.signed else z3.ULT(a, b)


def z3_le(a: z3.BitVecRef, b: z3.BitVecRef, t: ScalarType) -> z3.BoolRef:
    return a <= b if t.signed else z3.ULE(a, b)


def z3_div(a: z3.BitVecRef, b: z3.BitVecRef, ts: Sequence[ScalarType], rt: ScalarType) -> z3.BitVecRef:
    zero = z3.BitVecVal(0, rt.bits)
    if not rt.signed:
        return z3.If(b == zero, zero, z3.UDiv(a, b))
    q = a / b  # truncating
    r = z3.SRem(a, b)
    one = z3.BitVecVal(1, rt.bits)
    q = z3.If(r < 0, z3.If(b > 0, q - one, q + one), q)
    return z3.If(b == zero, zero, q)


def z3_mod(a: z3.BitVecRef, b: z3.BitVecRef, ts: Sequence[ScalarType], rt: ScalarType) -> z3.BitVecRef:
    zero = z3.BitVecVal(0, rt.bits)
    if not rt.signed:
        return z3.If(b == zero, zero, z3.URem(a, b))
    r = z3.SRem(a, b)
    r = z3.If(r < 0, z3.If(b > 0, r + b, r - b), r)
    return z3.If(b == zero, zero, r)


def z3_shift(a: z3.BitVecRef, b: z3.BitVecRef, ts: Sequence[ScalarType], left_first: bool) -> z3.BitVecRef:
    t = ts[0]

    def left(x: z3.BitVecRef, amt: z3.BitVecRef) -> z3.BitVecRef:
        return x << amt  # SMT-LIB: amounts >= width give 0

    def right(x: z3.BitVecRef, amt: z3.BitVecRef) -> z3.BitVecRef:
        return x >> amt if t.signed else z3.LShR(x, amt)  # >= width: sign fill / 0

    fwd, back = (left, right) if left_first else (right, left)
    if not ts[1].signed:
        return fwd(a, b)
    return z3.If(b < 0, back(a, -b), fwd(a, b))


# ---------------------------------------------------------------------------------------------
# Interval helpers: exact ranges of the mathematical result, clipped to the type when it may wrap.


def fit(lo: int, hi: int, rt: ScalarType) -> Interval:
    if rt.min <= lo and hi <= rt.max:
        return (lo, hi)
    return (rt.min, rt.max)


def corners(f: Callable[[int, int], int]) -> Callable[..., Interval]:
    def rule(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
        (al, ah), (bl, bh) = ivs
        vals = [f(x, y) for x in (al, ah) for y in (bl, bh)]
        return fit(min(vals), max(vals), rt)

    return rule


def iv_div(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), (bl, bh) = ivs
    if bl > 0:
        vals = [x // y for x in (al, ah) for y in (bl, bh)]
        return fit(min(vals), max(vals), rt)
    # |x / y| <= |x| for y != 0 and x / 0 = 0; the quotient is negative when x or y is (Euclidean
    # division: 255 / -1 = -255), so a divisor that may be negative allows negative results too.
    m = max(abs(al), abs(ah))
    return fit(-m if al < 0 or bl < 0 else 0, m, rt)


def iv_mod(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), (bl, bh) = ivs
    m = max(abs(bl), abs(bh))
    if al >= 0 and ah < max(bl, 1) and bl > 0:
        return (al, ah)
    return fit(0, max(m - 1, 0), rt)


def iv_minmax(fn: Callable[[int, int], int]) -> Callable[..., Interval]:
    def rule(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
        (al, ah), (bl, bh) = ivs
        return (fn(al, bl), fn(ah, bh))

    return rule


def iv_bool(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    return (0, 1)


def iv_select(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (cl, ch), (al, ah), (bl, bh) = ivs
    if cl == 1:
        return (al, ah)
    if ch == 0:
        return (bl, bh)
    return (min(al, bl), max(ah, bh))


def iv_bitwise(op: str) -> Callable[..., Interval]:
    def rule(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
        (al, ah), (bl, bh) = ivs
        if op == "and" and (al >= 0 or bl >= 0):
            # a non-negative operand's clear sign bit and clear high bits stay clear: x & 1 of a
            # negative x is 0 or 1 (the rounding bit of a rounding shift)
            return (0, min(h for lo, h in ((al, ah), (bl, bh)) if lo >= 0))
        if al < 0 or bl < 0:
            return (rt.min, rt.max)
        top = (1 << max(ah.bit_length(), bh.bit_length())) - 1
        return fit(0, top, rt)

    return rule


def iv_not(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), = ivs
    if rt.bits == 1:
        return (1 - ah, 1 - al)
    if rt.signed:
        return (-ah - 1, -al - 1)
    return (rt.max - ah, rt.max - al)


def iv_shl(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), (bl, bh) = ivs
    if bl < 0 or bh >= rt.bits:
        return (rt.min, rt.max)
    vals = [x << y for x in (al, ah) for y in (bl, bh)]
    return fit(min(vals), max(vals), rt)


def iv_shr(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), (bl, bh) = ivs
    if bl < 0:
        return (rt.min, rt.max)
    bh = min(bh, rt.bits)
    vals = [x >> y for x in (al, ah) for y in (bl, bh)]
    return (min(vals), max(vals))


def iv_cast(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), = ivs
    if rt.bits == 1:
        return (0 if al <= 0 <= ah else 1, 0 if al == ah == 0 else 1)
    return fit(al, ah, rt)


def iv_abs(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), = ivs
    if al >= 0:
        return (al, ah)
    if ah <= 0:
        return (-ah, -al)
    return (0, max(-al, ah))


def iv_absd(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
    (al, ah), (bl, bh) = ivs
    hi = max(ah - bl, bh - al)
    lo = max(0, al - bh, bl - ah)
    return (lo, hi)
