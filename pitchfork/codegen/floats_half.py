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
* on both, the other math calls (exp, log, sin, tan, atan2, ...) are the float32 call between a
  conversion to float32 and one back to float16.

`lower_half` rewrites such an expression into the float32 form in Halide IR (so the float32 code
paths, checked against Halide, compute it); what it returns None for is emitted on half as it is.
Invariant: the rewritten expression has the type of the original, and every conversion it adds is
exact (float16 -> float32) or a single correctly rounded float32 -> float16 conversion, as
Halide's: Halide converts with its own bit-level code on x86, which rounds to nearest even like
LLVM's fptrunc, so the values are the same.
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.codegen.base import Unsupported
from pitchfork.codegen.float_math import FloatOps
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType

#: float16 calls emitted on half as LLVM intrinsics (floats.py's `_UNARY`), by target
NATIVE: dict[str, tuple[str, ...]] = {
    "arm64": ("floor_f16", "ceil_f16", "trunc_f16", "abs", "sqrt_f16", "round"),
    # floor / ceil / trunc / abs: Halide's x86 module rounds in float32 and converts back, exact, so
    # the intrinsic on half gives the same values; `round` is lowered (round_half_x86)
    "x86-avx2": ("floor_f16", "ceil_f16", "trunc_f16", "abs"),
}
#: float16 math calls computed as the float32 call (`name_f32`) of the arguments converted
WIDENED = ("sqrt", "exp", "log", "sin", "cos", "tan", "atan", "atan2", "asin", "acos", "sinh", "cosh", "tanh",
           "asinh", "acosh", "atanh")


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


def lower_half(e: H.Expr, target: str, node: H.Node | None = None) -> H.Expr | None:
    """The float32 form Halide computes a float16 call or `%` in on `target`, or None when it is
    computed on half (NATIVE, `round` on x86: `round_half_x86`; `%` on arm64). Raises Unsupported
    naming a float16 call neither form covers (and the statement `node`'s line)."""
    if isinstance(e, H.BinOp) and e.op == "%" and e.type.code == "float" and e.type.bits == 16:
        if target == "arm64":
            return None
        return H.Cast(e.type, H.BinOp("%", _widen(e.a), _widen(e.b), _f32(e.type)))
    if not isinstance(e, H.Call) or e.name in NATIVE.get(target, ()) or e.name == "round":
        return None
    if e.name.endswith("_f16") and e.name[:-4] in WIDENED:
        return H.Cast(e.type, H.Call(e.name[:-4] + "_f32", tuple(_widen(a) for a in e.args), _f32(e.type)))
    raise Unsupported(f"floating-point call {e.name} on float16 values (not compiled for float16)", node)


def round_half_x86(b: ir.IRBuilder, ops: FloatOps, x: ir.Value) -> ir.Value:
    """Halide's round-half-to-even of float16 on x86 (its generic lowering, not an instruction):
    ix = int16(x + copysign(0x1.ffcp-2, x)) (the sum rounded to half), a = float16(ix), minus
    copysign(1, x) where a - x is a tie of the sign of x and ix is odd. So round(-0.25) is +0.0 (a
    comes from an integer), and |x| >= 32768 overflows int16 (LLVM's poison; Halide's too).
    Halide subtracts the one in float32 then rounds back to half: exact here (a tie needs
    |x| < 1024), so subtracting in half gives the same values."""
    t = x.type
    lanes = t.count if isinstance(t, ir.VectorType) else 0
    i16: ir.Type = ir.VectorType(ir.IntType(16), lanes) if lanes else ir.IntType(16)

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
