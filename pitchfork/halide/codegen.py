"""Loop-nest code generation: a captured Halide statement to one LLVM function, through llvmlite.

The statement is Halide's vectorized, simplified loop nest just before its own "Finding intrinsics"
pass (pitchfork/halide/capture.py), parsed by pitchfork/halide/stmt.py. This pass:

* turns every expression into an FPIR term (`to_term`): integer ops map one to one (Halide's `/` and
  `%` are Euclidean, casts wrap, exactly like FPIR); Halide's FPIR intrinsics (absd, widening_add,
  saturating_cast, rounding_shift_right, ...) map to FPIR ops; loads, ramps and broadcasts of
  non-constant scalars become leaves (variables) emitted separately; vector `let`s whose value is
  arithmetic are inlined so lifting sees the whole expression;
* selects instructions for every vector expression (pitchfork.lower.select_instructions, isel
  pitchfork or llvm) and emits them with pitchfork.emit.expr; scalar expressions (indices, bounds)
  are emitted with the same exact semantics, without lifting;
* emits loops (serial; Halide's parallel/unrolled loops run serially), lets, dense vector
  loads/stores (alignment 1), gathers/scatters for other indices (lane loops), predicated loads and
  stores (TailStrategy Predicate*/GuardWithIf tails: llvm.masked.load/store, or lane loops that skip
  masked-off lanes where LLVM's masked ops are wrong), vector reductions (strided slices combined
  with FPIR ops), shuffles, bit counts (LLVM's ctlz/cttz/ctpop), allocations for
  compute_root/compute_at intermediates (stack, or malloc/free when large or dynamic), if/else, and
  checks Halide's assertions on sizes and strides, writing the failing assertion's number to the
  error slot instead of crashing (`assert_messages` maps the number to the assertion's text);
* records every selection (`selections`: statement, input term, lifted FPIR, lowered, final).

Function ABI: `void name(ptr err, <per argument>)` where a buffer is `ptr host` followed by
(min, extent, stride) as i32 for each dimension, and a scalar parameter is an i32 or i64 value;
inputs in argument order, then the outputs. Code for x86 and AArch64 may call malloc/free.
`err[0]` is 0 on success. Constructs we cannot compile raise `Unsupported` quoting the construct and
its line, and the caller falls back to Halide's own compiler.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from llvmlite import ir

from fpir.ops import REDUCE_COMBINE, make, reduce_op
from fpir.term import Term, const, var
from fpir.types import ScalarType, i32, u1
from pitchfork.emit.expr import ExprEmitter, vec_type
from pitchfork.halide import ir as H
from pitchfork.halide.capture import ArgInfo, CapturedStmt
from pitchfork.halide.codegen_float import FloatEmitter, float_to_int, involves_float, saturating_float_to_int
from pitchfork.halide.codegen_reduce import REDUCE_OPS, check_reduce, split_reduce
from pitchfork.halide.htypes import HType

if TYPE_CHECKING:
    from pitchfork.lower import Selection


class Unsupported(Exception):
    def __init__(self, what: str, node: Optional[H.Node] = None) -> None:
        line = getattr(node, "line", 0) if node is not None else 0
        super().__init__(f"{what}" + (f" (statement line {line})" if line else ""))
        self.what = what


# Shifts by at least the bit width: Halide leaves them undefined (its result depends on the schedule);
# FPIR's shl/shr define them (0, or -1 for a negative value shifted right), and that is what we compile.
BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "min": "min", "max": "max",
          "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "&&": "and", "||": "or",
          "<<": "shl", ">>": "shr", "&": "and", "|": "or", "^": "xor"}

# Halide intrinsic name -> FPIR op (the result type of casts comes from the call's type)
INTRINSICS = {
    "shift_left": "shl", "shift_right": "shr", "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
    "bitwise_not": "not", "abs": "abs", "absd": "absd", "widening_add": "widening_add",
    "widening_sub": "widening_sub", "widening_mul": "widening_mul", "widening_shift_left": "widening_shl",
    "widening_shift_right": "widening_shr", "widen_right_add": "extending_add", "widen_right_sub": "extending_sub",
    "widen_right_mul": "extending_mul", "rounding_shift_left": "rounding_shl",
    "rounding_shift_right": "rounding_shr", "halving_add": "halving_add", "halving_sub": "halving_sub",
    "rounding_halving_add": "rounding_halving_add", "saturating_add": "saturating_add",
    "saturating_sub": "saturating_sub", "mul_shift_right": "mul_shr",
    "rounding_mul_shift_right": "rounding_mul_shr", "saturating_shift_left": "saturating_shl",
}
#: Constant-size allocations up to this many bytes go on the stack (larger ones and dynamic ones are
#: malloc'd, except on Hexagon).
STACK_LIMIT = 64 * 1024
# Bit counts (no FPIR op): emitted with LLVM's intrinsics, the argument selected on its own. Halide's
# count_leading_zeros(0) is the bit width, which is llvm.ctlz with is_zero_poison = false.
BIT_COUNTS = {"count_leading_zeros": "ctlz", "count_trailing_zeros": "cttz", "popcount": "ctpop"}
IDENTITY_CALLS = ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped", "strict_float")


def fpir_type(t: HType, node: Optional[H.Node] = None) -> ScalarType:
    if t.code not in ("int", "uint"):
        raise Unsupported(f"{t} values (only integer pipelines are compiled by PITCHFORK)", node)
    if t.bits not in (1, 8, 16, 32, 64):
        raise Unsupported(f"{t} values", node)
    return ScalarType(t.code == "int", t.bits)


def type_code(t: HType) -> int:
    code = {"int": 0, "uint": 1, "float": 2, "handle": 3, "bfloat": 4}[t.code]
    return code | (t.bits << 8) | (t.lanes << 16)


@dataclass
class Leaf:
    kind: str  # "load" | "splat" | "ramp" | "value" | "shuffle"
    node: H.Expr
    lanes: int
    type: ScalarType


@dataclass
class BufferInfo:
    name: str
    ptr: ir.Value
    elem: Optional[HType] = None
    dims: list[tuple[ir.Value, ir.Value, ir.Value]] = field(default_factory=list)
    code: int = 0
    dimensions: int = 0


@dataclass
class Stats:
    vector_exprs: int = 0
    rules_fired: dict = field(default_factory=dict)
    selection_seconds: float = 0.0
    asserts_checked: int = 0
    asserts_skipped: int = 0


class LoopNestCodegen:
    def __init__(self, captured: CapturedStmt, stmt: H.Stmt, target: str, isel: str, name: str = "pipeline") -> None:
        self.captured, self.stmt, self.target, self.isel, self.name = captured, stmt, target, isel, name
        self.module = ir.Module(name=name)
        self.stats = Stats()
        self._sel_cache: dict[Term, Selection] = {}
        #: every vector expression selected, with the statement it belongs to (input, lifted FPIR,
        #: lowered and final terms: what tests and `--trace`-style tools inspect)
        self.selections: list[tuple[Optional[H.Node], Selection]] = []
        self._leaf_ids = itertools.count()
        self._assert_ids = itertools.count(1)
        self.leaves: dict[str, Leaf] = {}
        #: assertion number (the value written to err[0]) -> "condition: Halide's error call"
        self.assert_messages: dict[int, str] = {}

    # ---- function and arguments ------------------------------------------------------------
    def build(self) -> ir.Function:
        ptr = ir.PointerType(ir.IntType(8))
        arg_types: list[ir.Type] = [ptr]
        layout: list[tuple[str, str, int, HType]] = []
        for a in self.captured.arguments:
            if a.kind == "scalar":
                if not a.type.is_float:  # a float parameter is passed as its bit pattern (i32/i64)
                    fpir_type(a.type)
                arg_types.append(ir.IntType(64 if a.type.bits == 64 else 32))
                layout.append(("scalar", a.name, 0, a.type))
            else:
                arg_types.append(ptr)
                arg_types.extend([ir.IntType(32)] * (3 * a.dimensions))
                layout.append(("buffer", a.name, a.dimensions, a.type))
        for o in self.captured.outputs:
            if len(o.types) != 1:
                raise Unsupported(f"output {o.name} is a Tuple")
            arg_types.append(ptr)
            arg_types.extend([ir.IntType(32)] * (3 * o.dimensions))
            layout.append(("buffer", o.name, o.dimensions, o.types[0]))
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), arg_types), name=self.name)
        self.fn = fn
        self.layout = layout
        entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self.err = fn.args[0]
        self.scalars: dict[str, tuple[ir.Value, ScalarType]] = {}
        #: scalar float values (parameters and lets), by name (see codegen_float.py)
        self.fscalars: dict[str, ir.Value] = {}
        self.vlets: dict[str, Term] = {}
        self.buffers: dict[str, BufferInfo] = {}
        fn.args[0].name = "err"
        k = 1
        for kind, nm, dims, t in layout:  # readable argument names in the emitted IR
            fn.args[k].name = _ident(nm)
            if kind == "buffer":
                for d in range(dims):
                    for j, f in enumerate(("min", "extent", "stride")):
                        fn.args[k + 1 + 3 * d + j].name = f"{_ident(nm)}.{f}.{d}"
            k += 1 + (3 * dims if kind == "buffer" else 0)
        k = 1
        for kind, nm, dims, t in layout:
            if kind == "scalar" and t.is_float:
                self.fscalars[nm] = self.b.bitcast(fn.args[k], ir.FloatType() if t.bits == 32 else ir.DoubleType())
                k += 1
            elif kind == "scalar":
                v = fn.args[k]
                st = fpir_type(t)
                if st.bits < v.type.width:
                    v = self.b.trunc(v, ir.IntType(st.bits))
                self.scalars[nm] = (v, st)
                k += 1
            else:
                info = BufferInfo(nm, fn.args[k], t.elem, code=type_code(t), dimensions=dims)
                k += 1
                for _ in range(dims):
                    info.dims.append((fn.args[k], fn.args[k + 1], fn.args[k + 2]))
                    k += 3
                self.buffers[nm + ".buffer"] = info
                self.buffers[nm] = info
        self.b.store(ir.Constant(ir.IntType(32), 0), self.b.bitcast(self.err, ir.PointerType(ir.IntType(32))))
        self.exit = fn.append_basic_block("exit")
        self.stmt_(self.stmt)
        if not self.b.block.is_terminated:
            self.b.branch(self.exit)
        ir.IRBuilder(self.exit).ret_void()
        return fn

    # ---- statements ------------------------------------------------------------------------
    def stmt_(self, s: H.Stmt) -> None:
        if self.b.block.is_terminated:
            return
        m = getattr(self, f"_s_{type(s).__name__}", None)
        if m is None:
            raise Unsupported(f"statement {type(s).__name__}", s)
        m(s)

    def _s_Block(self, s: H.Block) -> None:
        for x in s.stmts:
            self.stmt_(x)

    def _s_ProducerConsumer(self, s: H.ProducerConsumer) -> None:
        self.stmt_(s.body)

    def _s_LetStmt(self, s: H.LetStmt) -> None:
        self._bind(s.name, s.value, s)
        self.stmt_(s.body)

    def _bind(self, name: str, value: H.Expr, node: H.Node) -> None:
        t = value.type
        if t.is_handle:
            if isinstance(value, H.Call) and value.name == "_halide_buffer_get_host":
                buf = self._buffer_of(value.args[0], node)
                self.buffers[name] = buf
                return
            raise Unsupported(f"handle-valued let {name} = {_show(value)}", node)
        if t.is_float and t.is_scalar:
            self.fscalars[name] = FloatEmitter(self, node).emit(value)
            return
        if t.is_vector:
            self.vlets[name] = self.to_term(value, node)
            return
        self.scalars[name] = (self.scalar(value, node), fpir_type(t, node))

    def _s_AssertStmt(self, s: H.AssertStmt) -> None:
        try:
            cond = self.to_term(s.condition, s)
        except Unsupported:
            self.stats.asserts_skipped += 1  # e.g. null checks on buffer handles: ours are never null
            return
        self.stats.asserts_checked += 1
        code = next(self._assert_ids)
        self.assert_messages[code] = _assert_text(s)
        if cond.is_const:
            if cond.value:
                return
        ok = self._emit_scalar_term(cond)
        fail = self.fn.append_basic_block(f"assert_fail_{code}")
        cont = self.fn.append_basic_block(f"assert_ok_{code}")
        self.b.cbranch(ok, cont, fail)
        self.b.position_at_end(fail)
        self.b.store(ir.Constant(ir.IntType(32), code), self.b.bitcast(self.err, ir.PointerType(ir.IntType(32))))
        self.b.branch(self.exit)
        self.b.position_at_end(cont)

    def _s_IfThenElse(self, s: H.IfThenElse) -> None:
        cond = self.to_term(s.cond, s)
        if cond.is_const:
            branch = s.then_case if cond.value else s.else_case
            if branch is not None:
                self.stmt_(branch)
            return
        c = self._emit_scalar_term(cond)
        then_b = self.fn.append_basic_block("then")
        else_b = self.fn.append_basic_block("else") if s.else_case is not None else None
        after = self.fn.append_basic_block("endif")
        self.b.cbranch(c, then_b, else_b or after)
        saved = (dict(self.scalars), dict(self.vlets), dict(self.buffers))
        self.b.position_at_end(then_b)
        self.stmt_(s.then_case)
        if not self.b.block.is_terminated:
            self.b.branch(after)
        self.scalars, self.vlets, self.buffers = (dict(x) for x in saved)
        if else_b is not None:
            self.b.position_at_end(else_b)
            self.stmt_(s.else_case)  # type: ignore[arg-type]
            if not self.b.block.is_terminated:
                self.b.branch(after)
            self.scalars, self.vlets, self.buffers = (dict(x) for x in saved)
        self.b.position_at_end(after)

    def _s_For(self, s: H.For) -> None:
        if s.device_api:
            raise Unsupported(f"loop {s.name} offloaded to {s.device_api}", s)
        lo = self.scalar(s.min, s)
        ext = self.scalar(s.extent, s)
        hi = self.b.add(lo, ext)
        pre = self.b.block
        head = self.fn.append_basic_block(f"for_{s.name}")
        body = self.fn.append_basic_block(f"body_{s.name}")
        done = self.fn.append_basic_block(f"end_{s.name}")
        self.b.cbranch(self.b.icmp_signed("<", lo, hi), head, done)
        self.b.position_at_end(head)
        iv = self.b.phi(ir.IntType(32), s.name)
        iv.add_incoming(lo, pre)
        self.b.branch(body)
        self.b.position_at_end(body)
        saved = (dict(self.scalars), dict(self.vlets), dict(self.buffers))
        self.scalars[s.name] = (iv, i32)
        self.stmt_(s.body)
        self.scalars, self.vlets, self.buffers = (dict(x) for x in saved)
        if not self.b.block.is_terminated:
            nxt = self.b.add(iv, ir.Constant(ir.IntType(32), 1))
            iv.add_incoming(nxt, self.b.block)
            self.b.cbranch(self.b.icmp_signed("<", nxt, hi), head, done)
        self.b.position_at_end(done)

    def _s_Allocate(self, s: H.Allocate) -> None:
        """An intermediate buffer (compute_root/compute_at). Small constant-size ones, `in Stack` ones
        and every one on Hexagon (our bare-metal harness has no malloc) live on the stack, scoped with
        stacksave/stackrestore so allocations inside loops do not grow the stack; others are malloc'd
        and freed at the end of their scope (a compute_root image would overflow an 8 MB stack), as
        Halide does with halide_malloc."""
        i64 = ir.IntType(64)
        n: ir.Value = ir.Constant(i64, 1)
        const_elems: Optional[int] = 1
        for e in s.extents:
            if isinstance(e, H.IntImm) and const_elems is not None:
                const_elems *= e.value
            else:
                const_elems = None
            n = self.b.mul(n, self.b.sext(self.scalar(e, s), i64))
        if s.condition is not None:
            # `allocate ... if cond` (e.g. a Func used only under a specialization): the buffer is only
            # touched when cond holds, and its extents may be meaningless otherwise, so allocate nothing.
            n = self.b.select(self.scalar(s.condition, s), n, ir.Constant(i64, 0))
        elem_bytes = max(1, s.type.bits // 8)
        # Pad by a vector so that vector loads that Halide rounds up stay inside the allocation.
        size = self.b.add(self.b.mul(n, ir.Constant(i64, elem_bytes)), ir.Constant(i64, 512))
        ptr = ir.PointerType(ir.IntType(8))
        if self.target == "hvx128" or s.memory_type in ("Stack", "Register"):
            on_heap = False  # Halide puts `in Stack` allocations on the stack too
        else:
            on_heap = const_elems is None or const_elems * elem_bytes > STACK_LIMIT or s.memory_type == "Heap"
        if on_heap:
            mem = self.b.call(self._intrinsic("malloc", ptr, [i64]), [size])
        else:
            save = self.b.call(self._intrinsic("llvm.stacksave.p0", ptr, []), [])
            mem = self.b.alloca(ir.IntType(8), size=size)
            mem.align = 128
        saved = dict(self.buffers)
        self.buffers[s.name] = BufferInfo(s.name, mem, s.type.elem)
        self.stmt_(s.body)
        self.buffers = saved
        if not self.b.block.is_terminated:
            if on_heap:
                self.b.call(self._intrinsic("free", ir.VoidType(), [ptr]), [mem])
            else:
                self.b.call(self._intrinsic("llvm.stackrestore.p0", ir.VoidType(), [ptr]), [save])

    def _s_Free(self, s: H.Free) -> None:
        return

    def _s_Evaluate(self, s: H.Evaluate) -> None:
        v = s.value
        if isinstance(v, H.IntImm):
            return
        raise Unsupported(f"evaluated call {_show(v)}", s)

    def _s_Store(self, s: H.Store) -> None:
        buf = self._buffer(s.buffer, s)
        t = s.value.type
        if t.is_float and t.is_scalar and s.predicate is None:
            val = FloatEmitter(self, s).emit(s.value)
            idx = self.scalar(s.index, s)
            base = self.b.bitcast(buf.ptr, ir.PointerType(val.type))
            self.b.store(val, self.b.gep(base, [self.b.sext(idx, ir.IntType(64))]), align=1)
            return
        et = fpir_type(t.elem, s)
        if t.is_scalar:
            if s.predicate is not None:
                raise Unsupported(f"predicated scalar store to {s.buffer}", s)
            val = self.scalar(s.value, s)
            idx = self.scalar(s.index, s)
            self._store_elem(buf, et, idx, val)
            return
        # A predicated store (TailStrategy::Predicate/PredicateStores, GuardWithIf tails) writes only
        # the lanes whose predicate is true: a masked store, or a scatter that skips masked-off lanes.
        mask = self._mask(s.predicate, t.lanes, s) if s.predicate is not None else None
        val = self._to_storage(self.vector(s.value, s), et)
        ramp = self._dense(s.index)
        if ramp is not None:
            base = self.scalar(ramp, s)
            p = self._elem_ptr(buf, et, base, vec_type(_storage(et), t.lanes))
            if mask is None:
                self.b.store(val, p, align=1)
            elif not self._masked_ok(t.lanes, et):
                self._scatter(buf, et, self._iota(base, t.lanes), val, t.lanes, mask)
            else:
                fn = self._intrinsic(f"llvm.masked.store.v{t.lanes}i{_storage(et).bits}.p0", ir.VoidType(),
                                     [val.type, p.type, ir.IntType(32), mask.type])
                self.b.call(fn, [val, p, ir.Constant(ir.IntType(32), 1), mask])
            return
        self._scatter(buf, et, self.vector(s.index, s), val, t.lanes, mask)

    def _masked_ok(self, lanes: int, st: ScalarType) -> bool:
        """Whether llvm.masked.load/store are safe here. LLVM 22's Hexagon backend miscompiles them for
        vectors narrower than an HVX register (a 16 x i8 masked store writes every lane once any mask
        bit is set; found by the GuardWithIf tail tests), so those use lane loops instead."""
        return self.target != "hvx128" or (lanes * _storage(st).bits) % 1024 == 0

    def _iota(self, base: ir.Value, lanes: int) -> ir.Value:
        v = self._splat(base, i32, lanes)
        return self.b.add(v, ir.Constant(v.type, list(range(lanes))))

    def _mask(self, predicate: H.Expr, lanes: int, node: H.Node) -> ir.Value:
        if predicate.type.is_scalar:
            return self._splat(self.scalar(predicate, node), u1, lanes)
        return self.vector(predicate, node)

    # ---- memory ------------------------------------------------------------------------------
    def _buffer(self, name: str, node: H.Node) -> BufferInfo:
        if name not in self.buffers:
            raise Unsupported(f"buffer {name} is not an argument or an allocation", node)
        return self.buffers[name]

    def _buffer_of(self, e: H.Expr, node: H.Node) -> BufferInfo:
        if isinstance(e, H.Cast):
            e = e.value
        if isinstance(e, H.Variable) and e.name in self.buffers:
            return self.buffers[e.name]
        raise Unsupported(f"buffer handle {_show(e)}", node)

    def _elem_ptr(self, buf: BufferInfo, et: ScalarType, index: ir.Value, pointee: ir.Type) -> ir.Value:
        st = _storage(et)
        base = self.b.bitcast(buf.ptr, ir.PointerType(ir.IntType(st.bits)))
        p = self.b.gep(base, [self.b.sext(index, ir.IntType(64)) if index.type.width < 64 else index])
        return self.b.bitcast(p, ir.PointerType(pointee))

    def _store_elem(self, buf: BufferInfo, et: ScalarType, idx: ir.Value, val: ir.Value) -> None:
        st = _storage(et)
        if et.bits == 1:
            val = self.b.zext(val, ir.IntType(8))
        self.b.store(val, self._elem_ptr(buf, et, idx, ir.IntType(st.bits)), align=1)

    def _to_storage(self, v: ir.Value, et: ScalarType) -> ir.Value:
        if et.bits == 1:
            return self.b.zext(v, ir.VectorType(ir.IntType(8), v.type.count))
        return v

    def _entry_alloca(self, t: ir.Type) -> ir.Value:
        b = ir.IRBuilder(self.fn.entry_basic_block)
        b.position_at_start(self.fn.entry_basic_block)
        a = b.alloca(t)
        a.align = 128
        return a

    def _lane_loop(self, lanes: int, body) -> None:  # type: ignore[no-untyped-def]
        """Emit `for k in 0..lanes: body(k)` as a real loop: a gather of 256 lanes written out lane by
        lane is thousands of instructions and makes LLVM slow, and these only run at image borders."""
        # The trip count goes through an empty inline-asm statement so LLVM cannot see it and
        # unroll the loop completely (which made Hexagon compiles take tens of seconds).
        opaque = ir.InlineAsm(ir.FunctionType(ir.IntType(32), [ir.IntType(32)]), "", "=r,0")
        count = self.b.call(opaque, [ir.Constant(ir.IntType(32), lanes)])
        pre = self.b.block
        loop = self.fn.append_basic_block("lanes")
        done = self.fn.append_basic_block("lanes_end")
        self.b.branch(loop)
        self.b.position_at_end(loop)
        k = self.b.phi(ir.IntType(32), "lane")
        k.add_incoming(ir.Constant(ir.IntType(32), 0), pre)
        body(k)
        nxt = self.b.add(k, ir.Constant(ir.IntType(32), 1))
        k.add_incoming(nxt, self.b.block)
        self.b.cbranch(self.b.icmp_signed("<", nxt, count), loop, done)
        self.b.position_at_end(done)

    def _gather(self, buf: BufferInfo, st: ScalarType, idx: ir.Value, lanes: int,
                mask: Optional[ir.Value] = None) -> ir.Value:
        """Lane-by-lane load of `buf[idx[k]]`; lanes whose `mask` bit is false are not read (zero)."""
        et = ir.IntType(_storage(st).bits)
        idx_mem = self._entry_alloca(ir.ArrayType(ir.IntType(32), lanes))
        out_mem = self._entry_alloca(ir.ArrayType(et, lanes))
        self.b.store(self._index32(idx), self.b.bitcast(idx_mem, ir.PointerType(ir.VectorType(ir.IntType(32), lanes))),
                     align=4)
        if mask is not None:
            self.b.store(ir.Constant(ir.VectorType(et, lanes), [0] * lanes),
                         self.b.bitcast(out_mem, ir.PointerType(ir.VectorType(et, lanes))), align=1)
        mask_mem = self._mask_memory(mask, lanes)
        zero = ir.Constant(ir.IntType(32), 0)

        def body(k: ir.Value) -> None:
            def one() -> None:
                ix = self.b.load(self.b.gep(idx_mem, [zero, k]), align=4)
                x = self.b.load(self._elem_ptr(buf, st, ix, et), align=1)
                self.b.store(x, self.b.gep(out_mem, [zero, k]), align=1)

            self._if_lane(mask_mem, k, one)

        self._lane_loop(lanes, body)
        return self.b.load(self.b.bitcast(out_mem, ir.PointerType(ir.VectorType(et, lanes))), align=1)

    def _scatter(self, buf: BufferInfo, st: ScalarType, idx: ir.Value, val: ir.Value, lanes: int,
                 mask: Optional[ir.Value] = None) -> None:
        """Lane-by-lane store of `val[k]` to `buf[idx[k]]`, in lane order (a later lane wins), skipping
        lanes whose `mask` bit is false."""
        et = ir.IntType(_storage(st).bits)
        idx_mem = self._entry_alloca(ir.ArrayType(ir.IntType(32), lanes))
        val_mem = self._entry_alloca(ir.ArrayType(et, lanes))
        self.b.store(self._index32(idx), self.b.bitcast(idx_mem, ir.PointerType(ir.VectorType(ir.IntType(32), lanes))),
                     align=4)
        self.b.store(val, self.b.bitcast(val_mem, ir.PointerType(val.type)), align=1)
        mask_mem = self._mask_memory(mask, lanes)
        zero = ir.Constant(ir.IntType(32), 0)

        def body(k: ir.Value) -> None:
            def one() -> None:
                ix = self.b.load(self.b.gep(idx_mem, [zero, k]), align=4)
                x = self.b.load(self.b.gep(val_mem, [zero, k]), align=1)
                self.b.store(x, self._elem_ptr(buf, st, ix, et), align=1)

            self._if_lane(mask_mem, k, one)

        self._lane_loop(lanes, body)

    def _index32(self, idx: ir.Value) -> ir.Value:
        """Vector indices as i32 (Halide indices are int32; an int64 index is truncated, as Halide's
        own 32-bit buffer addressing does)."""
        w = idx.type.element.width
        if w == 32:
            return idx
        vt = ir.VectorType(ir.IntType(32), idx.type.count)
        return self.b.trunc(idx, vt) if w > 32 else self.b.sext(idx, vt)

    def _mask_memory(self, mask: Optional[ir.Value], lanes: int) -> Optional[ir.Value]:
        if mask is None:
            return None
        mem = self._entry_alloca(ir.ArrayType(ir.IntType(8), lanes))
        self.b.store(self.b.zext(mask, ir.VectorType(ir.IntType(8), lanes)),
                     self.b.bitcast(mem, ir.PointerType(ir.VectorType(ir.IntType(8), lanes))), align=1)
        return mem

    def _if_lane(self, mask_mem: Optional[ir.Value], k: ir.Value, body) -> None:  # type: ignore[no-untyped-def]
        if mask_mem is None:
            body()
            return
        zero = ir.Constant(ir.IntType(32), 0)
        bit = self.b.load(self.b.gep(mask_mem, [zero, k]), align=1)
        on = self.fn.append_basic_block("lane_on")
        after = self.fn.append_basic_block("lane_next")
        self.b.cbranch(self.b.icmp_unsigned("!=", bit, ir.Constant(ir.IntType(8), 0)), on, after)
        self.b.position_at_end(on)
        body()
        self.b.branch(after)
        self.b.position_at_end(after)

    def _dense(self, index: H.Expr) -> Optional[H.Expr]:
        if isinstance(index, H.Ramp) and isinstance(index.stride, H.IntImm) and index.stride.value == 1:
            return index.base
        return None

    def _intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    # ---- expressions ---------------------------------------------------------------------------
    def to_term(self, e: H.Expr, node: H.Node, leaves: Optional[dict[str, Leaf]] = None) -> Term:
        """Halide expression -> FPIR term; loads/ramps/splats become leaves recorded in `leaves`."""
        # Leaves are registered codegen-wide: a vector let's term may be used in later statements.
        conv = _Converter(self, node, self.leaves)
        return conv.go(e)

    def scalar(self, e: H.Expr, node: H.Node) -> ir.Value:
        return self._emit_scalar_term(self.to_term(e, node))

    def _emit_scalar_term(self, t: Term) -> ir.Value:
        env: dict[str, ir.Value] = {}
        for v in t.variables():
            val, st = self.scalars[v.name]
            env[v.name] = self.b.insert_element(ir.Constant(vec_type(st, 1), ir.Undefined), val,
                                                ir.Constant(ir.IntType(32), 0))
        from pitchfork.lower import expand_fpir

        out = ExprEmitter(self.b, 1, env, self.target).emit(expand_fpir(t))
        return self.b.extract_element(out, ir.Constant(ir.IntType(32), 0))

    def vector(self, e: H.Expr, node: H.Node) -> ir.Value:
        term = self.to_term(e, node)
        leaves = self.leaves
        lanes = e.type.lanes
        final = self._select(term, node)
        env: dict[str, ir.Value] = {}
        for v in final.variables():
            if v.name in leaves:
                env[v.name] = self._emit_leaf(leaves[v.name], node)
            else:  # a scalar used at vector width (cannot happen after conversion, kept for safety)
                val, st = self.scalars[v.name]
                env[v.name] = self._splat(val, st, lanes)
        return ExprEmitter(self.b, lanes, env, self.target).emit(final)

    def _select(self, term: Term, node: Optional[H.Node] = None) -> Term:
        hit = self._sel_cache.get(term)
        if hit is not None:
            self.selections.append((node, hit))
            return hit.final
        from pitchfork.lower import select_instructions

        sel = select_instructions(term, self.target, self.isel)
        self.selections.append((node, sel))
        self.stats.vector_exprs += 1
        self.stats.selection_seconds += sel.seconds
        for st in (sel.lift_stats, sel.lower_stats):
            if st is not None:
                for k, n in st.fired.items():
                    self.stats.rules_fired[k] = self.stats.rules_fired.get(k, 0) + n
        self._sel_cache[term] = sel
        return sel.final

    def _splat(self, val: ir.Value, st: ScalarType, lanes: int) -> ir.Value:
        vt = vec_type(st, lanes)
        one = self.b.insert_element(ir.Constant(vec_type(st, 1), ir.Undefined), val, ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, ir.Constant(one.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)) \
            if lanes > 1 else one

    def _emit_leaf(self, leaf: Leaf, node: H.Node) -> ir.Value:
        e = leaf.node
        if leaf.kind == "splat":
            assert isinstance(e, H.Broadcast)
            return self._splat(self.scalar(e.value, node), leaf.type, leaf.lanes)
        if leaf.kind == "ramp":
            assert isinstance(e, H.Ramp)
            base = self._splat(self.scalar(e.base, node), leaf.type, leaf.lanes)
            stride = self._splat(self.scalar(e.stride, node), leaf.type, leaf.lanes)
            iota = ir.Constant(vec_type(leaf.type, leaf.lanes), list(range(leaf.lanes)))
            return self.b.add(base, self.b.mul(stride, iota))
        if leaf.kind == "load":
            assert isinstance(e, H.Load)
            buf = self._buffer(e.buffer, node)
            st = leaf.type
            # Masked-off lanes of a predicated load are not read (they may lie outside the buffer)
            # and are zero.
            mask = self._mask(e.predicate, leaf.lanes, node) if e.predicate is not None else None
            ramp = self._dense(e.index)
            if ramp is not None:
                base = self.scalar(ramp, node)
                vt = vec_type(_storage(st), leaf.lanes)
                p = self._elem_ptr(buf, st, base, vt)
                if mask is None:
                    v = self.b.load(p, align=1)
                elif not self._masked_ok(leaf.lanes, st):
                    v = self._gather(buf, st, self._iota(base, leaf.lanes), leaf.lanes, mask)
                else:
                    fn = self._intrinsic(f"llvm.masked.load.v{leaf.lanes}i{_storage(st).bits}.p0", vt,
                                         [p.type, ir.IntType(32), mask.type, vt])
                    v = self.b.call(fn, [p, ir.Constant(ir.IntType(32), 1), mask, ir.Constant(vt, None)])
            else:
                v = self._gather(buf, st, self.vector(e.index, node), leaf.lanes, mask)
            if st.bits == 1:
                v = self.b.icmp_unsigned("!=", v, ir.Constant(v.type, [0] * leaf.lanes))
            return v
        if leaf.kind == "shuffle":
            assert isinstance(e, H.Shuffle)
            parts = [self.vector(x, node) if x.type.is_vector else self._splat(self.scalar(x, node), leaf.type, 1)
                     for x in e.vectors]
            em = ExprEmitter(self.b, leaf.lanes, {}, self.target)
            whole = em.concat(parts, sum(p.type.count for p in parts)) if len(parts) > 1 else parts[0]
            return self.b.shuffle_vector(whole, ir.Constant(whole.type, ir.Undefined),
                                         ir.Constant(ir.VectorType(ir.IntType(32), len(e.indices)), list(e.indices)))
        if leaf.kind == "bitcount":
            assert isinstance(e, H.Call)
            arg = self.vector(e.args[0], node) if e.args[0].type.is_vector else \
                self._splat(self.scalar(e.args[0], node), leaf.type, 1)
            name = BIT_COUNTS[e.name]
            args = [arg] if name == "ctpop" else [arg, ir.Constant(ir.IntType(1), 0)]
            fn = self._intrinsic(f"llvm.{name}.v{arg.type.count}i{leaf.type.bits}", arg.type, [a.type for a in args])
            return self.b.call(fn, args)
        if leaf.kind == "reduce":
            assert isinstance(e, H.VectorReduce)
            return self._reduce(e, leaf, node)
        raise Unsupported(f"vector leaf {leaf.kind}", node)

    def _reduce(self, e: H.VectorReduce, leaf: Leaf, node: H.Node) -> ir.Value:
        """`vector_reduce_<op>`: output lane i combines input lanes [i*f, (i+1)*f), f = in/out lanes.
        To several lanes: the f strided slices combined as one lane-wise expression (codegen_reduce),
        selected whole. To one lane: the value selected on its own, then a halving tree of FPIR ops
        (exact Halide semantics: a wrapping add, signed/unsigned min by type, ...)."""
        if leaf.lanes > 1:  # not reached from to_term (which inlines these), kept for direct callers
            return self.vector(split_reduce(e), node)
        v = self.vector(e.value, node)
        lanes = e.value.type.lanes
        from pitchfork.lower import expand_fpir

        while lanes > 1:
            # Halve while the width is even; an odd width combines all its lanes in one step.
            parts = 2 if lanes % 2 == 0 else lanes
            m = lanes // parts
            undef = ir.Constant(v.type, ir.Undefined)
            env: dict[str, ir.Value] = {}
            acc: Optional[Term] = None
            for j in range(parts):
                name = f"r{j}"
                idx = ir.Constant(ir.VectorType(ir.IntType(32), m), [j * m + i for i in range(m)])
                env[name] = self.b.shuffle_vector(v, undef, idx)
                t = var(name, leaf.type)
                acc = t if acc is None else make(REDUCE_OPS[e.op], acc, t)
            assert acc is not None
            v = ExprEmitter(self.b, m, env, self.target).emit(expand_fpir(acc))
            lanes = m
        return v


def _ident(name: str) -> str:
    """An LLVM value name for a Halide name (`sobel$1` -> `sobel_1`)."""
    return "".join(c if c.isalnum() or c in "._" else "_" for c in name)


def _show(e: H.Node, limit: int = 160) -> str:
    """Halide's text of a node for error messages, shortened."""
    from pitchfork.halide.printer import to_text

    try:
        text = " ".join(to_text(e).split())
    except Exception:  # noqa: BLE001 - a message must never fail
        text = type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _assert_text(s: H.AssertStmt) -> str:
    from pitchfork.halide.printer import to_text

    return f"{to_text(s.condition)} ({to_text(s.message)})"


