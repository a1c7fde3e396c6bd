"""Floating-point code for the loop-nest codegen: Halide float expressions, scalar and vector, to
LLVM IR the way Halide's own code generator writes them.

Instruction selection only rewrites integer expressions (FPIR has no floats), so float arithmetic
bypasses lifting and lowering: `FloatEmitter.emit` turns a Halide expression of type float32/float64
(or a comparison of floats) into LLVM instructions directly. Integer subexpressions
(`float32(x - black_level)`, a u8 load widened to float) go back through the codegen's integer path
(selected, scalar or vector), and integer expressions use float results through
`pitchfork.codegen.to_fpir.ExprConverter`, which emits a float-to-integer conversion (or a float comparison) on
the spot and uses the value as a leaf, so the integer part around it is still selected.

Semantics, as Halide 21's CodeGen_LLVM (pitchfork.codegen.float_math.py): every float instruction
carries Halide's fast-math flags (`reassoc nnan ninf nsz contract afn`), except Halide's `strict_*`
ops (`hl.strict_float(e)`, or every op when the target has strict_float: then no flags anywhere,
Halide's own expansions included, as in Halide's module); `min`/`max` are `a < b ? a : b` /
`a > b ? a : b` (on arm64 Neon's fmin / fmax, as CodeGen_ARM: fmin(-0, +0) is -0); `%` is
a - b*floor(a/b); casts to integers truncate toward zero (fptosi/fptoui); floor/ceil/trunc/round/
sqrt/abs/fma are LLVM's intrinsics (round = roundeven); exp/log are Halide's own polynomials
(`halide_exp`/`halide_log`); `lerp` is Lerp.cpp's zero*(1-w) + one*w; sin/cos are llvm.sin/cos and
atan2 the C library's atan2f lane by lane (x86 and arm64 only: the bare-metal Hexagon harness has no
libm, so they are refused there at compile time); `pow_f32` is, on x86 and arm64, Halide 21's own
expansion (CodeGen_LLVM: halide_exp(halide_log(|x|) * y) with its selects for the sign, zero and
non-integer cases, FloatOps.halide_pow; bit-exact against Halide's code, tests/pitchfork/codegen/
test_pow_f32.py), and on hvx128 pitchfork's own float32 powf (pitchfork.codegen.powf.py), lane by lane.
Vector float loads and stores are the integer path's loads and stores of the same bits.

float16 (LLVM `half`) is computed natively where Halide 21 computes it natively (x86 and arm64 with
arm_fp16; elsewhere, arm64 without arm_fp16 and hvx128, as Halide emulates it:
floats_half_emulated.py, `emulate_half`; float16 vectors on hvx128, which Halide refuses, lane by lane as
its scalar emulation (bfloat16 vectors too); Halide's module has `fmul ... <16 x half>`, loads and stores of
<N x half>, fpext / fptrunc to and from float, uitofp / fptoui on arm_fp16): its arithmetic, compares,
select, min / max and conversions, as for float32. Halide's x86 module converts between float16 and
integers through float32 (exact for every finite half, so the same values as the direct conversion
emitted here, checked bit-exact in tests/pitchfork/codegen/test_floats_half.py). Math calls and `%`
are computed per target as Halide's code generator does (floats_half.py: on half on arm_fp16, in
float32 on x86 and converted back with Halide's bit-level code, `round` on x86 with Halide's own
lowering; pow_f16 is CodeGen_LLVM's float32 pow expansion, FloatOps.halide_pow, not powf.py's).
float64 -> float16 is LLVM's fptrunc: native on arm_fp16 (where Halide emulates float16, through
float32 as Halide's: rounded twice); on x86, where LLVM would call compiler-rt's
__truncdfhf2 (which nothing in the JIT's process defines: Halide's own JIT fails on it), the same single
rounding inline (floats_half.narrow_double_to_half: to float32 rounded to odd, then vcvtps2ph).
`saturating_cast` to a float type is Halide's clamp to [-inf, +inf] around the cast
(halide_calls.lower_float_saturating_cast).

bfloat16 (x86, arm64, hvx128) is Halide's emulation (floats_bfloat.py): each value the float32 it
stands for, each operation in float32 and rounded back to nearest even, loads and stores of its 16 bits.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np
from llvmlite import ir

from pitchfork.codegen.base import Unsupported, _show
from pitchfork.frontend import ir as H
from pitchfork.codegen.float_estimates import fast_inverse, supports_estimates
from pitchfork.codegen.float_math import FloatOps, declare
from pitchfork.codegen.float_reduce import FloatReducer, folded
from pitchfork.codegen.floats_bfloat import (is_bfloat, lower_bfloat, narrow, round_bfloat, round_to_bfloat,
                                             widen)
from pitchfork.codegen.floats_half import (HALIDE_POW, NARROW_X86, lower_half, narrow_double_to_half, narrow_half_x86,
                                           round_half_x86)
from pitchfork.codegen.floats_half_emulated import emulates_half, lower_half_emulated, widen_half_bits
from pitchfork.codegen.halide_calls import lower_call, lower_float_saturating_cast
from pitchfork.codegen.ir_constants import undef
from pitchfork.frontend.htypes import HType

if TYPE_CHECKING:
    from fpir.term import Term
    from pitchfork.codegen.loop_nest import LoopNestCodegen

_IDENTITY = ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped", "strict_float")
_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
#: Halide 21's strict_float intrinsics (the statement of a strict_float target) -> the operator
STRICT = {"strict_add": "+", "strict_sub": "-", "strict_mul": "*", "strict_div": "/", "strict_min": "min",
          "strict_max": "max", "strict_mod": "%", "strict_lt": "<", "strict_le": "<=", "strict_eq": "==",
          "strict_gt": ">", "strict_ge": ">=", "strict_ne": "!="}
#: one-argument math calls -> LLVM intrinsic (Halide's CodeGen_LLVM emits these intrinsics)
_UNARY = {"floor": "floor", "ceil": "ceil", "trunc": "trunc", "sqrt": "sqrt", "round": "roundeven",
          "abs": "fabs"}
#: math calls Halide's runtime (posix_math.ll) leaves to LLVM's libm intrinsics or to the C library,
#: lane by lane, by (name, bits); not on the Hexagon harness (no C math library there). float32 exp,
#: log and pow have their own lowering (FloatOps.exp/log/halide_pow, powf.py on hvx128).
_LIBC_NAMES = ("tan", "atan", "atan2", "asin", "acos", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")
_LIBM: dict[tuple[str, int], str] = {
    **{(n, 32): f"{n}f" for n in _LIBC_NAMES}, **{(n, 64): n for n in _LIBC_NAMES},
    ("sin", 32): "llvm.sin", ("cos", 32): "llvm.cos",
    **{(n, 64): f"llvm.{n}" for n in ("sin", "cos", "exp", "log", "pow")},
}


def float_ir_type(t: HType) -> ir.Type:
    """The LLVM type of a value of float type `t` (bfloat16: the float32 it stands for, floats_bfloat.py)."""
    if t.code == "bfloat" and t.bits == 16:
        return float_ir_type(HType("float", 32, t.lanes))
    if t.code == "float" and t.bits in (16, 32, 64):
        s: ir.Type = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}[t.bits]
        return ir.VectorType(s, t.lanes) if t.lanes > 1 else s
    raise Unsupported(f"{t} values")


def involves_float(e: H.Expr) -> bool:
    """Whether an expression is computed in floating point (its type, or a comparison of floats)."""
    if e.type.is_float:
        return True
    if isinstance(e, H.BinOp) and e.op in _CMP:
        return e.a.type.is_float
    if isinstance(e, H.Call) and e.name in STRICT and e.args and e.args[0].type.is_float:
        return True
    if isinstance(e, H.Call) and _math_name(e.name)[0] in ("is_nan", "is_inf", "is_finite"):
        return True
    return False


def _operands(e: H.Expr) -> tuple[H.Expr, ...]:
    """The direct operands of a node whose type may differ from its own (casts, comparisons, calls)."""
    if isinstance(e, (H.Cast, H.Reinterpret)):
        return (e.value,)
    if isinstance(e, H.BinOp):
        return (e.a, e.b)
    if isinstance(e, H.Call):
        return tuple(e.args)
    return ()


def _math_name(name: str) -> tuple[str, int]:
    """`floor_f32` -> ("floor", 32); ("", 0) for other names."""
    for bits in (16, 32, 64):
        if name.endswith(f"_f{bits}"):
            return name[: -len(f"_f{bits}")], bits
    return "", 0


class FloatEmitter:
    """Emits float expressions (any lane count) at the codegen's current insertion point."""

    def __init__(self, cg: LoopNestCodegen, node: H.Node, int_lets: Optional[dict[str, Term]] = None) -> None:
        self.cg, self.node = cg, node
        #: the integer lets in scope where the float expression sits (ExprConverter's), by name
        self.int_lets = int_lets or {}
        self.b = cg.b
        self.lets: dict[str, ir.Value] = {}
        self.ops = FloatOps(cg.b, cg.module, getattr(cg, "strict_float", False), cg.target)
        #: float16 computed with Halide's float32 emulation (floats_half_emulated.py): arm64 without
        #: arm_fp16, hvx128
        captured = getattr(cg, "captured", None)
        self.emulate_half = emulates_half(cg.target, captured.target if captured is not None else "")

    def _unsupported(self, what: str) -> Exception:
        return Unsupported(what, self.node)

    def emit(self, e: H.Expr) -> ir.Value:
        if not involves_float(e):  # an integer subexpression: the integer path (selected)
            if e.type.is_vector:
                return self.cg.vector(e, self.node, self.int_lets)
            return self.cg.scalar(e, self.node, lets=self.int_lets)
        saturating = lower_float_saturating_cast(e) if isinstance(e, H.Call) else None
        if saturating is not None:  # to a float type: Halide's clamp to +-inf, then or after the cast
            return self.emit(saturating)
        half = bfloat = False
        for t in (e.type, *(x.type for x in _operands(e))):
            half = half or t.code == "float" and t.bits == 16
            bfloat = bfloat or is_bfloat(t)
            if t.is_float and (t.bits not in (16, 32, 64) or t.code == "bfloat" and t.bits != 16):
                raise self._unsupported(f"floating-point {t.elem} values on {self.cg.target}")
        if half:
            lowered = (lower_half_emulated(e, self.node, self.cg.target == "hvx128") if self.emulate_half
                       else self._lower_half(e))
            if lowered is not None:
                return self.emit(lowered)
        if bfloat:
            lowered = lower_bfloat(e, self.node)
            if lowered is not None:
                return self.emit(lowered)
        m: Callable[[H.Expr], ir.Value] | None = getattr(self, f"_e_{type(e).__name__}", None)
        if m is None:
            raise self._unsupported(f"floating-point {type(e).__name__}: {_show(e)}")
        return m(e)

    def _lower_half(self, e: H.Expr) -> H.Expr | None:
        """A float16 call or `%` in the form Halide computes it on this target (floats_half.py:
        float32 between exact conversions), or None to emit `e` on half as it is; Unsupported
        naming a float16 call that is not compiled."""
        if isinstance(e, H.Call) and e.name in _IDENTITY:
            return None
        return lower_half(e, self.cg.target, self.node)

    def _splat(self, v: ir.Value, lanes: int) -> ir.Value:
        if lanes == 1:
            return v
        one = self.b.insert_element(undef(ir.VectorType(v.type, 1)), v,
                                    ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, undef(one.type),
                                     ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))

    def _e_FloatImm(self, e: H.FloatImm) -> ir.Value:
        return FloatOps.const(float_ir_type(e.type), e.value)

    def _e_Broadcast(self, e: H.Broadcast) -> ir.Value:
        inner = self.emit(e.value)
        if isinstance(inner, ir.Constant) and not isinstance(inner.type, ir.VectorType):
            return FloatOps.const(ir.VectorType(inner.type, e.count), inner.constant)
        return self._splat(inner, e.count)

    def _e_Variable(self, e: H.Variable) -> ir.Value:
        if e.name in self.lets:
            return self.lets[e.name]
        if e.name in self.cg.fscalars:
            return self.cg.fscalars[e.name]
        raise self._unsupported(f"unknown float variable {e.name}")

    def _e_Let(self, e: H.Let) -> ir.Value:
        saved = dict(self.lets)
        if involves_float(e.value):
            self.lets[e.name] = self.emit(e.value)
            try:
                return self.emit(e.body)
            finally:
                self.lets = saved
        # an integer let inside a float expression: bind it as an integer value
        self.cg._bind(e.name, e.value, self.node)
        return self.emit(e.body)

    def _e_Cast(self, e: H.Cast) -> ir.Value:
        t = float_ir_type(e.type)
        src = e.value.type
        if is_bfloat(e.type) or is_bfloat(src):
            return self._bfloat_cast(e)
        if self.emulate_half and src != e.type and any(x.code == "float" and x.bits == 16 for x in (src, e.type)):
            return self._emulated_half_cast(e)
        v = self.emit(e.value)
        if src.is_float:
            if src.bits == e.type.bits:
                return v
            if src.bits == 64 and e.type.bits == 16 and self.cg.target == "x86-avx2":
                return narrow_double_to_half(self.b, self.cg.module, v)  # (no __truncdfhf2 call)
            return self.b.fpext(v, t) if e.type.bits > src.bits else self.b.fptrunc(v, t)
        if src.bits == 1:
            return self.b.uitofp(v, t)
        return self.b.sitofp(v, t) if src.is_int else self.b.uitofp(v, t)

    def _emulated_half_cast(self, e: H.Cast) -> ir.Value:
        """A conversion to or from float16 where Halide emulates it (lower_float16_cast): through
        float32, from float16 by its bit-level float16_to_float32, to float16 by its float32_to_float16
        (a float64 rounded to float32 first, as Halide's)."""
        src = e.value.type
        if src.code == "float" and src.bits == 16:
            return self._from_f32(self._to_f32(e.value), e.type)
        return narrow_half_x86(self.b, self.cg.module, self._to_f32(e.value), self.cg.target)

    def _bfloat_cast(self, e: H.Cast) -> ir.Value:
        """A conversion to or from bfloat16 as Halide's (floats_bfloat.py): through float32, rounded
        to bfloat16 at the end (a float64 is rounded to float32 first, as Halide 21 does)."""
        src = e.value.type
        if is_bfloat(src) and is_bfloat(e.type):
            return self.emit(e.value)
        if is_bfloat(src):  # the widened float32, converted on (exact to float32 / float64)
            return self._from_f32(self.emit(e.value), e.type)
        return round_to_bfloat(self.b, self._to_f32(e.value))

    def _to_f32(self, x: H.Expr) -> ir.Value:
        """`x` (an integer or float expression) converted to float32."""
        f32 = float_ir_type(HType("float", 32, x.type.lanes))
        v = self.emit(x)
        if x.type.is_float:
            if v.type == f32:
                return v
            if self.emulate_half and x.type.bits == 16:
                return widen_half_bits(self.b, v)
            return self.b.fpext(v, f32) if x.type.bits < 32 else self.b.fptrunc(v, f32)
        if x.type.bits == 1 or x.type.is_uint:
            return self.b.uitofp(v, f32)
        return self.b.sitofp(v, f32)

    def _from_f32(self, v: ir.Value, t: HType) -> ir.Value:
        """The float32 `v` converted to the float type `t`."""
        out = float_ir_type(t)
        if v.type == out:
            return v
        if self.emulate_half and t.bits == 16:
            return narrow_half_x86(self.b, self.cg.module, v, self.cg.target)
        return self.b.fpext(v, out) if t.bits > 32 else self.b.fptrunc(v, out)

    def emit_numeric(self, e: H.Expr) -> ir.Value:
        """The float `e` for a conversion to an integer: an emulated float16 as its float32 (Halide's
        lower_float16_cast converts from float32), any other float as it is."""
        if self.emulate_half and e.type.code == "float" and e.type.bits == 16:
            return self._to_f32(e)
        return self.emit(e)

    def emit_stored(self, e: H.Expr) -> ir.Value:
        """`e` as its buffer stores it: the float value, or a bfloat16's 16 bits."""
        v = self.emit(e)
        return narrow(self.b, v) if is_bfloat(e.type) else v

    def bits_of(self, e: H.Expr) -> ir.Value:
        """The bits of the float value `e` as integer lanes of its width (a reinterpret to an
        integer type: bfloat16's are the top half of its float32)."""
        v = self.emit(e)
        if is_bfloat(e.type):
            return narrow(self.b, v)
        it: ir.Type = ir.IntType(e.type.bits)
        return self.b.bitcast(v, ir.VectorType(it, e.type.lanes) if e.type.lanes > 1 else it)

    def _binop(self, op: str, a: ir.Value, c: ir.Value) -> ir.Value:
        o = self.ops
        if op in _CMP:
            return o.cmp(_CMP[op], a, c)
        fn = {"+": o.add, "-": o.sub, "*": o.mul, "/": o.div, "min": o.min, "max": o.max, "%": o.mod}.get(op)
        if fn is None:
            raise self._unsupported(f"floating-point operator {op}")
        return fn(a, c)

    def _e_BinOp(self, e: H.BinOp) -> ir.Value:
        fold = folded(e)  # `vector_reduce_add(v) + x`: the reduction started from x, as Halide's
        if fold is not None:
            return FloatReducer(self).emit(*fold)
        return self._binop(e.op, self.emit(e.a), self.emit(e.b))

    def _e_VectorReduce(self, e: H.VectorReduce) -> ir.Value:
        return FloatReducer(self).emit(e, None)

    def _e_Select(self, e: H.Select) -> ir.Value:
        cond = self.emit(e.cond)
        return self.b.select(cond, self.emit(e.true_value), self.emit(e.false_value))

    def _e_Load(self, e: H.Load) -> ir.Value:
        t = float_ir_type(e.type)
        # bfloat16: its bits, widened to the float32 it stands for (floats_bfloat.py)
        stored: ir.Type = ir.IntType(16) if is_bfloat(e.type) else t
        if e.type.is_vector:
            # the integer path's load of the same bits (dense, aligned, predicated, gathered)
            from pitchfork.codegen.base import Leaf
            from fpir.types import ScalarType

            bits = HType("uint", e.type.bits, e.type.lanes)
            leaf = Leaf("load", replace(e, type=bits), e.type.lanes, ScalarType(False, e.type.bits))
            loaded = self.cg._emit_leaf(leaf, self.node)
            return widen(self.b, loaded) if is_bfloat(e.type) else self.b.bitcast(loaded, t)
        if e.predicate is not None:
            raise self._unsupported(f"predicated float load from {e.buffer}")
        buf = self.cg._buffer(e.buffer, self.node)
        idx = self.cg.scalar(e.index, self.node)
        base = self.b.bitcast(buf.ptr, ir.PointerType(stored))
        p = self.b.gep(base, [self.cg._address_width(idx)])
        v = self.b.load(p, align=1)
        return widen(self.b, v) if is_bfloat(e.type) else v

    def _e_Reinterpret(self, e: H.Reinterpret) -> ir.Value:
        if is_bfloat(e.type) or is_bfloat(e.value.type):
            if e.value.type.is_float or e.value.type.bits != 16:
                raise self._unsupported(f"reinterpret of {e.value.type} as {e.type}")
            return widen(self.b, self.emit(e.value))  # 16-bit integer lanes as bfloat16
        return self.b.bitcast(self.emit(e.value), float_ir_type(e.type))

    def _e_Shuffle(self, e: H.Shuffle) -> ir.Value:
        from pitchfork.codegen.expr import ExprEmitter

        parts = [self.emit(x) for x in e.vectors]
        parts = [p if isinstance(p.type, ir.VectorType) else self._vec1(p) for p in parts]
        at = sum(p.type.count for p in parts)
        whole = ExprEmitter(self.b, at, {}, self.cg.target).concat(parts, at) if len(parts) > 1 else parts[0]
        out = self.b.shuffle_vector(whole, undef(whole.type),
                                    ir.Constant(ir.VectorType(ir.IntType(32), len(e.indices)), list(e.indices)))
        if e.type.is_scalar:
            return self.b.extract_element(out, ir.Constant(ir.IntType(32), 0))
        return out

    def _vec1(self, v: ir.Value) -> ir.Value:
        return self.b.insert_element(undef(ir.VectorType(v.type, 1)), v,
                                     ir.Constant(ir.IntType(32), 0))

    def _lanewise(self, e: H.Expr, f: Callable[[list[ir.Value]], ir.Value], args: list[ir.Value]) -> ir.Value:
        """`f` applied lane by lane (scalar calls: Halide scalarizes calls with no vector form)."""
        if e.type.is_scalar:
            return f(args)
        t = float_ir_type(e.type)
        out: ir.Value = undef(t)
        for i in range(e.type.lanes):
            k = ir.Constant(ir.IntType(32), i)
            out = self.b.insert_element(out, f([self.b.extract_element(a, k) for a in args]), k)
        return out

    def _e_Call(self, e: H.Call) -> ir.Value:
        o = self.ops
        if e.name in _IDENTITY:
            return self.emit(e.args[0])
        if e.name in STRICT:
            strict = FloatOps(self.b, self.cg.module, True, self.cg.target)
            a, c = self.emit(e.args[0]), self.emit(e.args[1])
            saved, self.ops = self.ops, strict
            try:
                return self._binop(STRICT[e.name], a, c)
            finally:
                self.ops = saved
        if e.name == NARROW_X86:  # a float16 math call's float32 result, as Halide's x86 code converts it
            return narrow_half_x86(self.b, self.cg.module, self.emit(e.args[0]), self.cg.target)
        if e.name == HALIDE_POW:  # pow of float16 values, in float32 (floats_half.py)
            return o.halide_pow(self.emit(e.args[0]), self.emit(e.args[1]))
        if e.name == "strict_fma":
            return FloatOps(self.b, self.cg.module, True).intrinsic("fma", [self.emit(a) for a in e.args])
        expanded = lower_call(e, self.cg.target, self.node)  # mux; lerp with an integer weight
        if expanded is not None:
            return self.emit(expanded)
        if e.name == "lerp" and all(a.type.is_float for a in e.args):
            zero, w = self.emit(e.args[0]), self.emit(e.args[2])
            return o.lerp(zero, lambda: self.emit(e.args[1]), w)
        if e.name == "round" and is_bfloat(e.type):
            return round_bfloat(self.b, o, self.emit(e.args[0]))
        if e.name == "round" and e.type.bits == 16 and self.cg.target == "x86-avx2":
            return round_half_x86(self.b, o, self.emit(e.args[0]))
        if e.name in ("abs", "round") and e.args[0].type.is_float:
            return o.intrinsic(_UNARY[e.name], [self.emit(e.args[0])])
        base, bits = _math_name(e.name)
        if base in ("inf", "nan", "neg_inf") and not e.args:
            return FloatOps.const(float_ir_type(e.type), {"inf": float("inf"), "nan": float("nan"),
                                                          "neg_inf": float("-inf")}[base])
        if base in ("is_nan", "is_inf", "is_finite"):
            v = self.emit(e.args[0])
            if base == "is_nan":
                return self.b.fcmp_unordered("uno", v, v)
            mag = FloatOps(self.b, self.cg.module, True).intrinsic("fabs", [v])
            inf = FloatOps.const(v.type, float("inf"))
            return self.b.fcmp_ordered("==" if base == "is_inf" else "<", mag, inf)
        if base in ("fast_inverse", "fast_inverse_sqrt") and bits == 32:
            if not supports_estimates(self.cg.target):
                raise self._unsupported(f"floating-point call {e.name} (Halide's runtime for {self.cg.target} "
                                        "does not define it)")
            return fast_inverse(self.b, self.cg.module, self.cg.target, self.emit(e.args[0]),
                                base == "fast_inverse_sqrt")
        if base == "sqrt" and bits == 16:  # arm_fp16: llvm.sqrt on half with the flags, as Halide's
            return o.intrinsic("sqrt", [self.emit(e.args[0])])
        if base == "sqrt":  # Halide's runtime sqrt_f32/f64 inlined: llvm.sqrt without fast-math
            # flags, so correctly rounded (with afn, x86 would use vrsqrtps and a Newton step)
            return FloatOps(self.b, self.cg.module, True, self.cg.target).intrinsic("sqrt", [self.emit(e.args[0])])
        if base in _UNARY:
            return o.intrinsic(_UNARY[base], [self.emit(e.args[0])])
        if base == "fma":
            return o.intrinsic("fma", [self.emit(a) for a in e.args])
        if base == "exp" and bits == 32:
            return o.exp(self.emit(e.args[0]))
        if base == "log" and bits == 32:
            return o.log(self.emit(e.args[0]))
        if e.name == "pow_f32" and self.cg.target in ("x86-avx2", "arm64"):  # as Halide 21's CodeGen_LLVM
            return o.halide_pow(self.emit(e.args[0]), self.emit(e.args[1]))
        if e.name == "pow_f32":
            from pitchfork.codegen.powf import powf_function

            fn = powf_function(self.cg.module)
            return self._lanewise(e, lambda xs: self.b.call(fn, xs), [self.emit(a) for a in e.args])
        if (base, bits) in _LIBM:
            if self.cg.target == "hvx128":
                raise self._unsupported(f"floating-point call {e.name} (the Hexagon harness has no C math "
                                        "library)")
            name = _LIBM[base, bits]
            args = [self.emit(a) for a in e.args]
            f = ir.FloatType() if bits == 32 else ir.DoubleType()
            if name.startswith("llvm."):
                fn = declare(self.cg.module, name, f, [f] * len(args))
            else:
                fn = self.cg.module.globals.get(name) or ir.Function(
                    self.cg.module, ir.FunctionType(f, [f] * len(args)), name=name)
            # (float64: Halide's runtime function inlined, its intrinsic call carrying no fast-math flags)
            flags = o.flags if name.startswith("llvm.") and bits == 32 else ()
            return self._lanewise(e, lambda xs: self.b.call(fn, xs, fastmath=flags), args)
        raise self._unsupported(f"floating-point call {e.name}")


