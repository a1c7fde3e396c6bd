"""Scalar floating-point code for the loop-nest codegen: Halide float expressions to plain LLVM IR.

Instruction selection only rewrites integer vector expressions (FPIR has no floats), so float
arithmetic bypasses lifting and lowering: `FloatEmitter.emit` turns a scalar Halide expression of
type float32/float64 (or a comparison of floats) into LLVM instructions directly. Integer
subexpressions (`float32(x - black_level)`) go back through the codegen's exact integer path, and
integer expressions use float results through `LoopNestCodegen`, which binds the value of a
float-to-integer cast as a scalar.

Semantics (what the numpy references reproduce): every operation is one IEEE-754 operation in the
statement's order, with no fast-math flags, so LLVM neither contracts a*b+c into an FMA nor
reassociates (Halide's simplifier has already folded and reordered constants in the statement we
compile). `min`/`max` are `a < b ? a : b` / `a > b ? a : b`; casts to integers truncate toward zero
(fptosi/fptoui: out-of-range values are undefined, as in Halide); `pow_f32` is pitchfork's own
float32-only powf (pitchfork/codegen/powf.py, the same on every target: Hexagon has no libm in our
harness and no double multiply in hardware), within one ulp of the correctly rounded result. Other
float math calls are refused by name.

Vector float expressions are refused with `Unsupported` naming them (no benchmark vectorizes
floats; camera_pipe's float tables are scalar loops computed at root).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from llvmlite import ir

from pitchfork.codegen.base import Unsupported, _show
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType

if TYPE_CHECKING:
    from pitchfork.codegen.loop_nest import LoopNestCodegen

_IDENTITY = ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped", "strict_float")
_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}


def float_ir_type(t: HType) -> ir.Type:
    if t.code == "float" and t.bits == 32:
        return ir.FloatType()
    if t.code == "float" and t.bits == 64:
        return ir.DoubleType()
    raise Unsupported(f"{t} values")


def involves_float(e: H.Expr) -> bool:
    """Whether a scalar expression is computed in floating point (its type, or a comparison of floats)."""
    if e.type.is_float:
        return True
    if isinstance(e, H.BinOp) and e.op in _CMP:
        return e.a.type.is_float
    return False


class FloatEmitter:
    """Emits scalar float expressions at the codegen's current insertion point."""

    def __init__(self, cg: LoopNestCodegen, node: H.Node) -> None:
        self.cg, self.node = cg, node
        self.b = cg.b
        self.lets: dict[str, ir.Value] = {}

    def _unsupported(self, what: str) -> Exception:
        return Unsupported(what, self.node)

    def emit(self, e: H.Expr) -> ir.Value:
        if e.type.is_vector:
            raise self._unsupported(f"vector floating-point expression {_show(e)} (float code is compiled "
                                    "for scalars only)")
        if not involves_float(e):  # an integer subexpression: the exact integer path
            return self.cg.scalar(e, self.node)
        m: Callable[[H.Expr], ir.Value] | None = getattr(self, f"_e_{type(e).__name__}", None)
        if m is None:
            raise self._unsupported(f"floating-point {type(e).__name__}: {_show(e)}")
        return m(e)

    def _e_FloatImm(self, e: H.FloatImm) -> ir.Value:
        return ir.Constant(float_ir_type(e.type), e.value)

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
        # an integer let inside a float expression: bind it as an integer scalar
        self.cg._bind(e.name, e.value, self.node)
        return self.emit(e.body)

    def _e_Cast(self, e: H.Cast) -> ir.Value:
        t = float_ir_type(e.type)
        src = e.value.type
        v = self.emit(e.value)
        if src.is_float:
            if src.bits == e.type.bits:
                return v
            return self.b.fpext(v, t) if e.type.bits > src.bits else self.b.fptrunc(v, t)
        if src.bits == 1:
            return self.b.uitofp(v, t)
        return self.b.sitofp(v, t) if src.is_int else self.b.uitofp(v, t)

    def _e_BinOp(self, e: H.BinOp) -> ir.Value:
        a, b = self.emit(e.a), self.emit(e.b)
        if e.op in _CMP:
            # ordered comparisons except !=, as C's operators on floats (Halide emits the same)
            return self.b.fcmp_unordered("!=", a, b) if e.op == "!=" else self.b.fcmp_ordered(_CMP[e.op], a, b)
        if e.op == "+":
            return self.b.fadd(a, b)
        if e.op == "-":
            return self.b.fsub(a, b)
        if e.op == "*":
            return self.b.fmul(a, b)
        if e.op == "/":
            return self.b.fdiv(a, b)
        if e.op == "min":
            return self.b.select(self.b.fcmp_ordered("<", a, b), a, b)
        if e.op == "max":
            return self.b.select(self.b.fcmp_ordered(">", a, b), a, b)
        if e.op == "%":
            raise self._unsupported("floating-point % (Halide's float mod)")
        raise self._unsupported(f"floating-point operator {e.op}")

    def _e_Select(self, e: H.Select) -> ir.Value:
        cond = self.emit(e.cond) if involves_float(e.cond) else self.cg.scalar(e.cond, self.node)
        return self.b.select(cond, self.emit(e.true_value), self.emit(e.false_value))

    def _e_Load(self, e: H.Load) -> ir.Value:
        if e.predicate is not None:
            raise self._unsupported(f"predicated float load from {e.buffer}")
        buf = self.cg._buffer(e.buffer, self.node)
        t = float_ir_type(e.type)
        idx = self.cg.scalar(e.index, self.node)
        base = self.b.bitcast(buf.ptr, ir.PointerType(t))
        p = self.b.gep(base, [self.cg._address_width(idx)])
        return self.b.load(p, align=1)

    def _e_Call(self, e: H.Call) -> ir.Value:
        if e.name in _IDENTITY:
            return self.emit(e.args[0])
        if e.name == "pow_f32":
            from pitchfork.codegen.powf import powf_function

            return self.b.call(powf_function(self.cg.module), [self.emit(a) for a in e.args])
        raise self._unsupported(f"floating-point call {e.name}")


def float_to_int(b: ir.IRBuilder, v: ir.Value, signed: bool, bits: int) -> ir.Value:
    """Halide's cast of a float to an integer type: truncation toward zero."""
    t = ir.IntType(bits)
    if bits == 1:
        return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
    return b.fptosi(v, t) if signed else b.fptoui(v, t)


def saturating_float_to_int(b: ir.IRBuilder, v: ir.Value, signed: bool, bits: int) -> ir.Value:
    """`saturating_cast` of a float: clamp to the integer type's range, then truncate (NaN gives 0)."""
    lo = -(1 << (bits - 1)) if signed else 0
    hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    clo, chi = ir.Constant(v.type, float(lo)), ir.Constant(v.type, float(hi))
    v = b.select(b.fcmp_ordered(">", v, chi), chi, v)
    v = b.select(b.fcmp_ordered("<", v, clo), clo, v)
    v = b.select(b.fcmp_unordered("uno", v, v), ir.Constant(v.type, 0.0), v)
    return float_to_int(b, v, signed, bits)
