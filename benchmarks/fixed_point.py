"""The shared fixed-point helpers of SPEC section 1.4, once for Halide and once for numpy.

The Halide builders (`multiply_2x_high`, `floor_log2`, `approx_log2`, `approx_exp2`,
`approx_reciprocal`, `approx_reciprocal_sqrt`) build the hannk-style expressions the quantized-ML
benchmarks use; the `np_*` functions are their int64 transcriptions with an explicit wrap or
saturation at every narrow-type step (SPEC 1.7), so a benchmark's numpy reference is bit-exact with
Halide's semantics. Types are named by the short strings of `benchmarks.common` ("i16", "i32", ...);
`htype(name)` gives the Halide type.

Invariant: each Halide helper and its numpy twin perform the same operations in the same types, in
the same order; tests/benchmarks/test_fixed_point.py checks them against each other through Halide's
own JIT over all i16 inputs and random i32 inputs.
"""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np

from benchmarks.common import sat, wrap

_BITS = {"u8": 8, "i8": 8, "u16": 16, "i16": 16, "u32": 32, "i32": 32, "i64": 64}


def htype(name: str) -> hl.Type:
    """The Halide type for a short type name ("u8", "i16", ...)."""
    return (hl.Int if name[0] == "i" else hl.UInt)(_BITS[name])


def tname(t: hl.Type) -> str:
    """The short name of a Halide integer type."""
    return f"{'i' if t.is_int() else 'u'}{t.bits()}"


def as_expr(e: Any) -> hl.Expr:
    """A FuncRef has no `.type()` (SPEC 1.4, Python note); wrap it, leave an Expr alone."""
    return e if isinstance(e, hl.Expr) else hl.Expr(e)


def _cast(name: str, e: Any) -> hl.Expr:
    return hl.cast(htype(name), e)


# ---- Halide -------------------------------------------------------------------------------------

def multiply_2x_high(a: Any, b: Any) -> hl.Expr:
    """rounding_mul_shr(a, b, B-1) with B = max(bits(a), bits(b)): the doubling high multiply."""
    a, b = as_expr(a), as_expr(b)
    bits = max(a.type().bits(), b.type().bits())
    return hl.rounding_mul_shift_right(a, b, bits - 1)


def floor_log2(x: Any) -> hl.Expr:
    """i16(bits(x)-1) - i16(clz(x)): floor(log2 x) for x > 0, -1 for x = 0."""
    x = as_expr(x)
    return hl.i16(x.type().bits() - 1) - hl.i16(hl.count_leading_zeros(x))


def approx_log2(q: int, x: Any, q_x: int, t: str = "i32") -> hl.Expr:
    """~ (log2(x) - q_x) * 2^q, typed `t` (x is i32 in every use)."""
    x = as_expr(x)
    f = floor_log2(x)
    m1 = hl.i16(x << (15 - f)) & 0x7FFF
    m2 = multiply_2x_high(m1, m1)
    m3 = multiply_2x_high(m2, m1)
    poly = (multiply_2x_high(hl.i16(2555), m3) + multiply_2x_high(hl.i16(-9421), m2)
            + multiply_2x_high(hl.i16(23249), m1) + 5)
    if q < 14:
        frac = _cast(t, hl.rounding_shift_right(poly, 14 - q))
    else:
        frac = _cast(t, poly) << (q - 14)
    whole = _cast(t, hl.i16(f - q_x)) << q
    return hl.saturating_add(whole, frac)


def approx_exp2(q: int, x: Any, q_x: Any, t: str) -> hl.Expr:
    """~ 2^(x / 2^q_x) * 2^q, typed `t`; `q_x` is an int or an unsigned Expr (softmax's beta_shift)."""
    x = as_expr(x)
    bits = _BITS[t]
    n = _cast(t, x >> q_x)
    p = hl.saturating_cast(htype(t), hl.i32(1) << (n + q))
    m1 = hl.i16(x - (n << q_x)) << (15 - hl.i16(q_x))
    m2 = multiply_2x_high(m1, m1)
    m3 = multiply_2x_high(m2, m1)
    poly = (multiply_2x_high(hl.i16(2592), m3) + multiply_2x_high(hl.i16(7363), m2)
            + multiply_2x_high(hl.i16(22812), m1))
    poly_t = _cast(t, poly) << (bits - 16)
    return hl.saturating_add(p, multiply_2x_high(p, poly_t))


def approx_reciprocal(q: int, x: Any, t: str = "i32") -> hl.Expr:
    """~ 2^q / x."""
    return approx_exp2(q, -approx_log2(15, x, 0), 15, t)


def approx_reciprocal_sqrt(q: int, x: Any, t: str = "i32") -> hl.Expr:
    """~ 2^q / sqrt(x): the log is in Q14 but read as Q15, which halves it."""
    return approx_exp2(q, -approx_log2(14, x, 0), 15, t)


# ---- numpy (int64 values, explicit wraps) -------------------------------------------------------

