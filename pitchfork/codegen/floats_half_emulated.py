"""float16 where Halide 21 emulates it: arm64 without arm_fp16, and hvx128 (Halide 21 refuses float16
vectors there itself, "Unsupported HVX type: float16x8"; ours compute each lane as Halide's scalar code
does: the emulation is element-wise, and hvx_floats' builder emits float32 vector ops lane by lane).
Read off Halide's modules (`compile_to_llvm_assembly` for arm-64-linux and
hexagon-32-noos-hvx-hvx_128-hvx_v66, scalar and 8 lanes; CodeGen_LLVM's upgrade_type_for_arithmetic /
_for_storage and EmulateFloat16Math.cpp):

* a float16 value is its 16 bits (loads, stores, select, reinterpret, lets move them unchanged: a NaN
  keeps its payload);
* every operation on float16 (+ - * / % min max, comparisons, hl.strict_float's strict_* operations,
  is_nan / is_inf / is_finite and the math calls) is the float32 operation of the operands converted
  by Halide's float16_to_float32 (bit-level, exact: `widen_half_bits`), and a float16 result is
  converted back by its float32_to_float16 (bit-level, rounded to nearest even, NaN -> an infinity of
  its sign: floats_half.narrow_half_x86, the same code as x86's for math calls);
* a conversion to float16 goes through float32 (an integer by sitofp / uitofp, a float64 by fptrunc:
  rounded twice, as Halide's lower_float16_cast), one from float16 through float32 too;
* `round` is Halide's round-half-to-even lowering on float16 values (each step emulated);
  `abs` is select(x >= 0, x, 0 - x); `lerp` per target (`_lerp`: one float32 lerp on arm64, four
  float16 operations on hvx128, where Halide lowers it before widening: checked against Halide's own
  Hexagon library under qemu-hexagon);
  `pow` CodeGen_LLVM's float32 expansion (as on x86).

`lower_half_emulated` rewrites such an expression in Halide IR into float32 operations between
conversions, which floats.py emits with `widen_half_bits` / narrow_half_x86 (FloatEmitter.emulate_half);
what it returns None for (select, loads, constants, reinterpret, casts) is emitted on the 16 bits.
Invariant: the rewritten expression has the original's type, and computes what Halide's module computes
for every input where Halide's code defines the result (its fast-math flags make NaN and infinities
poison in the arithmetic; the conversions, predicates and strict operations define them).
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.codegen.base import Unsupported
from pitchfork.codegen.float_math import FloatOps, like
from pitchfork.codegen.floats_half import (HALIDE_POW, NARROW_X86, WIDENED, _f32, _widen, fused_lerp,
                                           integer_weight, widen_to)
from pitchfork.codegen.halide_calls import _float
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.targets.target_strings import has_feature

#: float16 binary operators computed in float32 and converted back
_ARITH = ("+", "-", "*", "/", "%", "min", "max")
#: float16 comparisons, computed on the float32 values
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_STRICT_ARITH = ("strict_add", "strict_sub", "strict_mul", "strict_div", "strict_min", "strict_max")
_STRICT_CMP = ("strict_lt", "strict_le", "strict_eq", "strict_gt", "strict_ge", "strict_ne")
_PREDICATES = ("is_nan_f16", "is_inf_f16", "is_finite_f16")
_IDENTITY = ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped", "strict_float")


def emulates_half(target: str, halide_target: str) -> bool:
    """Whether Halide 21 computes float16 with its float32 emulation for this target: hvx128, and
    arm64 without arm_fp16 (x86 with f16c and arm_fp16 compute it natively as LLVM `half`)."""
    return target == "hvx128" or target == "arm64" and not has_feature(halide_target, "arm_fp16")


def _is_half(t: HType) -> bool:
    return t.code == "float" and t.bits == 16


def _narrow(t: HType, e: H.Expr) -> H.Expr:
    return H.Call(NARROW_X86, (e,), t)


def _u16(t: HType) -> HType:
    return HType("uint", 16, t.lanes)


def _k16(v: int, t: HType) -> H.Expr:
    k = H.IntImm(v, HType("uint", 16, 1))
    return k if t.lanes == 1 else H.Broadcast(k, t.lanes, _u16(t))


def _signed(x: H.Expr, bits: int) -> H.Expr:
    """The float16 with `bits` and the sign of x (copysign of a constant)."""
    t = x.type
    sign = H.Call("bitwise_and", (H.Reinterpret(_u16(t), x), _k16(0x8000, t)), _u16(t))
    return H.Reinterpret(t, H.Call("bitwise_or", (sign, _k16(bits, t)), _u16(t)))


def _round(x: H.Expr) -> H.Expr:
    """Halide's round-half-to-even of a float16 (its generic lowering, every step a float16 operation,
    so emulated in turn): ix = int16(x + copysign(0x1.ffcp-2, x)), a = float16(ix), minus copysign(1, x)
    where a - x is the tie copysign(0.5, x) and ix is odd (as floats_half.round_half_x86)."""
    t = x.type
    i16 = HType("int", 16, t.lanes)
    b1 = HType("uint", 1, t.lanes)
    ix = H.Cast(i16, H.BinOp("+", x, _signed(x, 0x37FF), t))
    a = H.Cast(t, ix)
    tie = H.BinOp("==", H.BinOp("-", a, x, t), _signed(x, 0x3800), b1)
    one = H.IntImm(1, HType("int", 16, 1))
    zero = H.IntImm(0, HType("int", 16, 1))
    if t.lanes > 1:
        one, zero = H.Broadcast(one, t.lanes, i16), H.Broadcast(zero, t.lanes, i16)
    odd = H.BinOp("!=", H.Call("bitwise_and", (ix, one), i16), zero, b1)
    return H.Select(H.BinOp("&&", odd, tie, b1), H.BinOp("-", a, _signed(x, 0x3C00), t), a, t)


def lower_half_emulated(e: H.Expr, node: H.Node | None = None, hexagon: bool = False) -> H.Expr | None:
    """`e` (a float16 operation, or one with float16 operands) as Halide's emulation computes it, in
    Halide IR of float32 operations and conversions; None for what is emitted on the 16 bits as it is.
    `hexagon`: hvx128's form where it differs (`_lerp`).
    Raises Unsupported naming a float16 call the emulation does not cover (and the statement `node`)."""
    if isinstance(e, H.BinOp) and e.op in _ARITH and _is_half(e.type):
        return _narrow(e.type, H.BinOp(e.op, _widen(e.a), _widen(e.b), _f32(e.type)))
    if isinstance(e, H.BinOp) and e.op in _CMP and _is_half(e.a.type):
        return H.BinOp(e.op, _widen(e.a), _widen(e.b), e.type)
    if isinstance(e, H.VectorReduce) and _is_half(e.type):
        if hexagon and e.type.lanes > 1:
            raise Unsupported(f"floating-point vector_reduce_{e.op} ({e.value.type} to {e.type}): float16 "
                              "reductions to several lanes on hvx128 are not compiled (Halide 21's own Hexagon code "
                              "for them aborts in LLVM: nothing to compare with)", node)
        # the float32 reduction of the widened value, rounded once (arm-64-linux: Halide's module has
        # llvm.vector.reduce.fadd.v8f32 from 0.0; hexagon-32-noos-hvx-hvx_128: float16x64 to one lane is
        # the two native float32 halves added, then float_reduce's steps, from 0.0); its initial value
        # is combined by the emulated `+` / min / max around it
        return _narrow(e.type, H.VectorReduce(e.op, _widen(e.value), _f32(e.type)))
    if not isinstance(e, H.Call) or e.name in _IDENTITY or e.name == NARROW_X86:
        return None
    if e.name in _STRICT_ARITH and _is_half(e.type):
        return _narrow(e.type, H.Call(e.name, tuple(_widen(a) for a in e.args), _f32(e.type)))
    if e.name in _STRICT_CMP and e.args and _is_half(e.args[0].type):
        return H.Call(e.name, tuple(_widen(a) for a in e.args), e.type)
    if e.name in _PREDICATES:
        return H.Call(e.name[:-4] + "_f32", tuple(_widen(a) for a in e.args), e.type)
    if e.name == "round" and _is_half(e.type):
        return _round(e.args[0])
    if e.name == "abs" and _is_half(e.type):
        v, t = e.args[0], e.type
        zero = H.FloatImm(0.0, HType("float", 16, 1))
        z: H.Expr = zero if t.lanes == 1 else H.Broadcast(zero, t.lanes, t)
        return H.Select(H.BinOp(">=", v, z, HType("uint", 1, t.lanes)), v, H.BinOp("-", z, v, t), t)
    if e.name == "lerp" and _is_half(e.type):
        return _lerp(e, hexagon, node)
    if e.name.endswith("_f16") and e.name[:-4] in WIDENED:
        name = HALIDE_POW if e.name == "pow_f16" else e.name[:-4] + "_f32"
        return _narrow(e.type, H.Call(name, tuple(_widen(a) for a in e.args), _f32(e.type)))
    if any(_is_half(t) for t in (e.type, *(a.type for a in e.args))):
        raise Unsupported(f"floating-point call {e.name} on float16 values (not compiled where Halide "
                          "emulates float16)", node)
    return None


def _lerp(e: H.Call, hexagon: bool, node: H.Node | None) -> H.Expr:
    """lerp of float16 values where Halide emulates float16 (Lerp.cpp's zero * (1 - w) + one * w, read
    off its modules): a float32 weight, the float32 lerp of the converted values, rounded once; a float64
    weight, `fused_lerp` in float64, rounded to float32 then to float16 (lower_float16_cast; refused on
    hvx128, whose harness has no fma); on arm64
    (its code generator lowers the lerp after widening float16 to float32) a float16 weight as a float32
    one and an integer weight as `fused_lerp` in float32 of w = float32(u) * float32(1/255); on hvx128
    Halide lowers it on float16 first, so with a float16 or integer weight (w = float16(u) * float16(1/255))
    each of 1 - w, the two products and the sum is its own float16 operation (emulated, rounded)."""
    zero, one, w = e.args
    t = e.type
    if w.type.is_float and w.type.bits == 64 and hexagon:
        raise Unsupported("lerp of float16 values with a float64 weight on hvx128 (a float64 fused multiply-add: "
                          "the Hexagon harness has no C library for fma)", node)
    if w.type.is_float and w.type.bits == 64:
        return H.Cast(t, H.Cast(_f32(t), fused_lerp(widen_to(zero, 64), widen_to(one, 64), w)))
    if w.type.is_float and w.type.bits == 32 or not hexagon and w.type.is_float:
        return _narrow(t, H.Call("lerp", (_widen(zero), _widen(one), _widen(w)), _f32(t)))
    if not hexagon:
        return _narrow(t, fused_lerp(_widen(zero), _widen(one), integer_weight(w, _f32(t), node)))
    inverse = lambda w: H.BinOp("-", _float(1.0, t), w, t)  # noqa: E731
    if w.type.is_float:
        return H.BinOp("+", H.BinOp("*", zero, inverse(w), t), H.BinOp("*", one, w, t), t)
    # Halide's simplifier has made one * (float16(u) / 255) (one * float16(u)) / 255 (its module)
    u, k = integer_weight(w, t, node).args
    scaled = H.BinOp("*", u, k, t)
    return H.BinOp("+", H.BinOp("*", zero, inverse(scaled), t), H.BinOp("*", H.BinOp("*", one, u, t), k, t), t)


def widen_half_bits(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """Halide's float16_to_float32 (EmulateFloat16Math.cpp) of a `half` value (scalar or vector):
    integer code on its bits, exact for every pattern (a NaN keeps its payload, a signalling one stays
    signalling): 0 -> +-0, a subnormal m -> float32(m) with the exponent lowered by 24, an infinity or
    NaN -> bits << 13 | 0x7f800000, else bits << 13 + the exponent rebiased; then the sign."""
    i16: ir.Type = like(v, ir.IntType(16))
    i32: ir.Type = like(v, ir.IntType(32))
    f32: ir.Type = like(v, ir.FloatType())

    def k(t: ir.Type, x: int) -> ir.Constant:
        return FloatOps.const(t, x)

    bits = b.bitcast(v, i16)
    mag = b.and_(bits, k(i16, 0x7FFF))
    sign = b.shl(b.zext(b.and_(bits, k(i16, -0x8000)), i32), k(i32, 16))
    denorm = b.sub(b.bitcast(b.uitofp(mag, f32), i32), k(i32, 0x0C000000))
    shifted = b.shl(b.zext(mag, i32), k(i32, 13))
    normal = b.add(shifted, k(i32, 0x38000000))
    special = b.or_(shifted, k(i32, 0x7F800000))
    out = b.select(b.icmp_unsigned(">=", mag, k(i16, 0x7C00)), special, normal)
    out = b.select(b.icmp_unsigned("<", mag, k(i16, 0x0400)), denorm, out)
    out = b.select(b.icmp_unsigned("==", mag, k(i16, 0)), k(i32, 0), out)
    return b.bitcast(b.or_(out, sign), f32)
