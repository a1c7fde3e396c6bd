"""bfloat16, computed as Halide 21 computes it on every CPU target: in float32, rounded after each
operation (Halide's EmulateFloat16Math.cpp; its modules for x86 and arm64 have no `bfloat` type).

Representation: inside an expression a bfloat16 value is the float32 with the same value (its 16
bits in the high half, the low half zero: `widen`); it is rounded back after each operation
(`round_to_bfloat`) and stored as its high 16 bits (`narrow`). As in Halide's module (read off
`compile_to_llvm_assembly` of x86-64-linux-avx-avx2-fma-sse41 pipelines with bfloat16 values):

* a load is the uint16 load, zero-extended and shifted left 16 (exact); a store the top 16 bits;
* `a op b` (+ - * / % min max) is the float32 operation of the widened operands with Halide's
  fast-math flags, then rounded to nearest even by integer code: bits + 0x7fff + ((bits >> 16) & 1),
  the low 16 bits cleared (NaN payloads are not preserved, as Halide's are not);
* a conversion to bfloat16 converts to float32 first (sitofp / uitofp / fpext; a float64 is fptrunc'd
  to float32 first, so it is rounded twice, as Halide 21 does), then rounds; a conversion from
  bfloat16 converts the widened float32;
* comparisons, select, min/max operands and lets work on the widened values (exact).

`lower_bfloat` rewrites a bfloat16 operation into that form in Halide IR (a float32 operation
between casts); floats.py emits the casts, loads, stores and reinterprets with the helpers here, and
`round` with `round_bfloat` (Halide's generic lowering); `abs` is Halide's select(x >= 0, x, -x),
`lerp` the float32 lerp rounded once, hl.strict_float's strict_* arithmetic the float32 operation with no
flags, rounded. Other calls on bfloat16 (Halide's front end already writes sqrt, floor ... of a bfloat16
as the float32 call of its float32 value; saturating_cast to bfloat16 is expanded before, as every
saturating_cast to a float type: halide_calls.lower_float_saturating_cast) are refused by name.
A `vector_reduce` to several lanes is Halide's generic steps on bfloat16 operations (`_reduce`), its
slices pushed down to the loads (on hvx128 a slice of the widened n-lane value was miscompiled by LLVM
22: see `_reduce`); to one lane it is refused by name (Halide 21's own module for it fails LLVM's
verifier).
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.codegen.base import Unsupported
from pitchfork.codegen.float_math import FloatOps, with_lanes
from pitchfork.codegen.reduce import slice_expr
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType

#: arithmetic operators computed in float32 and rounded once
_ARITH = ("+", "-", "*", "/", "%", "min", "max")
#: hl.strict_float's arithmetic on bfloat16 values (its comparisons compare the exact float32 values)
_STRICT_ARITH = ("strict_add", "strict_sub", "strict_mul", "strict_div", "strict_min", "strict_max")
_IDENTITY_CALLS = ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped",
                   "strict_float")


def is_bfloat(t: HType) -> bool:
    return t.code == "bfloat"


def _lanes_of(v: ir.Value) -> int:
    return v.type.count if isinstance(v.type, ir.VectorType) else 0


def _int_type(bits: int, lanes: int) -> ir.Type:
    return with_lanes(ir.IntType(bits), lanes)


def widen(b: ir.IRBuilder, bits16: ir.Value) -> ir.Value:
    """The float32 of bfloat16 bits (i16 or <N x i16>): zext, << 16, bitcast (exact)."""
    n = _lanes_of(bits16)
    i32 = _int_type(32, n)
    f32: ir.Type = ir.VectorType(ir.FloatType(), n) if n else ir.FloatType()
    return b.bitcast(b.shl(b.zext(bits16, i32), FloatOps.const(i32, 16)), f32)


def round_to_bfloat(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The float32 `v` rounded to the nearest bfloat16, ties to even (Halide's float_to_bfloat16:
    bits + 0x7fff + ((bits >> 16) & 1)), as a float32 with its low 16 bits zero."""
    n = _lanes_of(v)
    i32 = _int_type(32, n)
    bits = b.bitcast(v, i32)
    odd = b.and_(b.lshr(bits, FloatOps.const(i32, 16)), FloatOps.const(i32, 1))
    rounded = b.add(b.add(bits, FloatOps.const(i32, 0x7FFF)), odd)
    return b.bitcast(b.and_(rounded, FloatOps.const(i32, -0x10000)), v.type)


