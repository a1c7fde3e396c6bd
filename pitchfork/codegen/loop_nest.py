"""Loop-nest code generation: a captured Halide statement to one LLVM function, through llvmlite.

Module layout: this file holds the function, statements, leaves and selection; codegen_expr.py the
Halide expression -> FPIR term converter; codegen_memory.py loads/stores/gathers (a mixin);
codegen_alloc.py allocations, the heap entry points and the failure exit (a mixin);
codegen_base.py the shared tables and records; codegen_float.py / codegen_reduce.py / scalars.py as
named.

The statement is Halide's vectorized, simplified loop nest just before its own "Finding intrinsics"
pass (pitchfork/frontend/capture.py), parsed by pitchfork/frontend/stmt.py. This pass:

* turns every expression into an FPIR term (`to_term`, codegen_expr.py): integer ops map one to one (Halide's `/` and
  `%` are Euclidean, casts wrap, exactly like FPIR); Halide's FPIR intrinsics (absd, widening_add,
  saturating_cast, rounding_shift_right, ...) map to FPIR ops; loads, ramps and broadcasts of
  non-constant scalars become leaves (variables) emitted separately; vector `let`s whose value is
  arithmetic are inlined so lifting sees the whole expression;
* selects instructions for every vector expression (pitchfork.selection.lower.select_instructions, isel
  pitchfork or llvm) and emits them with pitchfork.codegen.expr; scalar expressions (indices, bounds)
  are emitted with the same exact semantics, without lifting;
* emits loops (serial; unrolled loops as serial ones; parallel loops as Halide's task functions
  run by its runtime's `halide_do_par_for`, codegen_parallel.py), lets, dense vector
  loads/stores (with the alignment Halide's `aligned(m, r)` and the base pointer prove; scoped-alias
  metadata per buffer; `inbounds` addressing; scalar index arithmetic with `nsw`, see scalars.py), gathers/scatters for other indices (lane loops), predicated loads and
  stores (TailStrategy Predicate*/GuardWithIf tails: llvm.masked.load/store, or lane loops that skip
  masked-off lanes where LLVM's masked ops are wrong), vector reductions (strided slices combined
  with FPIR ops), shuffles, bit counts (LLVM's ctlz/cttz/ctpop), allocations for
  compute_root/compute_at intermediates (codegen_alloc.py: stack up to Halide's 16 KiB, else
  halide_malloc/halide_free, freed on every exit path), if/else, and
  checks Halide's assertions on sizes and strides, writing the failing assertion's number to the
  error slot instead of crashing (`assert_messages` maps the number to the assertion's text);
* records every selection (`selections`: statement, input term, lifted FPIR, lowered, final).

Function ABI: `void name(ptr err, <per argument>)` where a buffer is `ptr host` followed by
(min, extent, stride) as i32 for each dimension, and a scalar parameter is an i32 or i64 value;
inputs in argument order, then the outputs. Buffer pointers are `noalias` (the caller never passes
an output that overlaps another buffer) and aligned to their element size. A kernel with heap
allocations calls `halide_malloc`/`halide_free` (weak defaults over libc malloc/free in its module).
`err[0]` is 0 on success. Constructs we cannot compile raise `Unsupported` quoting the construct and
its line, and the caller falls back to Halide's own compiler.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable, Hashable, Mapping, Optional

from llvmlite import ir

from fpir.ops import make
from fpir.opspec import REDUCE_COMBINE, reduce_op
from fpir.term import Term, var
from fpir.types import ScalarType, i32
from pitchfork.codegen.expr import ExprEmitter, vec_type
from pitchfork.codegen import ir_constants
from pitchfork.codegen.ir_constants import mask, undef
from pitchfork.frontend import ir as H
from pitchfork.frontend.capture import ArgInfo, CapturedStmt  # noqa: F401 (re-exported)
from pitchfork.codegen.alloc import AllocMixin, hoist_allocations
from pitchfork.codegen.atomic import AtomicMixin
from pitchfork.codegen.base import (ALLOC_ALIGN, BINOPS, BIT_COUNTS, IDENTITY_CALLS, INTRINSICS,  # noqa: F401
                                           STACK_LIMIT, VERY_LIKELY, BufferInfo, Leaf, Stats,
                                           Unsupported, _assert_text, _ident, _show, _storage, fpir_type,
                                           type_code)
from pitchfork.codegen.fast_builder import fast_builder
from pitchfork.codegen.name_scope import fast_names
from pitchfork.codegen.to_fpir import ExprConverter
from pitchfork.codegen.floats import FloatEmitter
from pitchfork.codegen.floats_bfloat import widen
from pitchfork.codegen.hvx_floats import ScalarFloatBuilder
from pitchfork.codegen.lut import LutMixin
from pitchfork.codegen.span import SpanMixin
from pitchfork.codegen.hvx_accumulate import start_from_fresh
from pitchfork.codegen.memory import LoopFrame, MemoryMixin, clamped_ramp
from pitchfork.codegen.parallel import THREADED_TARGETS, ParallelMixin, refuse_async
from pitchfork.codegen.reduce import REDUCE_OPS, split_reduce
from pitchfork.frontend.embedded import EmbeddedBuffer
from pitchfork.frontend.htypes import HType
from pitchfork.codegen.scalars import ScalarEmitter, ScalarValues
from pitchfork.passes.pipeline import PassList, default_passes
from pitchfork.targets.target_strings import has_feature

if TYPE_CHECKING:
    from pitchfork.selection.lower import Selection


#: library calls LLVM may not invent in a kernel, on any target (the function attribute
#: "no-builtin-<name>", which LLVM's TargetLibraryInfo honours). x86: no `memcpy` from copy loops
#: (LoopIdiomRecognize). glibc's memcpy on this Zen 3 (rep movsb) runs 2.3x slower when destination
#: and source are within ~128 bytes of a 4 KiB alias, which a repeat_edge tile row copied into a
#: malloc'd buffer hits depending on where malloc put it: sobel3x3 8192x8192 measured 21.3 ms against
#: Halide 21's 15.4 ms (same hot loop). Halide 21's code never calls memcpy; its vector copy loops
#: are not slowed by the alias. memset is left to LLVM (Halide's code calls it too). On arm64 and
#: hvx128 the copy stays inline as well: Halide's code has none there either, and the harness's static
#: estimate counts only the kernel's own blocks, so a libc call would hide its cost (sobel3x3 arm64
#: quick: 128,801 counted cycles with the call, 151,361 with the copy inline).
NO_BUILTINS: tuple[str, ...] = ("memcpy",)  # every target


class LoopNestCodegen(MemoryMixin, LutMixin, SpanMixin, AllocMixin, ParallelMixin, AtomicMixin):
    def __init__(self, captured: CapturedStmt, stmt: H.Stmt, target: str, isel: str, name: str = "pipeline",
                 unavailable: frozenset[str] = frozenset(), passes: Optional[PassList] = None) -> None:
        self.captured, self.stmt, self.target, self.isel, self.name = captured, stmt, target, isel, name
        #: target instructions the target's features lack (pitchfork/targets/target_strings.py: no rule selects them)
        self.unavailable = unavailable
        #: the passes this compile runs (pitchfork.passes.pipeline); codegen reads its "codegen" ones
        self.passes = passes if passes is not None else default_passes(target, isel)
        self.module = ir.Module(name=name)
        self.stats = Stats()
        self._sel_cache: dict[Term, Selection] = {}
        #: scalar FPIR nodes' expansions (ScalarEmitter._generic), shared by this compile's scalar emitters
        self._scalar_expansions: dict[Term, Term] = {}
        #: every vector expression selected, with the statement it belongs to (input, lifted FPIR,
        #: lowered and final terms: what tests and `--trace`-style tools inspect)
        self.selections: list[tuple[Optional[H.Node], Selection]] = []
        self._leaf_ids = itertools.count()
        self._heap_live: list[ir.Value] = []
        self._early_free: dict[str, Optional[ir.Value]] = {}
        #: vector let name -> its Halide expression (names are unique in Halide's statement)
        self._vector_src: dict[str, H.Expr] = {}
        #: scalar let name -> its Halide expression
        #: every scalar let's value by name (Halide's lowered names are unique): a broadcast of an
        #: integer one may expose a constant clamp (to_fpir); atomic updates match elements (_lets_inlined)
        self._scalar_src: dict[str, H.Expr] = {}
        self._assert_ids = itertools.count(1)
        self.leaves: dict[str, Leaf] = {}
        self._scoped: list[tuple[str, ir.Instruction]] = []
        #: assertion number (the value written to err[0]) -> "condition: Halide's error call"
        self.assert_messages: dict[int, str] = {}
        #: the serial loops being emitted, outermost first (see MemoryMixin._loop_copy)
        self._loops: list[LoopFrame] = []
        #: `value` leaves: vectors computed in floating point and converted (codegen_expr._float_scalar)
        #: by id() of the Leaf (which self.leaves keeps alive): (function it was emitted in, value,
        #: how to emit it again elsewhere)
        self.values: dict[int, tuple[ir.Function, ir.Value, Callable[[], ir.Value]]] = {}
        #: a strict_float target: no fast-math flags on any float instruction (codegen_float.py); else
        #: only Halide's `strict_*` ops (hl.strict_float(e)) are strict, as in Halide's own module
        self.strict_float = has_feature(captured.target, "strict_float")
        #: a no_asserts target: the statement's assertions and the heap allocations' NULL checks are not
        #: compiled, as Halide's code generator leaves both out for that feature (its lowered statement
        #: keeps the assertions; target_strings.py lists the feature as honoured)
        self.no_asserts = has_feature(captured.target, "no_asserts")
        #: semaphores (`struct halide_semaphore_t *` lets of async producers) by name, and the task
        #: system's parent argument of the task function being emitted (None outside one): parallel.py
        self.handles: dict[str, ir.Value] = {}
        self.task_parent: Optional[ir.Value] = None
        #: task functions being emitted around the current statement (their bodies may run
        #: concurrently: an `atomic` update inside one is emitted as an atomic read-modify-write)
        self.threaded_depth = 0
        #: `atomic` blocks around the current statement that need atomic stores
        self.atomic_depth = 0

    # ---- function and arguments ------------------------------------------------------------
    def build(self) -> ir.Function:
        if self.target not in THREADED_TARGETS:
            refuse_async(self.stmt)  # (no runtime threads to run producer and consumer on)
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
        for o in self.captured.output_buffers:  # a Tuple output: one buffer per element
            arg_types.append(ptr)
            arg_types.extend([ir.IntType(32)] * (3 * o.dimensions))
            layout.append(("buffer", o.name, o.dimensions, o.types[0]))
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), arg_types), name=self.name)
        fast_names(fn)  # llvmlite's names, registered in one call per value (codegen/name_scope.py)
        for attr in NO_BUILTINS:
            # string attributes are not in llvmlite's known set; LLVM reads them as written
            set.add(fn.attributes, f'"no-builtin-{attr}"')
        self.fn = fn
        self.layout = layout
        entry = fn.append_basic_block("entry")
        # hvx128 has no float vectors: its float vector ops are emitted lane by lane (hvx_floats.py)
        # (elsewhere llvmlite's builder, its frequent instructions built in one step: codegen/fast_builder.py)
        self.b = ScalarFloatBuilder(entry) if self.target == "hvx128" else fast_builder(entry)
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
            if kind == "scalar" and t.is_float and t.bits == 16:
                # aot/call.py (and the AOT entry, aot/abi.py) pass a float16's or bfloat16's bits
                # zero-extended in the i32 slot; a bfloat16 value is the float32 it stands for
                bits = self.b.trunc(fn.args[k], ir.IntType(16))
                self.fscalars[nm] = widen(self.b, bits) if t.code == "bfloat" else self.b.bitcast(bits, ir.HalfType())
                k += 1
            elif kind == "scalar" and t.is_float:
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
                # Distinct buffers never alias (Halide's assumption too): CompiledPipeline copies
                # an input that overlaps an output, so the promise holds for every call it makes.
                fn.args[k].add_attribute("noalias")
                info = BufferInfo(nm, fn.args[k], t.elem, code=type_code(t), dimensions=dims,
                                  align=max(1, t.bits // 8), scope=f"arg.{nm}")
                k += 1
                for _ in range(dims):
                    info.dims.append((fn.args[k], fn.args[k + 1], fn.args[k + 2]))
                    k += 3
                self.buffers[nm + ".buffer"] = info
                self.buffers[nm] = info
        for eb in self.captured.embedded:
            self._embed(eb)
        self.b.store(ir.Constant(ir.IntType(32), 0), self.b.bitcast(self.err, ir.PointerType(ir.IntType(32))))
        self.exit = fn.append_basic_block("exit")
        self.stmt_(self.stmt)
        if not self.b.block.is_terminated:
            self.b.branch(self.exit)
        ir.IRBuilder(self.exit).ret_void()
        self._alias_metadata()
        return fn

    def _embed(self, eb: EmbeddedBuffer) -> None:
        """An embedded buffer (a lookup table, weights): its bytes as a private constant global,
        aligned like our allocations, its shape as constants; read like an argument buffer."""
        data = ir.Constant(ir.ArrayType(ir.IntType(8), len(eb.data)), bytearray(eb.data))
        g = ir.GlobalVariable(self.module, data.type, name=f"{self.name}.embedded.{_ident(eb.name)}")
        g.global_constant = True
        g.linkage = "private"
        g.initializer = data
        g.align = ALLOC_ALIGN
        ptr = self.b.bitcast(g, ir.PointerType(ir.IntType(8)))
        info = BufferInfo(eb.name, ptr, eb.type, code=type_code(eb.type), dimensions=len(eb.dims),
                          align=ALLOC_ALIGN, scope=f"embedded.{eb.name}")
        i32 = ir.IntType(32)
        info.dims.extend((ir.Constant(i32, m), ir.Constant(i32, e), ir.Constant(i32, s)) for m, e, s in eb.dims)
        self.buffers[eb.name + ".buffer"] = info
        self.buffers[eb.name] = info

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
            if self._bind_semaphore(name, value):  # (struct halide_semaphore_t *)alloca(16): parallel.py
                return
            raise Unsupported(f"handle-valued let {name} = {_show(value)}", node)
        if t.is_scalar:
            self._scalar_src[name] = value
        if t.is_float:  # scalar or vector: emitted here, where Halide's let is
            self.fscalars[name] = FloatEmitter(self, node).emit(value)
            return
        if t.is_vector:
            self.vlets[name] = self.to_term(value, node)
            self._vector_src[name] = value  # for patterns over the Halide expression (clamped_ramp)
            return
        self.scalars[name] = (self.scalar(value, node), fpir_type(t, node))

    def _s_AssertStmt(self, s: H.AssertStmt) -> None:
        if self.no_asserts:  # (an assertion's condition has no side effect: nothing else to emit)
            return
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
        self._check(ok, code, f"assert_{code}")

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
        saved = (dict(self.scalars), dict(self.vlets), dict(self.buffers), dict(self.fscalars))
        self.b.position_at_end(then_b)
        self.stmt_(s.then_case)
        if not self.b.block.is_terminated:
            self.b.branch(after)
        self.scalars, self.vlets, self.buffers, self.fscalars = (dict(x) for x in saved)
        if else_b is not None:
            self.b.position_at_end(else_b)
            self.stmt_(s.else_case)  # type: ignore[arg-type]
            if not self.b.block.is_terminated:
                self.b.branch(after)
            self.scalars, self.vlets, self.buffers, self.fscalars = (dict(x) for x in saved)
        self.b.position_at_end(after)

    def _s_For(self, s: H.For) -> None:
        if s.device_api and not (s.device_api == "Hexagon" and self.target == "hvx128"):
            # (`.hexagon()` on hvx128: we compile for the Hexagon core itself, so the offloaded
            # loop, `for<Hexagon> (f.s0.__outermost, 0, 1)`, is compiled in place)
            raise Unsupported(f"loop {s.name} offloaded to {s.device_api}", s)
        if s.kind == "parallel":
            if self.target in THREADED_TARGETS:
                self._parallel_for(s, self.scalar(s.min, s), self.scalar(s.extent, s))
                return
            self._serial_note(s)
        lifted = hoist_allocations(s) if self.passes.on("hoist_allocations") else None
        if lifted is not None:
            self.stmt_(lifted)
            return
        lo = self.scalar(s.min, s)
        ext = self.scalar(s.extent, s)
        hi = self.b.add(lo, ext, flags=["nsw"])
        pre = self.b.block
        head = self.fn.append_basic_block(f"for_{s.name}")
        body = self.fn.append_basic_block(f"body_{s.name}")
        done = self.fn.append_basic_block(f"end_{s.name}")
        enter = self.b.cbranch(self.b.icmp_signed("<", lo, hi), head, done)
        if self.passes.on("branch_weights"):  # a loop is entered: the code it guards is as hot as it
            enter.set_weights(VERY_LIKELY)
        self.b.position_at_end(head)
        iv = self.b.phi(ir.IntType(32), s.name)
        iv.add_incoming(lo, pre)
        self.b.branch(body)
        self.b.position_at_end(body)
        saved = (dict(self.scalars), dict(self.vlets), dict(self.buffers), dict(self.fscalars))
        self.scalars[s.name] = (iv, i32)
        self._loops.append(LoopFrame(pre, head, body, len(self.fn.blocks)))
        self.stmt_(s.body)
        self._loops.pop()
        self.scalars, self.vlets, self.buffers, self.fscalars = (dict(x) for x in saved)
        if not self.b.block.is_terminated:
            nxt = self.b.add(iv, ir.Constant(ir.IntType(32), 1), flags=["nsw"])
            iv.add_incoming(nxt, self.b.block)
            # `!=`, as Halide's own loops exit: entered only when lo < hi, the counter steps by 1
            # and meets hi exactly, so SCEV gets the exact trip count hi - lo and loop strength
            # reduction can count one register to zero (`slt` left a separate compare register and
            # an extra `cmp` in average_pool's reduction loop)
            self.b.cbranch(self.b.icmp_unsigned("!=", nxt, hi), head, done)
        self.b.position_at_end(done)

    def _s_Evaluate(self, s: H.Evaluate) -> None:
        v = s.value
        if isinstance(v, H.IntImm):
            return
        if self._semaphore_call(v, s):  # halide_semaphore_init / _release (parallel.py)
            return
        if self._mutex_call(v, s):  # halide_mutex_array_lock / _unlock (atomic.py)
            return
        raise Unsupported(f"evaluated call {_show(v)}", s)

    def _float_elem_ptr(self, buf: BufferInfo, s: H.Store, fty: ir.Type) -> ir.Value:
        """The address of a scalar float store's element, as the float type's pointer."""
        idx = self.scalar(s.index, s)
        base = self.b.bitcast(buf.ptr, ir.PointerType(fty))
        return self.b.gep(base, [self._address_width(idx)])

    def _s_Store(self, s: H.Store) -> None:
        buf = self._buffer(s.buffer, s)
        if self.atomic_depth:
            self._atomic_store(s, buf)
            return
        t = s.value.type
        if t.is_float and t.is_scalar and s.predicate is None:
            # (bfloat16: its bits, floats_bfloat.py)
            val = FloatEmitter(self, s).emit_stored(s.value)
            self.b.store(val, self._float_elem_ptr(buf, s, val.type), align=1)
            return
        if t.is_float:  # a float vector: stored as the integer path stores the same bits
            fval = FloatEmitter(self, s).emit_stored(s.value)
            et = ScalarType(False, t.bits)
            val = self.b.bitcast(fval, vec_type(et, t.lanes))
        else:
            et = fpir_type(t.elem, s)
        if t.is_scalar:
            if s.predicate is not None:
                raise Unsupported(f"predicated scalar store to {s.buffer}", s)
            val = self._data_scalar(s.value, s)
            idx = self.address_index(s.index, s)
            self._store_elem(buf, et, idx, val, s.alignment)
            return
        # A predicated store (TailStrategy::Predicate/PredicateStores, GuardWithIf tails) writes only
        # the lanes whose predicate is true: a masked store, or a scatter that skips masked-off lanes.
        mask = self._mask(s.predicate, t.lanes, s) if s.predicate is not None else None
        if not t.is_float:
            val = self._to_storage(self.vector(s.value, s), et)
        ramp = self._dense(s.index)
        if ramp is not None:
            base = self.address_index(ramp, s)
            p = self._elem_ptr(buf, et, base, vec_type(_storage(et), t.lanes))
            align = self._align(buf, et, s.alignment)
            if mask is None:
                self._mem_access(buf, self.b.store(val, p, align=align))
            elif not self._masked_ok(t.lanes, et):
                self._scatter(buf, et, self._iota(self.scalar(ramp, s), t.lanes), val, t.lanes, mask)
            else:
                fn = self._intrinsic(f"llvm.masked.store.v{t.lanes}i{_storage(et).bits}.p0", ir.VoidType(),
                                     [val.type, p.type, ir.IntType(32), mask.type])
                self._mem_access(buf, self.b.call(fn, [val, p, ir.Constant(ir.IntType(32), align), mask]))
            return
        self._scatter(buf, et, self.vector(s.index, s), val, t.lanes, mask)


    # ---- expressions ---------------------------------------------------------------------------
    def to_term(self, e: H.Expr, node: H.Node, lets: Optional[dict[str, Term]] = None) -> Term:
        """Halide expression -> FPIR term; loads/ramps/splats become leaves recorded in `self.leaves`.
        `lets`: integer lets in scope by name (an integer operand inside a float expression sees
        those of the expression around it, pitchfork.codegen.floats)."""
        # Leaves are registered codegen-wide: a vector let's term may be used in later statements.
        conv = ExprConverter(self, node, self.leaves)
        if lets:
            conv.lets = dict(lets)
        return conv.go(e)

    def scalar(self, e: H.Expr, node: H.Node, nsw: bool = True,
               lets: Optional[dict[str, Term]] = None) -> ir.Value:
        """A scalar expression as an LLVM scalar; `nsw` as in pitchfork.codegen.scalars (off for data)."""
        return self._emit_scalar_term(self.to_term(e, node, lets), nsw)

    def _data_scalar(self, e: H.Expr, node: H.Node) -> ir.Value:
        """A scalar store's value (data: no `nsw`, it wraps like the vector path). On arm64 a value
        with a fixed-point op (rounding_mul_shift_right, saturating_add, ...) goes through instruction
        selection at one lane, as Halide's backend lowers scalar ones to Neon (fully_connected's
        requantization of each output: sqrdmulh/srshl/sqadd instead of their generic expansions);
        elsewhere, and for plain arithmetic, the scalar emitter's one-to-one code."""
        t = self.to_term(e, node)
        if self.target != "arm64" or all(ScalarEmitter.is_direct(n) for n in t.walk()):
            return self._emit_scalar_term(t, nsw=False)
        final = self._select(t, node)
        env = {}
        for v in final.variables():
            val, st = self.scalars[v.name]
            env[v.name] = self.b.insert_element(undef(vec_type(st, 1)), val, ir_constants.scalar(32, 0))
        out = self.term_emitter(1, env).emit(final)
        return self.b.extract_element(out, ir_constants.scalar(32, 0))

    def address_index(self, e: H.Expr, node: H.Node) -> ir.Value:
        """A buffer index as address arithmetic of the target's pointer width (see
        ScalarEmitter.emit_index)."""
        t = self.to_term(e, node)
        return ScalarEmitter(self.b, ScalarValues(self.scalars), self.target,
                             expansions=self._scalar_expansions).emit_index(t, self.pointer_bits)

    def _emit_scalar_term(self, t: Term, nsw: bool = True) -> ir.Value:
        return ScalarEmitter(self.b, ScalarValues(self.scalars), self.target, nsw,
                             self._scalar_expansions).emit(t)

    def vector(self, e: H.Expr, node: H.Node, lets: Optional[dict[str, Term]] = None) -> ir.Value:
        return self._emit_term(self.to_term(e, node, lets), e.type.lanes, node)

    def _emit_term(self, term: Term, lanes: int, node: H.Node) -> ir.Value:
        """`term` selected and emitted at `lanes` lanes (its leaves emitted at theirs)."""
        leaves = self.leaves
        final = self._select(term, node)
        valigned: set[Term] = set()
        if self.passes.on("hvx_aligned_loads"):
            valigned = {v for v in final.variables()
                        if v.name in leaves and self._hvx_valign_leaf(leaves[v.name], node)}
        if self.passes.on("hvx_accumulate"):
            # an accumulation overwrites its first summand: start it from a valigned tap
            final = start_from_fresh(final, lambda t: int(t.is_var and t not in valigned))

        def value(name: str) -> ir.Value:
            if name in leaves:
                return self._emit_leaf(leaves[name], node)
            # a scalar used at vector width (cannot happen after conversion, kept for safety)
            val, st = self.scalars[name]
            return self._splat(val, st, lanes)

        env: dict[str, ir.Value]
        if self.passes.on("lazy_leaves"):
            # Each leaf (a load, mostly) is emitted where the selected code first uses it, as
            # Halide's own code generator does; emitted all up front, LLVM's x86 scheduler kept them in
            # that order and sobel3x3's 4-row loop held 9 rows' vectors live at once (more spills).
            env = _LazyEnv(value)
        elif valigned and sum(
                leaves[v.name].lanes * leaves[v.name].type.bits // 1024 for v in valigned) > LAZY_VALIGN_REGS:
            # Taps `valign`ed from aligned blocks that alone need more than half of the 32 HVX
            # registers are emitted at their first use: all up front, gaussian7x7's column pass held
            # its 24 valigned registers per row live at once and spilled (loop 260 -> 238 instructions,
            # 116 -> 117 packets per iteration). The other leaves keep their place before the selected
            # code (emitted at first use, its row pass's plain row loads spilled more: 132 -> 144).
            # Below the threshold the order is LLVM's scheduling noise either way (sobel3x3, 10
            # valigned registers: 74 -> 78 packets per iteration lazily; gaussian5x5, 8: 42 -> 40).
            env = _LazyEnv(value)
            for v in final.variables():
                if v not in valigned:
                    env.force(v.name)
        else:
            env = {v.name: value(v.name) for v in final.variables()}
        return self.term_emitter(lanes, env, self._streams(final), hvx_pairs=self.passes.on("hvx_pair_forms"),
                                 to_one_lane=self._to_one_lane()).emit(final)

    def term_emitter(self, lanes: int, env: Mapping[str, ir.Value],
                     streams: Optional[Mapping[str, tuple[Hashable, int]]] = None, hvx_pairs: bool = False,
                     to_one_lane: Optional[Callable[..., Optional[ir.Value]]] = None) -> ExprEmitter:
        """The emitter of every term this codegen emits (selected or expanded), so the pass switches
        the target emitters read (`x86_lane_order`) reach each one. (The codegen's other ExprEmitters
        only concatenate registers, `ExprEmitter.concat`, which reads no switch.)"""
        return ExprEmitter(self.b, lanes, env, self.target, streams, hvx_pairs=hvx_pairs,  # type: ignore[arg-type]
                           to_one_lane=to_one_lane, lane_order=self.passes.on("x86_lane_order"))

    def _to_one_lane(self) -> Optional[Callable[..., Optional[ir.Value]]]:
        """The selected lowering of reductions to one lane: on hvx128 under isel=pitchfork, the
        operand's pieces reduced without restoring their lane order (pitchfork/codegen/hvx_reduce.py);
        LLVM alone keeps LLVM's own lowering of the whole value, as Halide's IR has it."""
        if self.passes.on("hvx_reduce"):
            from pitchfork.codegen.hvx_reduce import reduce_to_lane

            return reduce_to_lane
        return None

    def _streams(self, term: Term) -> dict[str, tuple[Hashable, int]]:
        """The stream facts of `term`'s load leaves (all emitted together, at one program point)."""
        return {v.name: leaf.stream for v in term.variables()
                if (leaf := self.leaves.get(v.name)) is not None and leaf.stream is not None}

    def _select(self, term: Term, node: Optional[H.Node] = None) -> Term:
        hit = self._sel_cache.get(term)
        if hit is not None:
            self.selections.append((node, hit))
            return hit.final
        from pitchfork.selection.lower import select_instructions

        sel = select_instructions(term, self.target, self.isel, self._streams(term), self.unavailable)
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
        one = self.b.insert_element(undef(vec_type(st, 1)), val, ir_constants.scalar(32, 0))
        return self.b.shuffle_vector(one, undef(one.type),
                                     mask([0] * lanes)) \
            if lanes > 1 else one

    def _vector_source(self, e: H.Expr) -> H.Expr:
        """The expression a vector let variable is bound to (through chains of lets); `e` otherwise."""
        while isinstance(e, H.Variable) and e.type.is_vector and e.name in self._vector_src:
            e = self._vector_src[e.name]
        return e

    def _emit_leaf(self, leaf: Leaf, node: H.Node) -> ir.Value:
        e = leaf.node
        if leaf.kind == "splat":
            assert isinstance(e, H.Broadcast)
            return self._splat(self.scalar(e.value, node, nsw=False), leaf.type, leaf.lanes)
        if leaf.kind == "ramp":
            assert isinstance(e, H.Ramp)
            base = self._splat(self.scalar(e.base, node, nsw=False), leaf.type, leaf.lanes)
            stride = self._splat(self.scalar(e.stride, node, nsw=False), leaf.type, leaf.lanes)
            iota = ir_constants.vector(leaf.type.bits, range(leaf.lanes))  # (vec_type's integer lanes, shared)
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
                base = self.address_index(ramp, node)
                vt = vec_type(_storage(st), leaf.lanes)
                p = self._elem_ptr(buf, st, base, vt)
                align = self._align(buf, st, e.alignment)
                window = self._hvx_misaligned_load(buf, st, base, leaf.lanes, e.alignment) \
                    if mask is None and self.passes.on("hvx_aligned_loads") else None
                if window is not None:
                    v = window
                elif mask is None:
                    v = self._mem_access(buf, self.b.load(p, align=align))
                elif not self._masked_ok(leaf.lanes, st):
                    v = self._gather(buf, st, self._iota(self.scalar(ramp, node), leaf.lanes), leaf.lanes, mask)
                else:
                    fn = self._intrinsic(f"llvm.masked.load.v{leaf.lanes}i{_storage(st).bits}.p0", vt,
                                         [p.type, ir.IntType(32), mask.type, vt])
                    v = self._mem_access(buf, self.b.call(fn, [p, ir.Constant(ir.IntType(32), align), mask,
                                                               ir.Constant(vt, None)]))
            else:
                # hvx128: aligned windows + valign (_clamped_ramp_load), or vlut32 for a byte table of
                # at most 256 entries (_hvx_lut); elsewhere one dense load and a window of
                # [splat(first), it, splat(last)] (_clamped_gather); a lane-monotone byte index:
                # vlut32 / tbl over its span (codegen_span.py); else a lane loop.
                parts = clamped_ramp(e.index, self._vector_source) if mask is None else None
                clamped = self._clamped_ramp_load(buf, st, parts, leaf.lanes, node) if parts is not None else None
                if clamped is None and parts is None and mask is None:
                    clamped = self._hvx_lut(buf, st, e.index, leaf.lanes, node)  # a small byte table
                    if clamped is None:  # a lane-monotone index (ramp / d, strided)
                        clamped = self._hvx_span_gather(buf, st, e.index, leaf.lanes, node)
                    if clamped is None:
                        clamped = self._arm_span_gather(buf, st, e.index, leaf.lanes, node)
                if clamped is not None:
                    v = clamped
                else:
                    index = self.vector(e.index, node)
                    v = (self._clamped_gather(buf, st, parts, index, leaf.lanes, node) if parts is not None and buf.dims
                         else self._gather(buf, st, index, leaf.lanes, mask))
            if st.bits == 1:
                v = self.b.icmp_unsigned("!=", v, ir.Constant(v.type, [0] * leaf.lanes))
            return v
        if leaf.kind == "shuffle":
            assert isinstance(e, H.Shuffle)
            rep = self._repeat(e, leaf, node)
            if rep is not None:
                return rep
            parts: list[ir.Value] = []
            starts: list[int] = []
            at = 0
            for x in e.vectors:
                win = self._hvx_window(x, node) if isinstance(x, H.Load) else None
                part = win if win is not None else self.vector(x, node) if x.type.is_vector else \
                    self._splat(self.scalar(x, node, nsw=False), leaf.type, 1)
                parts.append(part)
                starts.append(at)
                at += part.type.count
            # (isel=pitchfork only: LLVM alone gets the generic shuffle, as Halide's IR writes it)
            if self.passes.on("hvx_interleave") and _whole_register_interleave(e, parts):
                return self._hvx_interleave(parts)
            # Lane i of operand k is lane starts[k] + i of the concatenation (a window holds more lanes).
            where = [(k, i) for k, x in enumerate(e.vectors) for i in range(x.type.lanes)]
            indices = [starts[where[j][0]] + where[j][1] for j in e.indices]
            em = ExprEmitter(self.b, leaf.lanes, {}, self.target)
            whole = em.concat(parts, at) if len(parts) > 1 else parts[0]
            # (`mask` is this function's predicate here: the shared constant through its module)
            return self.b.shuffle_vector(whole, undef(whole.type), ir_constants.mask(indices))
        if leaf.kind == "bitcount":
            assert isinstance(e, H.Call)
            arg = self.vector(e.args[0], node) if e.args[0].type.is_vector else \
                self._splat(self.scalar(e.args[0], node, nsw=False), leaf.type, 1)
            name = BIT_COUNTS[e.name]
            args = [arg] if name == "ctpop" else [arg, ir.Constant(ir.IntType(1), 0)]
            fn = self._intrinsic(f"llvm.{name}.v{arg.type.count}i{leaf.type.bits}", arg.type, [a.type for a in args])
            return self.b.call(fn, args)
        if leaf.kind == "reduce":
            assert isinstance(e, H.VectorReduce)
            return self._reduce(e, leaf, node)
        if leaf.kind == "value":  # emitted when its expression was converted (codegen_expr._float_scalar)
            fn, v, again = self.values[id(leaf)]
            return v if fn is self.fn else again()
        raise Unsupported(f"vector leaf {leaf.kind}", node)

    def _hvx_interleave(self, regs: list[ir.Value]) -> ir.Value:
        """interleave_vectors of 2 or 4 whole HVX registers (lane f*i + k = regs[k] lane i) as vshuff
        pairs: `vshuff(b, a, -size)` interleaves a (even lanes) with b; four operands interleave the
        two pairs again at twice the element size (4 vshuff for 4 registers). LLVM's own lowering of
        the 4-way shuffle is a vdeal/vshuff/vdelta/vrdelta/vmux chain per output register."""
        elem = regs[0].type.element
        reg = ir.VectorType(ir.IntType(32), 32)
        pair = ir.VectorType(ir.IntType(32), 64)
        i32t = ir.IntType(32)
        fn = self._intrinsic("llvm.hexagon.V6.vshuffvdd.128B", pair, [reg, reg, i32t])

        def two(a: ir.Value, b: ir.Value, size: int) -> list[ir.Value]:
            w = self.b.call(fn, [self.b.bitcast(b, reg), self.b.bitcast(a, reg), ir.Constant(i32t, -size)])
            return [self.b.shuffle_vector(w, undef(pair),
                                          mask(range(h * 32, h * 32 + 32)))
                    for h in (0, 1)]

        size = elem.width // 8
        if len(regs) == 2:
            out = two(regs[0], regs[1], size)
        else:
            ab, cd = two(regs[0], regs[1], size), two(regs[2], regs[3], size)
            out = two(ab[0], cd[0], 2 * size) + two(ab[1], cd[1], 2 * size)
        em = ExprEmitter(self.b, 32 * len(out), {}, self.target)
        whole = em.concat(out, 32 * len(out))
        return self.b.bitcast(whole, ir.VectorType(elem, regs[0].type.count * len(regs)))

    def _repeat(self, e: H.Shuffle, leaf: Leaf, node: H.Node) -> Optional[ir.Value]:
        """A short vector repeated to fill the shuffle (`[0..w-1]` over and over, e.g. the four bytes
        of a dot product's broadcast operand), as one splat of a w-lane-wide integer: ARM `ld1r
        {v.4s}` / `dup`, an HVX `vsplat` of a word, x86 `vpbroadcastd`, instead of a lane shuffle."""
        if len(e.vectors) != 1 or not e.vectors[0].type.is_vector:
            return None
        w = e.vectors[0].type.lanes
        bits = _storage(leaf.type).bits * w
        if bits not in (16, 32, 64) or len(e.indices) % w or list(e.indices) != list(range(w)) * (len(e.indices) // w):
            return None
        v = self.vector(e.vectors[0], node)
        if v.type.element.width * w != bits:
            return None
        word = self.b.bitcast(v, ir.IntType(bits))
        reps = len(e.indices) // w
        one = self.b.insert_element(undef(ir.VectorType(ir.IntType(bits), 1)), word,
                                    ir.Constant(ir.IntType(32), 0))
        spl = self.b.shuffle_vector(one, undef(one.type),
                                    mask([0] * reps))
        return self.b.bitcast(spl, ir.VectorType(v.type.element, len(e.indices)))

    def _reduce(self, e: H.VectorReduce, leaf: Leaf, node: H.Node) -> ir.Value:
        """`vector_reduce_<op>`: output lane i combines input lanes [i*f, (i+1)*f), f = in/out lanes.
        To several lanes: the f strided slices combined as one lane-wise expression (codegen_reduce),
        selected whole. To one lane: the value selected on its own, then a halving tree of FPIR ops
        (exact Halide semantics: a wrapping add, signed/unsigned min by type, ...)."""
        if leaf.lanes > 1:  # not reached from to_term (which inlines these), kept for direct callers
            return self.vector(split_reduce(e), node)
        n = e.value.type.lanes
        if e.op in REDUCE_COMBINE and n > 1:
            # To one lane through FPIR like any other reduction: lifted and lowered with its operand
            # (ARM uaddlv/udot against ones, x86 psadbw, ...), else the generic lowering
            # (ExprEmitter.reduce_lanes: LLVM's llvm.vector.reduce.* where it has one).
            return self._emit_term(make(reduce_op(e.op, n), self.to_term(e.value, node)), 1, node)
        v = self.vector(e.value, node)
        lanes = e.value.type.lanes
        from pitchfork.selection.lower import expand_fpir

        while lanes > 1:
            # Halve while the width is even; an odd width combines all its lanes in one step.
            parts = 2 if lanes % 2 == 0 else lanes
            m = lanes // parts
            undef_v = undef(v.type)
            env: dict[str, ir.Value] = {}
            acc: Optional[Term] = None
            for j in range(parts):
                name = f"r{j}"
                idx = mask([j * m + i for i in range(m)])
                env[name] = self.b.shuffle_vector(v, undef_v, idx)
                t = var(name, leaf.type)
                acc = t if acc is None else make(REDUCE_OPS[e.op], acc, t)
            assert acc is not None
            v = self.term_emitter(m, env).emit(expand_fpir(acc))
            lanes = m
        return v


def _whole_register_interleave(e: H.Shuffle, parts: list[ir.Value]) -> bool:
    """`e` interleaves 2 or 4 operands that are each one whole HVX register (emitted as `parts`)."""
    n = parts[0].type.count
    return e.kind == "interleave" and len(parts) in (2, 4) \
        and all(p.type.count == x.type.lanes == n and n * p.type.element.width == 1024 and p.type.element.width >= 8
                for p, x in zip(parts, e.vectors)) \
        and list(e.indices) == [k * n + i for i in range(n) for k in range(len(parts))]


#: hvx128: valigned taps of one expression emitted at their first use above this many registers
LAZY_VALIGN_REGS = 16


class _LazyEnv(dict):  # type: ignore[type-arg]
    """An emitter environment that computes a variable's value on its first lookup (at the builder's
    position then) and keeps it."""

    def __init__(self, make: Callable[[str], ir.Value]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, name: str) -> ir.Value:
        v = self[name] = self._make(name)
        return v

    def force(self, name: str) -> None:
        """Emit `name`'s value now (at the builder's position), if it is not emitted yet."""
        self.__getitem__(name)