def _storage(t: ScalarType) -> ScalarType:
    return ScalarType(False, 8) if t.bits == 1 else t


class _Converter:
    """Halide Expr -> FPIR Term for one statement."""

    def __init__(self, cg: LoopNestCodegen, node: H.Node, leaves: dict[str, Leaf]) -> None:
        self.cg, self.node, self.leaves = cg, node, leaves
        self.lets: dict[str, Term] = {}

    def leaf(self, kind: str, e: H.Expr) -> Term:
        st = fpir_type(e.type.elem, self.node)
        name = f"{kind}{next(self.cg._leaf_ids)}"
        self.leaves[name] = Leaf(kind, e, e.type.lanes, st)
        return var(name, st)

    def go(self, e: H.Expr) -> Term:
        m = getattr(self, f"_e_{type(e).__name__}", None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__}: {_show(e)}", self.node)
        return m(e)

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
        floats): emitted now as scalar code (codegen_float.py) and bound to a scalar name."""
        if e.type.is_vector:
            raise Unsupported(f"vector floating-point expression {_show(e)} (float code is compiled for "
                              "scalars only)", self.node)
        st = fpir_type(e.type.elem, self.node)
        v = convert(FloatEmitter(self.cg, self.node), st)
        name = f"fconv{next(self.cg._leaf_ids)}"
        self.cg.scalars[name] = (v, st)
        return var(name, st)

    def _e_Cast(self, e: H.Cast) -> Term:
        if e.value.type.is_float:
            return self._float_scalar(e, lambda fe, st: float_to_int(fe.b, fe.emit(e.value), st.signed, st.bits))
        x = self.go(e.value)
        t = fpir_type(e.type.elem, self.node)
        if t.bits == 1 and x.type.bits > 1:
            # Halide's cast to bool keeps the lowest bit (FPIR's cast<u1> tests != 0).
            return make("ne", make("and", x, const(1, x.type)), const(0, x.type))
        return make("cast", x, type=t)

    def _e_Reinterpret(self, e: H.Reinterpret) -> Term:
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
        return make(op, a, b)

    def _e_Not(self, e: H.Not) -> Term:
        return make("not", self.go(e.a))

    def _e_Select(self, e: H.Select) -> Term:
        return make("select", self.go(e.cond), self.go(e.true_value), self.go(e.false_value))

    def _e_Let(self, e: H.Let) -> Term:
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
        return self.leaf("splat", e)

    def _e_Ramp(self, e: H.Ramp) -> Term:
        return self.leaf("ramp", e)

    def _e_Load(self, e: H.Load) -> Term:
        if e.type.is_scalar:
            # A scalar load inside a scalar expression: emit it now and bind a scalar.
            buf = self.cg._buffer(e.buffer, self.node)
            st = fpir_type(e.type, self.node)
            idx = self.cg.scalar(e.index, self.node)
            v = self.cg.b.load(self.cg._elem_ptr(buf, st, idx, ir.IntType(_storage(st).bits)), align=1)
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
        if e.type.is_vector and self.cg.isel == "pitchfork" and e.op in REDUCE_COMBINE and n % m == 0:
            # A lane-combining FPIR term over its operand's term, so lifting and lowering see both (a dot
            # product becomes udot/vrmpy/pmaddwd); a reduction no rule takes is expanded generically.
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
            return self._float_scalar(e, lambda fe, st: saturating_float_to_int(fe.b, fe.emit(e.args[0]), st.signed,
                                                                                 st.bits))
        if n == "saturating_cast":
            return make("saturating_cast", self.go(e.args[0]), type=fpir_type(e.type.elem, self.node))
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
        return make(op, *args)