def narrow(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The bfloat16 bits (i16 lanes) of a widened value (its high 16 bits)."""
    n = _lanes_of(v)
    i32 = _int_type(32, n)
    return b.trunc(b.lshr(b.bitcast(v, i32), FloatOps.const(i32, 16)), _int_type(16, n))


def round_bfloat(b: ir.IRBuilder, ops: FloatOps, x: ir.Value) -> ir.Value:
    """Halide's `round` of bfloat16 (lower_round_to_nearest_ties_to_even, every operation on
    bfloat16 so rounded after it): ix = int16(x + copysign(0x1.fep-2, x)), a = bfloat16(ix), minus
    copysign(1, x) where a - x is a tie of the sign of x and ix is odd. round(-0.25) is +0.0, and
    |x| >= 32768 overflows int16 (poison, in Halide's module too)."""
    n = _lanes_of(x)
    i16 = _int_type(16, n)

    def k(v: int) -> ir.Constant:
        return FloatOps.const(i16, v)

    sign = b.and_(narrow(b, x), k(-0x8000))
    one_half, just_under, one = (widen(b, b.or_(sign, k(v))) for v in (0x3F00, 0x3EFF, 0x3F80))
    ix = b.fptosi(round_to_bfloat(b, ops.add(just_under, x)), i16)
    a = round_to_bfloat(b, b.sitofp(ix, x.type))
    tie = ops.cmp("==", round_to_bfloat(b, ops.sub(a, x)), one_half)
    odd = b.icmp_signed("!=", b.and_(ix, k(1)), k(0))
    correction = b.select(b.and_(odd, tie), one, FloatOps.const(x.type, 0.0))
    return round_to_bfloat(b, ops.sub(a, correction))


def _f32(t: HType) -> HType:
    return HType("float", 32, t.lanes)


def lower_bfloat(e: H.Expr, node: H.Node | None = None) -> H.Expr | None:
    """A bfloat16 operation as Halide computes it: the float32 operation of its operands' float32
    values, converted back (rounded) to bfloat16; None for what floats.py emits on the widened
    values directly (loads, casts, select, comparisons, `round`: `round_bfloat`). Unsupported names
another bfloat16 call (and the statement `node`'s line)."""
    if isinstance(e, H.BinOp) and e.op in _ARITH and is_bfloat(e.type):
        a, c = (H.Cast(_f32(x.type), x) for x in (e.a, e.b))
        return H.Cast(e.type, H.BinOp(e.op, a, c, _f32(e.type)))
    if isinstance(e, H.Call) and is_bfloat(e.type) and e.name in _STRICT_ARITH:
        # hl.strict_float: the float32 operation with no fast-math flags, rounded (Halide's module)
        a, c = (H.Cast(_f32(x.type), x) for x in e.args)
        return H.Cast(e.type, H.Call(e.name, (a, c), _f32(e.type)))
    if isinstance(e, H.Call) and is_bfloat(e.type) and e.name == "abs":
        # Halide's abs of a bfloat16: x >= 0 ? x : -x, the negation rounded (exact), so abs(-0) is -0
        # and a NaN keeps its sign (its module selects between the 16-bit patterns)
        v = e.args[0]
        zero = H.FloatImm(0.0, e.type) if e.type.lanes == 1 else H.Broadcast(
            H.FloatImm(0.0, HType(e.type.code, 16, 1)), e.type.lanes, e.type)
        return H.Select(H.BinOp(">=", v, zero, HType("uint", 1, e.type.lanes)), v,
                        H.BinOp("-", zero, v, e.type), e.type)
    if isinstance(e, H.Call) and is_bfloat(e.type) and e.name == "lerp":
        # Halide's lerp of bfloat16 values: the float32 lerp of their float32 values (an integer weight
        # scaled in float32: w * (1/255.0f)), rounded once at the end
        zero_, one_, w = e.args
        w32 = H.Cast(_f32(w.type), w) if is_bfloat(w.type) else w
        values = tuple(H.Cast(_f32(v.type), v) for v in (zero_, one_))
        return H.Cast(e.type, H.Call("lerp", (*values, w32), _f32(e.type)))
    if isinstance(e, H.VectorReduce) and is_bfloat(e.type):
        return _reduce(e, node)
    if isinstance(e, H.Call) and is_bfloat(e.type) and e.name not in (*_IDENTITY_CALLS, "round"):
        raise Unsupported(f"floating-point call {e.name} on bfloat16 values (not compiled for bfloat16)",
                          node)
    return None


#: a bfloat16 vector_reduce's operator as the binary operator that combines its slices
_REDUCE_OPS = {"add": "+", "mul": "*", "min": "min", "max": "max"}


def _reduce(e: H.VectorReduce, node: H.Node | None) -> H.Expr | None:
    """A bfloat16 `vector_reduce` to m > 1 lanes as Halide 21's CodeGen_LLVM::codegen_vector_reduce
    computes it (no target has a bfloat16 reduction, not arm64's pairwise ones either): an even factor
    f > 2 first to half the input lanes, then to m; otherwise the f strided slices combined in order
    by the bfloat16 operator, each step its own float32 operation rounded to bfloat16 (Halide's codegen
    of the Expr-level Add / Mul / Min / Max it builds). Its initial value is not folded in (Halide
    widens `vector_reduce(v) + init` to float32 before it would fold: the sum is rounded, then added).
    To one lane Halide 21 itself does not compile them (its module calls llvm.vector.reduce.f* on
    <N x i16> and fails LLVM's verifier on x86, arm64 and hvx128): refused by name, naming `node`."""
    op = _REDUCE_OPS.get(e.op)
    n, m = e.value.type.lanes, e.type.lanes
    if op is None or n % m:
        return None  # (float_reduce.py refuses it by name)
    if m == 1:
        raise Unsupported(f"floating-point vector_reduce_{e.op} ({e.value.type} to {e.type}): bfloat16 "
                          "reductions to one lane are not compiled (Halide 21 cannot compile them either: its "
                          "module fails LLVM's verifier)", node)
    f = n // m
    if f > 2 and f % 2 == 0:
        half = H.VectorReduce(e.op, e.value, HType(e.type.code, e.type.bits, n // 2))
        return H.VectorReduce(e.op, half, e.type)
    # each slice pushed down to the leaves (pitchfork.codegen.reduce.slice_expr: a shuffle of the
    # loaded 16-bit patterns, composed with the one that loaded them), never a slice of a widened
    # n-lane value: on hvx128 that n-lane value is a 16-bit gather whose lanes repeat (x + r*5 for
    # r-windows that overlap), and LLVM 22's Hexagon backend builds a 16-bit vector whose 32-bit words
    # repeat with a splat of the element type (HexagonISelLoweringHVX buildHvxVectorReg; fixed upstream by
    # llvm-project PR 204808): a factor-3 step to 8 lanes was wrong in lanes 1 and 6 of every 8
    parts = [slice_expr(e.value, i, f, m) for i in range(f)]
    acc = parts[0]
    for p in parts[1:]:
        acc = H.BinOp(op, acc, p, e.type)
    return acc
