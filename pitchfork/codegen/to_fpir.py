"""Halide expression -> FPIR term, for one statement of the loop-nest code generator.

Integer ops map one to one (Halide's `/` and `%` are Euclidean and casts wrap, exactly like FPIR);
Halide's FPIR intrinsics map to FPIR ops; loads, ramps, broadcasts of non-constant scalars, shuffles
and bit counts become leaves (variables) that LoopNestCodegen emits separately; scalar loads and
float sub-expressions are emitted on the spot and become scalar variables. Signed 32-bit and wider
add/sub/mul/shl carry the `nsw` flag (Halide's no-overflow rule, docs/FPIR.md) and every shl/shr the
`inrange` flag (Halide leaves shifts by the width or more undefined); broadcasts of runtime scalars
become uniform leaves (`var(uniform=True)`). The converter emits no
vector code itself: what it returns is selected whole by pitchfork.selection.lower.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional

from llvmlite import ir

from fpir.flags import halide_overflow_flags
from fpir.ops import make
from fpir.opspec import REDUCE_COMBINE, reduce_op
from fpir.term import Term, const, var
from fpir.types import ScalarType, i32, u1
from pitchfork.frontend import ir as H
from pitchfork.codegen.base import (BINOPS, BIT_COUNTS, IDENTITY_CALLS, INTRINSICS, Leaf, Unsupported,
                                           _show, _storage, fpir_type)
from pitchfork.codegen.halide_calls import lower_call
from pitchfork.codegen.floats import FloatEmitter, float_to_int, involves_float, saturating_float_to_int
from pitchfork.codegen.reduce import check_reduce, split_reduce
from pitchfork.passes.stream_taps import stream_fact

if TYPE_CHECKING:
    from pitchfork.codegen.loop_nest import LoopNestCodegen


def _int_ir(st: ScalarType, lanes: int) -> ir.Type:
    t = ir.IntType(st.bits)
    return ir.VectorType(t, lanes) if lanes > 1 else t


#: node class -> `ExprConverter`'s `_e_<class name>` function, or None (filled by `ExprConverter.go`)
_HANDLERS: dict[type, Optional[Callable[..., Term]]] = {}


class ExprConverter:
    """Halide Expr -> FPIR Term for one statement."""

    def __init__(self, cg: LoopNestCodegen, node: H.Node, leaves: dict[str, Leaf]) -> None:
        self.cg, self.node, self.leaves = cg, node, leaves
        self.lets: dict[str, Term] = {}
        #: float Let expressions in scope (name, value), innermost last (see _float_scalar)
        self.flets: list[tuple[str, H.Expr]] = []

    def leaf(self, kind: str, e: H.Expr) -> Term:
        st = fpir_type(e.type.elem, self.node)
        name = f"{kind}{next(self.cg._leaf_ids)}"
        self.leaves[name] = Leaf(kind, e, e.type.lanes, st, stream_fact(e, self.lets) if kind == "load" else None)
        # A splat is one scalar in every lane: say so, so lowering may pass it where an instruction
        # reads one count for all lanes (x86 vpsraw & co. take lane 0 of an xmm register).
        return var(name, st, uniform=kind == "splat")

    def go(self, e: H.Expr) -> Term:
        cls = type(e)
        try:
            m = _HANDLERS[cls]
        except KeyError:  # the handler of each node class looked up by name once, not per node
            m = _HANDLERS[cls] = getattr(ExprConverter, f"_e_{cls.__name__}", None)
        if m is None:
            raise Unsupported(f"expression {cls.__name__}: {_show(e)}", self.node)
        return m(self, e)

    def _e_IntImm(self, e: H.IntImm) -> Term:
        st = fpir_type(e.type.elem, self.node)
        return const(st.wrap(e.value), st)

    def _e_FloatImm(self, e: H.Expr) -> Term:
        raise Unsupported(f"floating-point constant {_show(e)}", self.node)

    def _e_Variable(self, e: H.Variable) -> Term:
        if e.name in self.lets:
            return self.lets[e.name]
        if e.type.is_vector:
            if e.name in self.cg.vlets:
                return self.cg.vlets[e.name]
            raise Unsupported(f"vector variable {e.name} with no value", self.node)
        if e.name in self.cg.scalars:
            return var(e.name, self.cg.scalars[e.name][1])
        buf_field = self._buffer_field(e.name)
        if buf_field is not None:
            return buf_field
        raise Unsupported(f"unknown variable {e.name}", self.node)

    def _buffer_field(self, name: str) -> Optional[Term]:
        parts = name.split(".")
        if len(parts) >= 2 and parts[0] in self.cg.buffers:
            info = self.cg.buffers[parts[0]]
            if parts[1] == "type":
                return const(info.code, ScalarType(False, 32))
            if parts[1] == "dimensions":
                return const(info.dimensions, i32)
            if parts[1] == "device_dirty":
                return const(0, u1)
        return None

    def _float_scalar(self, e: H.Expr, convert) -> Term:  # type: ignore[no-untyped-def]
        """An integer-valued expression computed in floating point (a cast of a float, a comparison of
        floats): emitted now (codegen_float.py) and used as a variable: a scalar name, or for a vector
        a `value` leaf holding the emitted vector, so the integer code around it is still selected."""
        st = fpir_type(e.type.elem, self.node)
        lets, flets = dict(self.lets), list(self.flets)
        v = convert(FloatEmitter(self.cg, self.node, lets), st)

        def again() -> ir.Value:  # the float lets of the expression in scope, then the value
            for n, fv in flets:
                self.cg.fscalars[n] = FloatEmitter(self.cg, self.node, lets).emit(fv)
            return convert(FloatEmitter(self.cg, self.node, lets), st)

        if e.type.is_vector:
            name = f"fvalue{next(self.cg._leaf_ids)}"
            leaf = self.leaves[name] = Leaf("value", e, e.type.lanes, st)
            # emitted here, which dominates every use in this function; a use in another function
            # (a parallel loop's task, emitted from the same vector let) computes it again there
            self.cg.values[id(leaf)] = (self.cg.fn, v, again)
            return var(name, st)
        name = f"fconv{next(self.cg._leaf_ids)}"
        self.cg.scalars[name] = (v, st)
        return var(name, st)

    def _e_Cast(self, e: H.Cast) -> Term:
        if e.value.type.is_float:
            return self._float_scalar(e, lambda fe, st: float_to_int(fe.b, fe.emit_numeric(e.value), st.signed,
                                                                        st.bits))
        x = self.go(e.value)
        t = fpir_type(e.type.elem, self.node)
        if t.bits == 1 and x.type.bits > 1:
            # Halide's cast to bool keeps the lowest bit (FPIR's cast<u1> tests != 0).
            return make("ne", make("and", x, const(1, x.type)), const(0, x.type))
        return make("cast", x, type=t)

    def _e_Reinterpret(self, e: H.Reinterpret) -> Term:
        if e.value.type.is_float:  # the bits of a float value
            return self._float_scalar(e, lambda fe, st: fe.bits_of(e.value))
        if e.type.is_handle or e.value.type.is_handle:
            raise Unsupported(f"pointer reinterpret {_show(e)}", self.node)
        return make("reinterpret", self.go(e.value), type=fpir_type(e.type.elem, self.node))

    def _e_BinOp(self, e: H.BinOp) -> Term:
        op = BINOPS.get(e.op)
        if op is None:
            raise Unsupported(f"operator {e.op}", self.node)
        if involves_float(e):  # a comparison of floats
            return self._float_scalar(e, lambda fe, st: fe.emit(e))
        a, b = self.go(e.a), self.go(e.b)
        return make(op, a, b, flags=self._shift_flags(op, [a, b]) if op in ("shl", "shr")
                    else halide_overflow_flags(op, a.type))

    def _e_Not(self, e: H.Not) -> Term:
        return make("not", self.go(e.a))

    def _e_Select(self, e: H.Select) -> Term:
        return make("select", self.go(e.cond), self.go(e.true_value), self.go(e.false_value))

    def _e_Let(self, e: H.Let) -> Term:
        if e.value.type.is_float:  # a float value: emitted now, used by the float code of the body
            self.cg.fscalars[e.name] = FloatEmitter(self.cg, self.node, self.lets).emit(e.value)
            self.flets.append((e.name, e.value))
            try:
                return self.go(e.body)
            finally:  # out of scope (a later parallel loop's closure must not capture it)
                self.flets.pop()
                self.cg.fscalars.pop(e.name, None)
        saved = dict(self.lets)
        self.lets[e.name] = self.go(e.value)
        try:
            return self.go(e.body)
        finally:
            self.lets = saved

    def _e_Broadcast(self, e: H.Broadcast) -> Term:
        inner = self.go(e.value)
        if inner.is_const:
            return inner
        v = e.value
        if isinstance(v, H.Variable) and v.name not in self.lets:
            v = self.cg._scalar_src.get(v.name, v)
        # A runtime scalar clamped by a constant (`min(15, shift)`) keeps the clamp in the vector term:
        # its bounds let lowering pass the scalar straight to an instruction's Rt (an HVX shift amount).
        if isinstance(v, H.BinOp) and v.op in ("min", "max") and (isinstance(v.a, H.IntImm) or isinstance(v.b, H.IntImm)):
            return self.go(H.BinOp(v.op, replace(e, value=v.a), replace(e, value=v.b), e.type))
        if self.cg.passes.on("widened_splats") and isinstance(v, H.Cast) \
                and v.type.is_integer and v.value.type.is_integer and not v.type.is_bool \
                and not v.value.type.is_bool and v.value.type.bits < v.type.bits:
            # x128(int32(m_i16)), x16(int16(zero_u8)): splat the narrow value and widen it in FPIR, so
            # lifting sees the widening: i32(d_i16) * i32(m_i16) is a widening_mul (one HVX vmpy per 64
            # lanes instead of vunpack + vmpyieo + vmpyie per 32; Neon smull by element), i16(x_u8) -
            # i16(zero_u8) a widening_sub (Neon usubl, as Halide 21 selects it). Not for isel=llvm,
            # which gets the splat of the wide scalar, as Halide's own codegen emits it.
            narrow = H.Broadcast(v.value, e.count, v.value.type.with_lanes(e.count))
            return make("cast", self.leaf("splat", narrow), type=fpir_type(e.type.elem, self.node))
        return self.leaf("splat", e)

    def _e_Ramp(self, e: H.Ramp) -> Term:
        return self.leaf("ramp", e)

    def _e_Load(self, e: H.Load) -> Term:
        if e.type.is_scalar:
            # A scalar load inside a scalar expression: emit it now and bind a scalar.
            buf = self.cg._buffer(e.buffer, self.node)
            st = fpir_type(e.type, self.node)
            idx = self.cg.address_index(e.index, self.node)
            p = self.cg._elem_ptr(buf, st, idx, ir.IntType(_storage(st).bits))
            v = self.cg._mem_access(buf, self.cg.b.load(p, align=self.cg._align(buf, st, e.alignment)))
            if st.bits == 1:
                v = self.cg.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
            name = f"sload{next(self.cg._leaf_ids)}"
            self.cg.scalars[name] = (v, st)
            return var(name, st)
        return self.leaf("load", e)

    def _e_Shuffle(self, e: H.Shuffle) -> Term:
        return self._leaf_or_scalar("shuffle", e)

    def _e_VectorReduce(self, e: H.VectorReduce) -> Term:
        why = check_reduce(e)
        if why is not None:
            raise Unsupported(why, self.node)
        n, m = e.value.type.lanes, e.type.lanes
        if e.type.is_vector and e.op in REDUCE_COMBINE and n % m == 0:
            # A lane-combining FPIR term over its operand's term, so lifting and lowering see both (a dot
            # product becomes udot/vrmpy/pmaddwd); a reduction no rule takes (and every reduction under
            # isel=llvm) is expanded generically, as Halide's own codegen expands a VectorReduce
            # (ExprEmitter.reduce_lanes), so LLVM alone sees what it would see from Halide.
            return make(reduce_op(e.op, n // m), self.go(e.value))
        if e.type.is_vector:
            # Inline, so the selector sees the reduction together with what consumes it (an
            # accumulation `acc + sum of products` is one expression).
            return self.go(split_reduce(e))
        return self._leaf_or_scalar("reduce", e)

    def _leaf_or_scalar(self, kind: str, e: H.Expr) -> Term:
        """A vector leaf, or for a scalar result (`extract_element`, a full `vector_reduce`) the value
        emitted now and bound as a scalar, so scalar expressions can use it."""
        if e.type.is_vector:
            return self.leaf(kind, e)
        st = fpir_type(e.type.elem, self.node)
        v = self.cg._emit_leaf(Leaf(kind, e, 1, st), self.node)
        name = f"s{kind}{next(self.cg._leaf_ids)}"
        self.cg.scalars[name] = (self.cg.b.extract_element(v, ir.Constant(ir.IntType(32), 0)), st)
        return var(name, st)

    def _e_Call(self, e: H.Call) -> Term:
        n = e.name
        if n in IDENTITY_CALLS:
            return self.go(e.args[0])
        expanded = lower_call(e, self.cg.target, self.node)  # lerp, mux: as Halide's codegen expands them
        if expanded is not None:
            return self.go(expanded)
        if n == "_halide_buffer_is_bounds_query":
            return const(0, u1)
        if n in ("_halide_buffer_get_min", "_halide_buffer_get_extent", "_halide_buffer_get_stride"):
            info = self.cg._buffer_of(e.args[0], self.node)
            d = e.args[1]
            if not isinstance(d, H.IntImm):
                raise Unsupported(f"dynamic buffer dimension {_show(e)}", self.node)
            k = {"_halide_buffer_get_min": 0, "_halide_buffer_get_extent": 1, "_halide_buffer_get_stride": 2}[n]
            val = info.dims[d.value][k]
            name = f"{info.name}.{['min', 'extent', 'stride'][k]}.{d.value}"
            self.cg.scalars[name] = (val, i32)
            return var(name, i32)
        if n == "_halide_buffer_get_type":
            return const(self.cg._buffer_of(e.args[0], self.node).code, ScalarType(False, 32))
        if n == "_halide_buffer_get_dimensions":
            return const(self.cg._buffer_of(e.args[0], self.node).dimensions, i32)
        if n == "_halide_buffer_get_device_dirty":
            return const(0, u1)
        if n == "saturating_cast" and e.args[0].type.is_float:
            return self._float_scalar(e, lambda fe, st: saturating_float_to_int(
                fe.b, fe.emit_numeric(e.args[0]), st.signed, st.bits))
        if n == "saturating_cast":
            return make("saturating_cast", self.go(e.args[0]), type=fpir_type(e.type.elem, self.node))
        if n == "reinterpret" and e.args[0].type.is_float:
            return self._float_scalar(e, lambda fe, st: fe.bits_of(e.args[0]))
        if involves_float(e):  # strict_lt & co., is_nan_f32 & co.: a float comparison
            return self._float_scalar(e, lambda fe, st: fe.emit(e))
        if n in ("reinterpret",):
            return make("reinterpret", self.go(e.args[0]), type=fpir_type(e.type.elem, self.node))
        if n in BIT_COUNTS:
            return self._leaf_or_scalar("bitcount", e)
        op = INTRINSICS.get(n)
        if op is None:
            raise Unsupported(f"call to {n}", self.node)
        args = [self.go(a) for a in e.args]
        if op in ("mul_shr", "rounding_mul_shr") and args[2].type != args[0].type.to_unsigned():
            args[2] = make("cast", args[2], type=args[0].type.to_unsigned())
        if op in ("shl", "shr", "rounding_shl", "rounding_shr", "widening_shl", "widening_shr", "saturating_shl") \
                and args[1].type.bits != args[0].type.bits:
            args[1] = make("cast", args[1], type=args[1].type.__class__(args[1].type.signed, args[0].type.bits))
        return make(op, *args, flags=self._shift_flags(op, args))

    @staticmethod
    def _shift_flags(op: str, args: list[Term]) -> tuple[str, ...]:
        """Halide's facts about a shift it built (fpir/flags.py): `inrange` on shl/shr/widening_shl
        (a shift by the width or more is undefined in Halide) and `nsw` on a signed >= 32-bit shl /
        widening_shl (Halide reads x << y as x * 2^y). A fact a constant amount plainly breaks is
        not stated."""
        if op not in ("shl", "shr", "widening_shl"):
            return ()
        from fpir.opspec import spec

        rt = spec(op).type_rule([a.type for a in args], None)
        flags = set(halide_overflow_flags("shl" if op == "widening_shl" else op, rt, shifts=True))
        if args[1].is_const and not -rt.bits < args[1].value < rt.bits:
            flags.discard("inrange")
        return tuple(sorted(flags))