def np_shl(a: Any, n: Any, t: str) -> np.ndarray:
    """Halide's `a << n` in type t: a negative (signed) amount shifts right (arithmetic on signed t)."""
    a = np.asarray(a, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    left = wrap(np.left_shift(a, np.clip(n, 0, 63)), t)
    right = np.right_shift(a, np.clip(-n, 0, 63))
    return np.where(n >= 0, left, right).astype(np.int64)


def np_rsr(a: Any, n: Any, t: str) -> np.ndarray:
    """rounding_shift_right(a, n) in type t for n >= 0 (exact, then saturated: it cannot overflow)."""
    a = np.asarray(a, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    return sat((a + ((np.int64(1) << n) >> 1)) >> n, t)


def np_mh(a: Any, b: Any, t: str) -> np.ndarray:
    """multiply_2x_high in type t (both operands of type t)."""
    bits = _BITS[t]
    prod = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    if bits == 32:  # |a*b| <= 2^62: exact in int64; the rounding add cannot overflow either
        return sat((prod + (1 << 30)) >> 31, t)
    return sat((prod + (1 << (bits - 2))) >> (bits - 1), t)


def np_clz(x: Any, t: str) -> np.ndarray:
    """count_leading_zeros of x's bit pattern in type t (bits(t) for 0)."""
    bits = _BITS[t]
    u = np.asarray(x, dtype=np.int64) & ((1 << bits) - 1)
    out = np.full(u.shape, bits, dtype=np.int64)
    for b in range(bits):  # highest set bit wins: scan upwards
        out = np.where((u >> b) & 1 == 1, bits - 1 - b, out)
    return out


def np_floor_log2(x: Any, t: str) -> np.ndarray:
    return wrap(wrap(_BITS[t] - 1, "i16") - wrap(np_clz(x, t), "i16"), "i16")


def np_approx_log2(q: int, x: Any, q_x: int, t: str = "i32") -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    f = np_floor_log2(x, "i32")
    m1 = wrap(np_shl(x, wrap(15 - f, "i32"), "i32"), "i16") & 0x7FFF
    m2 = np_mh(m1, m1, "i16")
    m3 = np_mh(m2, m1, "i16")
    poly = wrap(np_mh(2555, m3, "i16") + np_mh(-9421, m2, "i16") + np_mh(23249, m1, "i16") + 5, "i16")
    if q < 14:
        frac = wrap(np_rsr(poly, 14 - q, "i16"), t)
    else:
        frac = np_shl(wrap(poly, t), q - 14, t)
    whole = np_shl(wrap(wrap(f - q_x, "i16"), t), q, t)
    return sat(whole + frac, t)


def np_approx_exp2(q: int, x: Any, q_x: Any, x_t: str, t: str) -> np.ndarray:
    """x is of type x_t; q_x is an int (or array) >= 0."""
    x = np.asarray(x, dtype=np.int64)
    q_x = np.asarray(q_x, dtype=np.int64)
    bits = _BITS[t]
    wide = x_t if _BITS[x_t] >= bits else t  # the wider of X and T (both signed here)
    n = wrap(x >> q_x, t)
    amount = wrap(n + q, t)
    p = sat(np_shl(1, amount, "i32"), t)
    diff = wrap(x - np_shl(n, q_x, t), wide)
    m1 = np_shl(wrap(diff, "i16"), wrap(15 - wrap(q_x, "i16"), "i16"), "i16")
    m2 = np_mh(m1, m1, "i16")
    m3 = np_mh(m2, m1, "i16")
    poly = wrap(np_mh(2592, m3, "i16") + np_mh(7363, m2, "i16") + np_mh(22812, m1, "i16"), "i16")
    poly_t = np_shl(wrap(poly, t), bits - 16, t)
    return sat(p + np_mh(p, poly_t, t), t)


def np_approx_reciprocal(q: int, x: Any, t: str = "i32") -> np.ndarray:
    return np_approx_exp2(q, wrap(-np_approx_log2(15, x, 0), "i32"), 15, "i32", t)


def np_approx_reciprocal_sqrt(q: int, x: Any, t: str = "i32") -> np.ndarray:
    return np_approx_exp2(q, wrap(-np_approx_log2(14, x, 0), "i32"), 15, "i32", t)


def np_requantize(acc: Any, mult: Any, shift: Any, out_zero: Any, out_min: Any, out_max: Any) -> np.ndarray:
    """The hannk requantize chain on an i32 accumulator (mul, fully_connected, depthwise_conv):
    clamp(u8_sat(saturating_add(i16_sat(rounding_shr(multiply_2x_high(acc, mult), shift)), out_zero)))."""
    q = np_mh(acc, mult, "i32")
    s = np_rsr(q, shift, "i16")
    t = sat(s + np.int64(out_zero), "i16")
    return np.clip(sat(t, "u8"), out_min, out_max)


def requantize(acc: Any, mult: Any, shift: Any, out_zero: Any, out_min: Any, out_max: Any) -> hl.Expr:
    """Halide twin of `np_requantize`: i32 accumulator -> u8."""
    q = multiply_2x_high(acc, mult)
    s = hl.i16_sat(hl.rounding_shift_right(q, shift))
    t = hl.u8_sat(hl.saturating_add(s, hl.i16(out_zero)))
    return hl.clamp(t, out_min, out_max)


# ---- the element-wise binary ops (add, mul): one schedule and input maker ---------------------------

def schedule_elementwise(out: hl.Func, x: hl.Var, in2: hl.ImageParam, lanes: int) -> None:
    """hannk's element-wise schedule: `out` at root, vectorized by `lanes` with predicated tails.

    in2 may be broadcast along x (stride 0): the source specializes on strides 1 and 0 and rejects others.
    """
    in2.dim(0).set_stride(hl.Expr())
    out.compute_root()
    for stride in (1, 0):
        out.specialize(in2.dim(0).stride() == stride).vectorize(x, lanes, hl.TailStrategy.Predicate)
    out.specialize_fail("in2 must have a dim-0 stride of 0 or 1")


def two_u8_images(scalars: tuple[str, ...]) -> Any:
    """`make_inputs` of an element-wise op: two random u8 [x, y] images, then the scalars of `pset`."""

    def make_inputs(rng: np.random.Generator, size: Any, pset: dict[str, Any]) -> list[Any]:
        w, h = size
        images = [rng.integers(0, 256, (h, w), dtype=np.uint8) for _ in range(2)]
        return images + [pset[n] for n in scalars]

    return make_inputs