def float_to_int(b: ir.IRBuilder, v: ir.Value, signed: bool, bits: int) -> ir.Value:
    """Halide's cast of a float to an integer type: truncation toward zero (any lane count)."""
    lanes = v.type.count if isinstance(v.type, ir.VectorType) else 0
    t: ir.Type = ir.IntType(bits)
    if lanes:
        t = ir.VectorType(t, lanes)
    if bits == 1:
        return b.fcmp_unordered("!=", v, FloatOps.const(v.type, 0.0))
    return b.fptosi(v, t) if signed else b.fptoui(v, t)


def saturating_float_to_int(b: ir.IRBuilder, v: ir.Value, signed: bool, bits: int) -> ir.Value:
    """`saturating_cast` of a float: clamp to the integer type's range, then truncate (NaN gives 0).

    As Halide 21 lowers it: where the type's maximum is a value of the float type (int16 from float32)
    a clamp on both sides; where it is not (int32 / uint32 from float32, 64-bit from float64), the
    float maximum rounds UP past the range (2^31 for int32), so a clamp to it would convert an
    out-of-range value (x86 cvttps2dq gives INT_MIN for 3e9): Halide clamps below only, converts, and
    selects the integer maximum where the value is >= that rounded bound."""
    lo = -(1 << (bits - 1)) if signed else 0
    hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    scalar = v.type.element if isinstance(v.type, ir.VectorType) else v.type
    rounded_hi = float(_FLOAT_DTYPES[type(scalar)](hi))  # the type's maximum as Halide's cast to float gives it
    clo, chi = FloatOps.const(v.type, float(lo)), FloatOps.const(v.type, rounded_hi)
    v = b.select(b.fcmp_ordered("<", v, clo), clo, v)
    v = b.select(b.fcmp_unordered("uno", v, v), FloatOps.const(v.type, 0.0), v)
    if rounded_hi == hi:
        return float_to_int(b, b.select(b.fcmp_ordered(">", v, chi), chi, v), signed, bits)
    too_big = b.fcmp_ordered(">=", v, chi)
    r = float_to_int(b, b.select(too_big, FloatOps.const(v.type, 0.0), v), signed, bits)
    return b.select(too_big, FloatOps.const(r.type, hi), r)


# numpy's type for each LLVM float type: a Python integer rounded to it as Halide's cast rounds it
_FLOAT_DTYPES: dict[type, Any] = {ir.HalfType: np.float16, ir.FloatType: np.float32, ir.DoubleType: np.float64}
