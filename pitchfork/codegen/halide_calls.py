"""Halide intrinsics that Halide's own code generator expands before emitting them: `lerp`, `mux` and
`saturating_cast` to a float type.

Halide keeps `lerp(zero, one, weight)` and `mux(index, v0, ..., vn)` as calls through lowering (they are
in the statement PITCHFORK captures) and expands them only in CodeGen_LLVM: `lower_lerp` (Lerp.cpp) and
`lower_mux` (CodeGen_Internal.cpp). `lower_call` gives the same expansion as a Halide IR expression of
plain operations and the intrinsics PITCHFORK already compiles, so the integer parts are lifted and
selected like any other expression (an integer lerp is two widening multiplies and a rounding divide
by 2^bits - 1, which Neon and HVX do with rounding narrowing shifts), and isel=llvm sees what Halide's
codegen would give LLVM.

Invariant: the expansion computes exactly the value Halide's does (the tests compare with `realize`
on every integer width and weight width Halide allows). Where Halide's expansion depends on the target
(the rounding divide of an integer lerp: a division by 2^bits - 1 on x86, two rounding shifts elsewhere)
we follow it; both forms are equal on every value the sum can take (checked exhaustively at 8 bits
and by Z3 at 16 in tests/pitchfork/codegen/test_halide_calls.py).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from pitchfork.codegen.base import Unsupported
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import Bool, Float, HType, UInt


def lower_call(e: H.Call, target: str, node: Optional[H.Node] = None) -> Optional[H.Expr]:
    """The expansion of `e` if it is a call Halide expands in its code generator, else None. A float
    lerp with a float weight is not expanded here: the float emitter emits it in Halide's order."""
    if e.name == "mux":
        return lower_mux(e)
    if e.name == "lerp":
        zero, _one, weight = e.args
        if zero.type.is_float and weight.type.is_float:
            return None
        return lower_lerp(e, target, node)
    return None


def lower_float_saturating_cast(e: H.Call) -> Optional[H.Expr]:
    """`saturating_cast` to a float type (float16, bfloat16, float32, float64) as Halide 21's
    lower_saturating_cast (FindIntrinsics.cpp) expands it in CodeGen_LLVM, else None: from a float,
    clamped to [t.min(), t.max()], which are -inf and +inf for every float type in Halide 21 (Type.cpp),
    in the wider of the two types (clamp(a) then the cast when narrowing, the cast then the clamp when
    widening); from an integer, the plain cast (lossless_cast of an infinity to the integer type is
    undefined, so no bound). The clamp is min then max (Halide's clamp), emitted as every float min /
    max is (on x86 LLVM folds it away; on arm64 Neon fmin / fmax with the infinities, as Halide's
    module): so the values are the cast's."""
    if e.name != "saturating_cast" or not e.type.is_float or len(e.args) != 1:
        return None
    a, t = e.args[0], e.type
    if a.type == t:
        return a
    if not a.type.is_float:
        return H.Cast(t, a)

    def clamp(v: H.Expr) -> H.Expr:
        vt = v.type
        hi, lo = _float(float("inf"), vt), _float(float("-inf"), vt)
        return _bin("max", _bin("min", v, hi), lo)

    if t.bits < a.type.bits:
        return H.Cast(t, clamp(a))
    return clamp(H.Cast(t, a))


def _splat(value: H.Expr, lanes: int) -> H.Expr:
    return value if lanes == 1 else H.Broadcast(value, lanes, value.type.with_lanes(lanes))


def _int(value: int, t: HType) -> H.Expr:
    """The integer constant `value` (wrapped to `t`) at `t`'s lanes."""
    e = t.elem
    v = value & ((1 << e.bits) - 1)
    if e.is_int and v >= 1 << (e.bits - 1):
        v -= 1 << e.bits
    return _splat(H.IntImm(v, e), t.lanes)


def _float(value: float, t: HType) -> H.Expr:
    return _splat(H.FloatImm(value, t.elem), t.lanes)


def _rounded(value: float, t: HType) -> float:
    """`value` rounded to the float type `t` (float16 / float32; float64 keeps it)."""
    return value if t.bits == 64 else float(np.float16(value) if t.bits == 16 else np.float32(value))


def _bin(op: str, a: H.Expr, b: H.Expr) -> H.Expr:
    t = Bool(a.type.lanes) if op in H.CMP_OPS else a.type
    return H.BinOp(op, a, b, t)


