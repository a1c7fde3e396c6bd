"""hvx128: float vector arithmetic emitted lane by lane (`ScalarFloatBuilder`).

HVX v66 has no float vectors: the Hexagon backend scalarises every float vector op anyway, and its cost
model prices each such op at the saturated maximum (InstructionCost::getMax). A loop holding one then
costs INT64_MAX, and SimpleLoopUnswitch's price for duplicating it (the loop's cost minus the cost of
the branch's own subtree: MAX - MAX = 0) is below any threshold, so every loop-invariant branch of a
nest (each inner loop's entry guard) was unswitched, doubling the nest each time: local_laplacian and
interpolate spent over 30 minutes in O3 (`-debug-only=simple-loop-unswitch`: "Total loop cost:
9223372036854775807", "Computed cost of 0"). `optsize`, LLVM's switch that turns non-trivial
unswitching off, also turns scalar float division into a `__hexagon_fast_divsf3` call, which the
bare-metal harness does not have.

So on hvx128 the codegen's builder emits float vector ops as what the backend would have made of them:
one scalar op per lane (same opcode, same fast-math flags, same predicate; an `llvm.*` intrinsic over
float vectors becomes its scalar form per lane), with the lanes gathered back into a vector
(insertelement) for the consumers that need one (stores, bitcasts, shuffles). Lanes of a vector this
builder made are reused, not re-extracted, so a chain of float ops stays scalar in the IR (the unused
insertelement chains are dead code for O3). Results are the same per lane: every op is lane-wise.
Everything else (integer code, loads, shuffles, bitcasts) is the plain IRBuilder's. A vector of
LOOP_LANES (64) lanes or more is computed by a loop over its lanes instead of unrolled (`_lane_loop`:
operands and result in stack arrays, the same scalar op per lane): float16 / bfloat16 vectors at their
natural HVX width (64 lanes, Halide's float32 emulation of every op) were minutes of LLVM work unrolled.

Known limit, and what covers it: the cost model also prices float vector shuffles and inserts into
float vectors at the maximum, and the lanes are gathered back (insertelement) for each store; O3's
InstCombine also re-forms float shuffles from the lanes (emitting the data movement on integer
vectors of the same bits does not survive it: `bitcast(shuffle(bitcast x))` folds back). Such a loop
still costs INT64_MAX, so the optimiser runs hvx128 float modules with non-trivial unswitching off
(pitchfork/backend/machine.py `optimizer_options`): interpolate had kept 91 unswitches (72k -> 209k
lines of IR) and did not compile in 25 minutes at its upstream 10 levels; with it, O3 takes 3 s.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, Sequence

from llvmlite import ir

from pitchfork.codegen.ir_constants import undef

_I32 = ir.IntType(32)
_I8, _I1 = ir.IntType(8), ir.IntType(1)
#: the stack arrays of `_lane_loop`: an HVX register's alignment (an aligned vmem ignores the low bits)
_ALIGN = 128
#: float vectors of this many lanes or more are computed by a loop over their lanes (`_lane_loop`):
#: unrolled, a 64-lane float16 pipeline (Halide's float32 emulation, every op per lane) gave LLVM
#: minutes of work
LOOP_LANES = 64
#: an overloaded intrinsic's vector type suffix (`.v8f32`, `.v8i32`): the scalar form drops `vN`
_VEC_SUFFIX = re.compile(r"\.v\d+((?:f|i)\d+)")


def _is_fvec(t: Any) -> bool:
    return isinstance(t, ir.VectorType) and isinstance(t.element, (ir.FloatType, ir.DoubleType))


def _is_vec(t: Any) -> bool:
    return isinstance(t, ir.VectorType)


class ScalarFloatBuilder(ir.IRBuilder):
    """An IRBuilder whose float vector arithmetic, comparisons, conversions, selects and `llvm.*`
    intrinsic calls are emitted lane by lane (see the module docstring)."""

    def __init__(self, block: Optional[ir.Block] = None) -> None:
        super().__init__(block)
        #: id(vector this builder made) -> (vector, its lanes): the lanes dominate wherever the vector does
        self._made: dict[int, tuple[ir.Value, list[ir.Value]]] = {}
        #: (id(function), element type x lanes) -> the stack arrays `_lane_loop` has made there
        self._arrays: dict[tuple[int, str], list[ir.Value]] = {}

    # ---- lanes ----------------------------------------------------------------------------------
    def _lanes(self, v: ir.Value) -> list[ir.Value]:
        made = self._made.get(id(v))
        if made is not None and made[0] is v:
            return made[1]
        t = v.type
        n = t.count
        if isinstance(v, ir.Constant):
            c = v.constant
            if isinstance(c, (list, tuple)):
                return [x if isinstance(x, ir.Constant) else ir.Constant(t.element, x) for x in c]
            if c is ir.Undefined:
                return [undef(t.element)] * n
            if c is None:  # zeroinitializer
                return [ir.Constant(t.element, None)] * n
        return [super(ScalarFloatBuilder, self).extract_element(v, ir.Constant(_I32, k)) for k in range(n)]

    def _join(self, lanes: Sequence[ir.Value], t: ir.VectorType) -> ir.Value:
        out: ir.Value = undef(t)
        for k, x in enumerate(lanes):
            out = super().insert_element(out, x, ir.Constant(_I32, k))
        self._made[id(out)] = (out, list(lanes))
        return out

    def _per_lane(self, t: ir.VectorType, args: Sequence[ir.Value],
                  one: Callable[..., ir.Value]) -> ir.Value:
        if t.count >= LOOP_LANES:
            return self._lane_loop(t, args, one)
        split = [self._lanes(a) if _is_vec(a.type) else [a] * t.count for a in args]
        return self._join([one(*(s[k] for s in split)) for k in range(t.count)], t)

    def _lane_loop(self, t: ir.VectorType, args: Sequence[ir.Value], one: Callable[..., ir.Value]) -> ir.Value:
        """`one` over the lanes of a wide vector as a loop (the operands and the result in stack
        arrays, lane i loaded, computed and stored by iteration i): the same scalar operation per
        lane as the unrolled form, in code that does not grow with the lanes. Bool lanes are kept
        as bytes in memory (Hexagon has no load or store of an i1 vector)."""
        n = t.count
        fn = self.block.function
        base = super(ScalarFloatBuilder, self)

        def mem(e: ir.Type) -> ir.Type:
            return _I8 if e == _I1 else e

        taken: dict[str, int] = {}

        def array(e: ir.Type) -> ir.Value:
            # Every array's contents are used up within this call (the result loaded before it
            # returns), so later loops of the function reuse them: the stack does not grow with the
            # number of float ops. Within one call each operand and the result get their own.
            key = f"{mem(e)}x{n}"
            pool = self._arrays.setdefault((id(fn), key), [])
            k = taken.get(key, 0)
            taken[key] = k + 1
            if k == len(pool):
                with self.goto_block(fn.entry_basic_block):  # once per function, not per loop trip
                    a = base.alloca(ir.ArrayType(mem(e), n))
                a.align = _ALIGN  # the whole-vector store and load below claim it
                pool.append(a)
            return pool[k]

        arrays = [array(a.type.element) if _is_vec(a.type) else None for a in args]
        out = array(t.element)
        for a, arr in zip(args, arrays):
            if arr is not None:
                v = self.zext(a, ir.VectorType(_I8, n)) if a.type.element == _I1 else a
                self.store(v, self.bitcast(arr, ir.PointerType(v.type)), align=_ALIGN)
        pre = self.block
        loop = fn.append_basic_block("lanes")
        done = fn.append_basic_block("lanes.done")
        self.branch(loop)
        self.position_at_end(loop)
        i = self.phi(_I32, "lane")
        i.add_incoming(ir.Constant(_I32, 0), pre)
        zero = ir.Constant(_I32, 0)
        xs = []
        for a, arr in zip(args, arrays):
            x = self.load(self.gep(arr, [zero, i])) if arr is not None else a
            xs.append(self.trunc(x, _I1) if arr is not None and a.type.element == _I1 else x)
        r = one(*xs)
        self.store(self.zext(r, _I8) if t.element == _I1 else r, self.gep(out, [zero, i]))
        nxt = self.add(i, ir.Constant(_I32, 1))
        i.add_incoming(nxt, self.block)
        self.cbranch(self.icmp_unsigned("<", nxt, ir.Constant(_I32, n)), loop, done)
        self.position_at_end(done)
        v = self.load(self.bitcast(out, ir.PointerType(ir.VectorType(mem(t.element), n))), align=_ALIGN)
        return self.trunc(v, t) if t.element == _I1 else v

    # ---- arithmetic -----------------------------------------------------------------------------
    def _binary(self, op: str, lhs: ir.Value, rhs: ir.Value, name: str, flags: Sequence[str]) -> ir.Value:
        base = getattr(ir.IRBuilder, op)
        if not _is_fvec(lhs.type):
            return base(self, lhs, rhs, name, flags)
        return self._per_lane(lhs.type, [lhs, rhs], lambda a, b: base(self, a, b, "", flags))

    def fadd(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Value:
        return self._binary("fadd", lhs, rhs, name, flags)

    def fsub(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Value:
        return self._binary("fsub", lhs, rhs, name, flags)

    def fmul(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Value:
        return self._binary("fmul", lhs, rhs, name, flags)

    def fdiv(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Value:
        return self._binary("fdiv", lhs, rhs, name, flags)

    def frem(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Value:
        return self._binary("frem", lhs, rhs, name, flags)

    def fneg(self, arg: ir.Value, name: str = "", flags: Sequence[str] = ()) -> ir.Value:
        if not _is_fvec(arg.type):
            return super().fneg(arg, name, flags)
        return self._per_lane(arg.type, [arg], lambda a: ir.IRBuilder.fneg(self, a, "", flags))

    def fcmp_ordered(self, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str = "",
                     flags: Sequence[str] = ()) -> ir.Value:
        if not _is_fvec(lhs.type):
            return super().fcmp_ordered(cmpop, lhs, rhs, name, flags)
        t = ir.VectorType(ir.IntType(1), lhs.type.count)
        return self._per_lane(t, [lhs, rhs], lambda a, b: ir.IRBuilder.fcmp_ordered(self, cmpop, a, b, "", flags))

    def fcmp_unordered(self, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str = "",
                       flags: Sequence[str] = ()) -> ir.Value:
        if not _is_fvec(lhs.type):
            return super().fcmp_unordered(cmpop, lhs, rhs, name, flags)
        t = ir.VectorType(ir.IntType(1), lhs.type.count)
        return self._per_lane(t, [lhs, rhs], lambda a, b: ir.IRBuilder.fcmp_unordered(self, cmpop, a, b, "", flags))

    def select(self, cond: ir.Value, lhs: ir.Value, rhs: ir.Value, name: str = "",
               flags: Sequence[str] = ()) -> ir.Value:
        if not _is_fvec(lhs.type):
            return super().select(cond, lhs, rhs, name, flags)
        return self._per_lane(lhs.type, [cond, lhs, rhs],
                              lambda c, a, b: ir.IRBuilder.select(self, c, a, b, "", flags))

    # ---- conversions ----------------------------------------------------------------------------
    def _cast(self, op: str, value: ir.Value, typ: ir.Type, name: str) -> ir.Value:
        base = getattr(ir.IRBuilder, op)
        if not (_is_fvec(value.type) or _is_fvec(typ)):
            return base(self, value, typ, name)
        return self._per_lane(typ, [value], lambda a: base(self, a, typ.element, ""))

    def sitofp(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._cast("sitofp", value, typ, name)

    def uitofp(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._cast("uitofp", value, typ, name)

    def fptosi(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._cast("fptosi", value, typ, name)

    def fptoui(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._cast("fptoui", value, typ, name)

    def fpext(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._cast("fpext", value, typ, name)

    def fptrunc(self, value: ir.Value, typ: ir.Type, name: str = "") -> ir.Value:
        return self._cast("fptrunc", value, typ, name)

    # ---- intrinsic calls ------------------------------------------------------------------------
    def call(self, fn: ir.Value, args: Sequence[ir.Value], name: str = "", cconv: Any = None,
             tail: bool = False, fastmath: Sequence[str] = (), attrs: Any = (), arg_attrs: Any = None) -> ir.Value:
        ret = fn.ftype.return_type if isinstance(fn, ir.Function) else None
        fname = fn.name if isinstance(fn, ir.Function) else ""
        if not (fname.startswith("llvm.") and isinstance(ret, ir.VectorType)
                and (_is_fvec(ret) or any(_is_fvec(a.type) for a in args))):
            return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        module = self.block.function.module
        scalar_name = _VEC_SUFFIX.sub(r".\1", fname)
        scalar_fn = module.globals.get(scalar_name)
        if scalar_fn is None:
            arg_types = [a.type.element if _is_vec(a.type) else a.type for a in args]
            scalar_fn = ir.Function(module, ir.FunctionType(ret.element, arg_types), name=scalar_name)
        return self._per_lane(ret, list(args),
                              lambda *xs: ir.IRBuilder.call(self, scalar_fn, list(xs), "", cconv, tail, fastmath))
