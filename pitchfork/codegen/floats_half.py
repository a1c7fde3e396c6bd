"""float16 math calls and `%`, the way Halide 21's code generator computes them per target.

Halide's statement keeps float16 calls as `sqrt_f16`, `exp_f16`, `round`, `%` ... on float16
values; its LLVM code generator decides how each is computed. Read off Halide 21's modules
(`compile_to_llvm_assembly` for x86-64-linux-avx2-fma-f16c and arm-64-linux-arm_fp16, scalar and
8 lanes; the loops are kept in the session notes of issue 24):

* arm64 with arm_fp16 computes on half itself: `llvm.sqrt` / `llvm.roundeven` / floor / ceil /
  trunc / fabs of `<N x half>` with the fast-math flags, and `%` as a - b*floor(a/b) in half;
* x86 computes `%` and every math call in float32 (exact conversions to float32 and back, then the
  float32 operation: Halide's own sqrt_f32, halide_exp, libm's tanf ...), and `round` with its
  generic round-half-to-even on half (`round_half_x86`), which gives +0.0 for round(-0.25);
* on both, the other math calls (exp, log, sin, tan, atan2, pow, ...) are the float32 call between a
  conversion to float32 and one back to float16; `pow` is CodeGen_LLVM's expansion of pow_f32
  (FloatOps.halide_pow: exp(log|x| * y) with its sign and special cases), not a libm call;
* `lerp` as Halide's Lerp.cpp per target (`_lower_lerp`): on half on arm_fp16 (in float32 with a
  float32 weight; an integer weight is refused there), in float32 on x86, in float64 with a float64
  weight (`fused_lerp`);
* is_nan / is_inf / is_finite and the `strict_*` operations (hl.strict_float) are computed on half
  on both, with no fast-math flags (the same booleans and values as Halide's float32 forms: its
  conversions keep NaN, infinities and signed zeros).

`lower_half` rewrites such an expression into the float32 form in Halide IR (so the float32 code
paths, checked against Halide, compute it); what it returns None for is emitted on half as it is.
Invariant: the rewritten expression has the type of the original, and every conversion it adds is
exact (float16 -> float32) or a single float32 -> float16 conversion rounded to nearest even, as
Halide's. Halide converts a math call's float32 result back with its own bit-level code on x86
(EmulateFloat16Math.cpp's float32_to_float16: `narrow_half_x86`), which maps NaN to an infinity of
its sign (sqrt(-1) is -inf there); `%` with LLVM's fptrunc; arm_fp16 with fptrunc everywhere.
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.codegen.base import Unsupported
from pitchfork.codegen.float_math import FloatOps, like
from pitchfork.codegen.halide_calls import _float, _rounded
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType

#: float16 calls emitted on half as LLVM intrinsics (floats.py's `_UNARY`), by target
NATIVE: dict[str, tuple[str, ...]] = {
    "arm64": ("floor_f16", "ceil_f16", "trunc_f16", "abs", "sqrt_f16", "round"),
    # abs: fabs on half; floor / ceil / trunc are widened (Halide's x86 module rounds in float32 and
    # converts back with its bit-level code: floor(NaN) is an infinity there); `round` is lowered
    # (round_half_x86)
    "x86-avx2": ("abs",),
}
#: float16 math calls computed as the float32 call (`name_f32`) of the arguments converted
WIDENED = ("sqrt", "exp", "log", "sin", "cos", "tan", "atan", "atan2", "asin", "acos", "sinh", "cosh", "tanh",
           "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "pow")
#: float16 calls emitted on half on every target: the predicates (Halide widens them exactly on x86:
#: the same booleans) and the strict_* operations hl.strict_float writes (Halide's modules compute
#: them on half with no fast-math flags on x86 and arm_fp16; not strict_fma, which Python cannot write)
ON_HALF = ("is_nan_f16", "is_inf_f16", "is_finite_f16", "strict_add", "strict_sub", "strict_mul",
           "strict_div", "strict_min", "strict_max", "strict_lt", "strict_le", "strict_eq", "strict_gt",
           "strict_ge", "strict_ne")
#: the call floats.py emits as Halide's x86 float32 -> float16 conversion (`narrow_half_x86`)
NARROW_X86 = "pf.float32_to_float16"
#: the call floats.py emits as CodeGen_LLVM's float32 pow (FloatOps.halide_pow); Halide IR's pow_f32 is
#: pitchfork's own powf (powf.py)
HALIDE_POW = "pf.halide_pow_f32"


def _f32(t: HType) -> HType:
    return HType("float", 32, t.lanes)


def _widen(e: H.Expr) -> H.Expr:
    """`e` converted to float32 (exact); a constant stays a constant (Halide's simplifier folds the
    conversion, so `%` by it multiplies by its reciprocal: FloatOps.mod)."""
    if not (e.type.code == "float" and e.type.bits == 16):
        return e
    if isinstance(e, H.FloatImm):
        return H.FloatImm(e.value, _f32(e.type))
    if isinstance(e, H.Broadcast) and isinstance(e.value, H.FloatImm):
        return H.Broadcast(H.FloatImm(e.value.value, _f32(e.value.type)), e.count, _f32(e.type))
    return H.Cast(_f32(e.type), e)


def _narrow(t: HType, e: H.Expr, target: str) -> H.Expr:
    """The float32 `e` converted to the float16 type `t` as Halide converts a math call's result on
    `target`: its bit-level code on x86 (NARROW_X86), LLVM's fptrunc on arm_fp16."""
    return H.Call(NARROW_X86, (e,), t) if target == "x86-avx2" else H.Cast(t, e)