def lower_mux(e: H.Call) -> H.Expr:
    """`mux(index, v0, ..., vn)` -> `select(index == 0, v0, select(index == 1, v1, ... vn))`: an index
    out of range takes the last value, as Halide's lower_mux gives."""
    index, values = e.args[0], e.args[1:]
    if not values:
        raise Unsupported("mux with no values", e)
    result = values[-1]
    for i in range(len(values) - 1, -1, -1):
        cond = _bin("==", index, _int(i, index.type))
        if cond.type.lanes != e.type.lanes:  # a scalar index choosing among vectors
            cond = _splat(cond, e.type.lanes)
        result = H.Select(cond, values[i], result, e.type)
    return result


def _scale_weight(weight: H.Expr, ct: HType) -> H.Expr:
    """An unsigned integer weight of any width rescaled to `ct`'s bits: w * (2^n - 1) / (2^m - 1), done
    as Halide does it with the factors 2^k + 1 of 2^n - 1 (a multiply to widen, a divide to narrow)."""
    wt = weight.type
    diff = wt.bits - ct.bits
    if diff == 0:
        return weight
    bits_left, shift, scale = abs(diff), min(ct.bits, wt.bits), 1
    while bits_left:
        scale += scale << shift
        bits_left -= shift
        shift *= 2
    if diff < 0:
        return _bin("*", H.Cast(ct, weight), _int(scale, ct))
    return H.Cast(ct, _bin("/", weight, _int(scale, wt)))


def lower_lerp(e: H.Call, target: str, node: Optional[H.Node] = None) -> H.Expr:
    """Halide's lower_lerp, for integer (and bool) values with an integer or float weight, and for
    float values with an integer weight."""
    zero, one, weight = e.args
    t = zero.type
    lanes = t.lanes
    if t.is_float:  # float values, integer weight: w * (1 / (2^bits - 1)) in the values' type
        # (Halide's module multiplies by the reciprocal rounded to the type, 1/255 -> 0.003921569f: a
        # division would let LLVM's reassociation divide the whole sum last, overflowing near FLT_MAX)
        w = _bin("*", H.Cast(t, weight), _float(_rounded(1.0 / ((1 << weight.type.bits) - 1), t), t))
        return _bin("+", _bin("*", zero, _bin("-", _float(1.0, t), w)), _bin("*", one, w))
    if t.is_bool:
        half = _float(0.5, weight.type) if weight.type.is_float else _int(weight.type.max // 2, weight.type)
        return H.Select(_bin(">", weight, half), one, zero, e.type)
    bits = t.bits
    if bits == 64:
        raise Unsupported("64-bit lerp (Halide cannot compile it either)", node)
    ct = UInt(bits, lanes)
    bias = 0
    if t.is_int:  # signed: offset into the unsigned range, where the arithmetic wraps
        bias = 1 << (bits - 1)
        zero = _bin("-", H.Cast(ct, zero), _int(bias, ct))
        one = _bin("-", H.Cast(ct, one), _int(bias, ct))
    if weight.type.is_float:
        wt = weight.type
        if bits == 32:  # 2^32 - 1 as 65535 * 65537 in double, then the weight promoted to double
            f64 = Float(64, lanes)
            typed = H.Cast(ct, _bin("*", _bin("*", _float(65535.0, f64), _float(65537.0, f64)), H.Cast(f64, weight)))
        else:
            typed = H.Cast(ct, _bin("*", _float(float(ct.max), wt), weight))
    else:
        typed = _scale_weight(weight, ct)
    inverse = _bin("-", _int(ct.max, ct), typed)
    wide = UInt(2 * bits, lanes)
    prod_sum = _bin("+", H.Call("widening_mul", (zero, inverse), wide), H.Call("widening_mul", (one, typed), wide))
    if target == "x86-avx2":  # x86 has a multiply-high but no rounding shift: divide by 2^bits - 1
        divisor = (1 << bits) - 1
        result = _bin("/", _bin("+", prod_sum, _int(divisor // 2, wide)), _int(divisor, wide))
    else:  # (x + 2^(b-1)) / (2^b - 1) as ((x + 2^(b-1)) >> b + x + 2^(b-1)) >> b
        amount = _int(bits, wide)
        inner = H.Call("rounding_shift_right", (prod_sum, amount), wide)
        result = H.Call("rounding_shift_right", (_bin("+", inner, prod_sum), amount), wide)
    narrow: H.Expr = H.Cast(ct, result)
    if bias:
        narrow = H.Cast(t, _bin("+", narrow, _int(bias, ct)))
    return narrow
