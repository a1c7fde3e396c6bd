"""An independent reference for every FPIR op, written from the documented semantics (ops.py docs and
ISA_INTRINSICS.md section 1.1) with exact integers, not from fpir's definitions.

Each function takes numpy object arrays of Python ints (the operand values) and the operand/result types,
and returns the exact result values. `x >> k` on Python ints is floor division by 2^k. Shift amounts are
clipped to 256 before building 2^k: every operand has at most 64 bits (products 128), so any amount of
256 or more gives the same result as 256.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fpir.types import ScalarType

Arr = Any
BIG = 256


def wrap(v: Arr, t: ScalarType) -> Arr:
    """v modulo 2^bits into t's range."""
    return ((v - t.min) & ((1 << t.bits) - 1)) + t.min


def sat(v: Arr, t: ScalarType) -> Arr:
    return np.minimum(np.maximum(v, t.min), t.max)


def where(c: Arr, a: Arr, b: Arr) -> Arr:
    return np.where(np.asarray(c, dtype=bool), np.asarray(a, dtype=object), np.asarray(b, dtype=object))


def clip(v: Arr, lo: int, hi: int) -> Arr:
    return np.minimum(np.maximum(v, lo), hi)


def shift_left(a: Arr, b: Arr, t: ScalarType) -> Arr:
    """Halide's a << b in type t: b >= 0 multiplies by 2^b (wrapping), b < 0 is a floor shift right."""
    return where(b >= 0, wrap(a << clip(b, 0, BIG), t), a >> clip(-b, 0, BIG))


def shift_right(a: Arr, b: Arr, t: ScalarType) -> Arr:
    return where(b >= 0, a >> clip(b, 0, BIG), wrap(a << clip(-b, 0, BIG), t))


def round_shift_right(a: Arr, k: Arr) -> Arr:
    """floor((a + 2^(k-1)) / 2^k) for k >= 1, and a for k = 0 (k >= 0, exact)."""
    k = clip(k, 0, BIG)
    return (a + ((1 << k) >> 1)) >> k


def euclid_div(a: Arr, b: Arr, t: ScalarType) -> Arr:
    safe = where(b == 0, 1, b)
    r = a % np.abs(safe)  # Python %: 0 <= r < |b|
    return where(b == 0, 0, wrap((a - r) // safe, t))


def euclid_mod(a: Arr, b: Arr, t: ScalarType) -> Arr:
    safe = where(b == 0, 1, b)
    return where(b == 0, 0, a % np.abs(safe))


Ref = Callable[[Sequence[Arr], Sequence[ScalarType], ScalarType], Arr]

REFERENCE: dict[str, Ref] = {
    # primitives
    "add": lambda x, ts, rt: wrap(x[0] + x[1], rt),
    "sub": lambda x, ts, rt: wrap(x[0] - x[1], rt),
    "mul": lambda x, ts, rt: wrap(x[0] * x[1], rt),
    "div": lambda x, ts, rt: euclid_div(x[0], x[1], rt),
    "mod": lambda x, ts, rt: euclid_mod(x[0], x[1], rt),
    "min": lambda x, ts, rt: np.minimum(x[0], x[1]),
    "max": lambda x, ts, rt: np.maximum(x[0], x[1]),
    "eq": lambda x, ts, rt: where(x[0] == x[1], 1, 0),
    "ne": lambda x, ts, rt: where(x[0] != x[1], 1, 0),
    "lt": lambda x, ts, rt: where(x[0] < x[1], 1, 0),
    "le": lambda x, ts, rt: where(x[0] <= x[1], 1, 0),
    "gt": lambda x, ts, rt: where(x[0] > x[1], 1, 0),
    "ge": lambda x, ts, rt: where(x[0] >= x[1], 1, 0),
    "select": lambda x, ts, rt: where(x[0] != 0, x[1], x[2]),
    "and": lambda x, ts, rt: wrap(x[0] & x[1], rt),
    "or": lambda x, ts, rt: wrap(x[0] | x[1], rt),
    "xor": lambda x, ts, rt: wrap(x[0] ^ x[1], rt),
    "not": lambda x, ts, rt: wrap(~x[0], rt),
    "shl": lambda x, ts, rt: shift_left(x[0], x[1], rt),
    "shr": lambda x, ts, rt: shift_right(x[0], x[1], rt),
    "abs": lambda x, ts, rt: np.abs(x[0]),
    "cast": lambda x, ts, rt: where(x[0] != 0, 1, 0) if rt.bits == 1 else wrap(x[0], rt),
    "reinterpret": lambda x, ts, rt: wrap(x[0], rt),
    # FPIR (Table 1, exact)
    "widening_add": lambda x, ts, rt: x[0] + x[1],
    "widening_sub": lambda x, ts, rt: x[0] - x[1],
    "widening_mul": lambda x, ts, rt: x[0] * x[1],
    "extending_add": lambda x, ts, rt: wrap(x[0] + x[1], rt),
    "extending_sub": lambda x, ts, rt: wrap(x[0] - x[1], rt),
    "extending_mul": lambda x, ts, rt: wrap(x[0] * x[1], rt),
    "widening_shl": lambda x, ts, rt: shift_left(x[0], x[1], rt),
    "widening_shr": lambda x, ts, rt: shift_right(x[0], x[1], rt),
    "absd": lambda x, ts, rt: np.abs(x[0] - x[1]),
    "saturating_cast": lambda x, ts, rt: sat(x[0], rt),
    "saturating_add": lambda x, ts, rt: sat(x[0] + x[1], rt),
    "saturating_sub": lambda x, ts, rt: sat(x[0] - x[1], rt),
    "halving_add": lambda x, ts, rt: (x[0] + x[1]) >> 1,
    "halving_sub": lambda x, ts, rt: wrap((x[0] - x[1]) >> 1, rt),
    "rounding_halving_add": lambda x, ts, rt: (x[0] + x[1] + 1) >> 1,
    "rounding_shr": lambda x, ts, rt: where(x[1] >= 0, round_shift_right(x[0], x[1]),
                                            wrap(x[0] << clip(-x[1], 0, BIG), rt)),
    "rounding_shl": lambda x, ts, rt: where(x[1] < 0, round_shift_right(x[0], -x[1]),
                                            wrap(x[0] << clip(x[1], 0, BIG), rt)),
    "mul_shr": lambda x, ts, rt: sat((x[0] * x[1]) >> clip(x[2], 0, BIG), rt),
    "rounding_mul_shr": lambda x, ts, rt: sat(round_shift_right(x[0] * x[1], x[2]), rt),
    "saturating_shl": lambda x, ts, rt: sat(where(x[1] >= 0, x[0] << clip(x[1], 0, BIG),
                                                  x[0] >> clip(-x[1], 0, BIG)), rt),
}


def reference(op: str, cols: Sequence[np.ndarray], types: Sequence[ScalarType], rt: ScalarType) -> np.ndarray:
    """Exact result values (object array of Python ints) of `op` on the given operand values."""
    vals = [np.asarray(c, dtype=object) for c in cols]
    return np.asarray(REFERENCE[op](vals, types, rt), dtype=object)