def lower_half(e: H.Expr, target: str, node: H.Node | None = None) -> H.Expr | None:
    """The float32 form Halide computes a float16 call or `%` in on `target`, or None when it is
    computed on half (NATIVE, ON_HALF, `round` on x86: `round_half_x86`; `%` on
    arm64). Raises Unsupported naming a float16 call neither form covers (and the statement
    `node`'s line)."""
    if isinstance(e, H.BinOp) and e.op == "%" and e.type.code == "float" and e.type.bits == 16:
        if target == "arm64":
            return None
        return H.Cast(e.type, H.BinOp("%", _widen(e.a), _widen(e.b), _f32(e.type)))
    if not isinstance(e, H.Call) or e.name in NATIVE.get(target, ()) or e.name in ("round", NARROW_X86):
        return None
    if e.name in ON_HALF:
        return None
    if e.name == "lerp":
        return _lower_lerp(e, target, node)
    if e.name.endswith("_f16") and e.name[:-4] in WIDENED:
        name = HALIDE_POW if e.name == "pow_f16" else e.name[:-4] + "_f32"
        return _narrow(e.type, H.Call(name, tuple(_widen(a) for a in e.args), _f32(e.type)), target)
    raise Unsupported(f"floating-point call {e.name} on float16 values (not compiled for float16)", node)


def _lower_lerp(e: H.Call, target: str, node: H.Node | None) -> H.Expr | None:
    """lerp of float16 values as Halide's modules compute it: a float64 weight in float64 (the values
    widened exactly, `fused_lerp`, then one conversion to float16 as every float64 -> float16 cast on
    `target`); on arm_fp16 on half with a float16 weight (None: floats.py's float lerp), the float32
    lerp of the widened values with a float32 weight, and an integer weight refused (Halide's backend
    fuses its sum on half as (u * k) * d + zero or u * (k * d) + zero depending on the surrounding code:
    read off its objects; no one form is Halide's); on x86 the float32 lerp (an integer weight scaled in
    float32: w * (1/255.0f)), then LLVM's fptrunc."""
    zero, one, w = e.args
    if w.type.is_float and w.type.bits == 64:
        return H.Cast(e.type, fused_lerp(widen_to(zero, 64), widen_to(one, 64), w))
    if target == "arm64" and not w.type.is_float:  # (arm_fp16: the emulated arm64 is floats_half_emulated.py)
        raise Unsupported(f"lerp of float16 values with a {w.type.elem} weight on arm_fp16 (Halide's LLVM fuses "
                          "its (one - zero) * (u * 1/255) + zero on half as (u * k) * d or u * (k * d) depending "
                          "on the surrounding code; ours cannot follow that choice)", node)
    if target == "arm64" and w.type.bits == 16:
        return None
    return H.Cast(e.type, H.Call("lerp", (_widen(zero), _widen(one), _widen(w)), _f32(e.type)))


def widen_to(e: H.Expr, bits: int) -> H.Expr:
    """The float16 `e` converted (exactly) to float`bits`."""
    return H.Cast(HType("float", bits, e.type.lanes), e)


def integer_weight(w: H.Expr, t: HType, node: H.Node | None) -> H.Expr:
    """Halide's lower_lerp weight for an unsigned integer `w` and values of the float type `t`:
    float(w) / (2^bits - 1), the division by a constant made a product with its reciprocal rounded to
    `t` (CodeGen_LLVM's float division by a constant), as strict_mul (no fast-math flags: LLVM must not
    reassociate it into the lerp's product, which Halide's LLVM does not either). Refused for float16
    values and a weight wider than 8 bits: 2^16 - 1 is not a finite float16, so Halide's own scale is
    1/inf (every weight but the largest becomes 0)."""
    bits = w.type.bits
    if t.bits == 16 and bits > 8:
        raise Unsupported(f"lerp of float16 values with a {w.type.elem} weight on a target that computes it on "
                          f"float16 (Halide scales the weight by 1/{(1 << bits) - 1}, which is 1/inf in float16)",
                          node)
    return H.Call("strict_mul", (H.Cast(t, w), _float(_rounded(1.0 / ((1 << bits) - 1), t), t)), t)


def fused_lerp(zero: H.Expr, one: H.Expr, w: H.Expr) -> H.Expr:
    """zero + (one - zero) * w with one fused multiply-add, the form Halide's LLVM makes of Lerp.cpp's
    zero * (1 - w) + one * w under its fast-math flags where it computes a lerp of float16 values in
    float64 (a float64 weight: x86, arm64) or in float32 with an integer weight (arm64 without arm_fp16),
    read off its modules and objects (fsub, then fmadd / vfmadd of the difference and the weight; the
    weight's product u * k first), written out without flags (strict_sub, strict_fma) so that our LLVM
    cannot reassociate it otherwise (on half it multiplied the scale into the difference first)."""
    return H.Call("strict_fma", (H.Call("strict_sub", (one, zero), one.type), w, zero), zero.type)


def narrow_half_x86(b: ir.IRBuilder, module: ir.Module, v: ir.Value, target: str = "") -> ir.Value:
    """Halide's float32 -> float16 conversion on x86 (EmulateFloat16Math.cpp float32_to_float16, as
    its module computes it): |v| < 2^-14 is |v| * 2^24 rounded to an integer (the subnormal's bits),
    |v| >= 65520 (infinities and NaN too: NaN becomes an infinity of its sign) is 0x7c00, the rest
    the bits rounded to nearest even with the exponent rebiased; then the sign. Integer code and a
    roundeven without fast-math flags, so every input has its defined result. Also Halide's conversion
    wherever it emulates float16 (floats_half_emulated.py: arm64 without arm_fp16, hvx128)."""
    i32: ir.Type = like(v, ir.IntType(32))
    i16: ir.Type = like(v, ir.IntType(16))
    half: ir.Type = like(v, ir.HalfType())

    def k(t: ir.Type, x: int) -> ir.Constant:
        return FloatOps.const(t, x)

    bits = b.bitcast(v, i32)
    sign = b.and_(bits, k(i32, -0x80000000))
    mag = b.xor(bits, sign)
    is_denorm = b.icmp_unsigned("<", mag, k(i32, 0x38800000))
    is_inf = b.icmp_unsigned(">", mag, k(i32, 0x477FEFFF))
    scaled = b.bitcast(b.add(mag, k(i32, 0x0C000000)), v.type)  # |v| * 2^24
    # (on hvx128 the rounding inline, FloatOps.rounding: the Hexagon harness has no roundevenf)
    denorm = b.fptoui(FloatOps(b, module, True, target).intrinsic("roundeven", [scaled]), i16)
    rounded = b.add(b.add(mag, b.and_(b.lshr(mag, k(i32, 13)), k(i32, 1))), k(i32, 0xFFF))
    normal = b.and_(b.sub(b.lshr(rounded, k(i32, 13)), k(i32, 0x1C000)), k(i32, 0x7FFF))
    out = b.select(is_denorm, denorm, b.select(is_inf, k(i16, 0x7C00), b.trunc(normal, i16)))
    return b.bitcast(b.or_(out, b.trunc(b.lshr(sign, k(i32, 16)), i16)), half)


def narrow_double_to_half(b: ir.IRBuilder, module: ir.Module, v: ir.Value) -> ir.Value:
    """float64 -> float16 rounded once to nearest even, as LLVM's fptrunc (Halide's module) computes it
    on x86 with compiler-rt's / libgcc's __truncdfhf2 (f16c converts from float32 only; nothing in the
    JIT's process defines that helper): rounded to float32 *to odd* (the float32 rounding to nearest,
    moved one ulp toward zero where it went away from zero, then its last bit set where it was
    inexact), then to float16 by vcvtps2ph. Rounding to odd with 13 more bits than float16's is exact
    for the final rounding (no double rounding), over float16's subnormals too (float32's exponent
    covers them); an overflow of float32 gives FLT_MAX, still float16's inf; a NaN keeps the top of its
    payload and is quiet (as __truncdfhf2: payload >> 42, quiet bit set)."""
    f32: ir.Type = like(v, ir.FloatType())
    i32: ir.Type = like(v, ir.IntType(32))
    half: ir.Type = like(v, ir.HalfType())
    nearest = b.fptrunc(v, f32)
    back = b.fpext(nearest, v.type)
    fabs = FloatOps(b, module, True).intrinsic
    inexact = b.fcmp_ordered("!=", back, v)  # (false for NaN)
    away = b.fcmp_ordered(">", fabs("fabs", [back]), fabs("fabs", [v]))
    bits = b.bitcast(nearest, i32)
    toward_zero = b.sub(bits, b.zext(away, i32))
    odd = b.select(inexact, b.or_(toward_zero, FloatOps.const(i32, 1)), bits)
    return b.fptrunc(b.bitcast(odd, f32), half)


def round_half_x86(b: ir.IRBuilder, ops: FloatOps, x: ir.Value) -> ir.Value:
    """Halide's round-half-to-even of float16 on x86 (its generic lowering, not an instruction):
    ix = int16(x + copysign(0x1.ffcp-2, x)) (the sum rounded to half), a = float16(ix), minus
    copysign(1, x) where a - x is a tie of the sign of x and ix is odd. So round(-0.25) is +0.0 (a
    comes from an integer), and |x| >= 32768 overflows int16 (LLVM's poison; Halide's too).
    Halide subtracts the one in float32 then rounds back to half: exact here (a tie needs
    |x| < 1024), so subtracting in half gives the same values."""
    t = x.type
    i16: ir.Type = like(x, ir.IntType(16))

    def k(v: int) -> ir.Constant:
        return FloatOps.const(i16, v)

    sign = b.and_(b.bitcast(x, i16), k(-0x8000))
    one_half = b.bitcast(b.or_(sign, k(0x3800)), t)
    just_under = b.bitcast(b.or_(sign, k(0x37FF)), t)
    one = b.bitcast(b.or_(sign, k(0x3C00)), t)
    ix = b.fptosi(ops.add(just_under, x), i16)
    a = b.sitofp(ix, t)
    tie = ops.cmp("==", ops.sub(a, x), one_half)
    odd = b.icmp_signed("!=", b.and_(ix, k(1)), k(0))
    return b.select(b.and_(odd, tie), ops.sub(a, one), a)
