"""`.atomic()` updates as Halide's codegen emits them (CodeGen_LLVM's atomic Store and Allocate paths).

Halide marks an update that several threads may apply to one element as `atomic (producer) {body}`:
* run by one thread (no parallel task around it, or hvx128, where parallel loops are serial) the block
  guards nothing and is its body;
* inside a task each store of the body is what Halide's codegen_atomic_rmw makes of it: an integer
  `buf[i] = buf[i] + x` (x not reading buf; Halide's test: `value - element` simplifies to something
  free of the element) one `atomicrmw add`, any other update, float sums included (Halide's CPU
  codegen has integer atomic adds only), a compare-and-swap loop from a `load atomic` that recomputes
  the value from the element it read (on the element's bits for a float); a vector store one such
  operation per lane, in lane order. One known difference: Halide's intrinsic pass runs after the
  statement PITCHFORK captures, so `u32 + u32(u8)` there is `widen_right_add(...)`, which its RMW
  test does not see through (a CAS loop); here it is still the add (one `atomicrmw add`, same value);
* where the update reads the element in a way no atomic operation covers (through a let, e.g.
  `select(g[k] > v, g[k], v)`), Halide locks the element instead: `atomic (producer, mutex)` around
  `halide_mutex_array_lock/unlock(mutex, i)` calls, the mutex array a custom allocation
  (`custom_new {halide_mutex_array_create(n)}`, `custom_delete {halide_mutex_array_destroy(m);}`).
  Where threads run the update the array and the locks are Halide's runtime's (pitchfork/backend/
  halide_runtime.py links it); where one thread does, no lock is taken and nothing is created.

Invariant: a store inside an atomic block run by a task is never a plain load-compute-store; a
predicated store there, or a vector store whose lanes are not computed independently, is refused (a
fallback naming it), never raced.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from llvmlite import ir

from fpir.types import ScalarType
from pitchfork.codegen.base import BufferInfo, Unsupported, _ident, _storage, fpir_type
from pitchfork.codegen.floats import FloatEmitter
from pitchfork.codegen.parallel import I32, PTR, THREADED_TARGETS, uncast
from pitchfork.frontend import ir as H
from pitchfork.frontend.ir_walk import map_children

#: an atomic() update Halide cannot make one atomic instruction locks its element in a mutex array:
#: `allocate m[(void *) * 1] custom_new {halide_mutex_array_create(n)} custom_delete
#: {halide_mutex_array_destroy(m);}` around the loops, `halide_mutex_array_lock/unlock(m, i)` around
#: the update (runtime/synchronization_common.h)
MUTEX_CREATE, MUTEX_DESTROY = "halide_mutex_array_create", "halide_mutex_array_destroy"
MUTEX_CALLS = ("halide_mutex_array_lock", "halide_mutex_array_unlock")


class AtomicMixin:
    """Atomic blocks, their stores and mutex arrays. Needs LoopNestCodegen's state (`b`, `fn`,
    `handles`, `scalars`, `fscalars`, `threaded_depth`, `atomic_depth`, `captured`, `_scalar_src`,
    `_leaf_ids`, `target`) and ParallelMixin's `_runtime_function` / `_check_runtime_result`."""

    def _s_Atomic(self, s: H.Atomic) -> None:
        """Halide's `atomic (producer)` (an `.atomic()` update). Run by one thread (no task around it,
        or hvx128, where parallel loops are serial) it guards nothing and is its body. Inside a task,
        each store of the body is an atomic operation per element as Halide emits it
        (_atomic_store); a predicated store there is refused.
        With a mutex (`atomic (f, f.mutex)`: Halide could not make the update one atomic operation)
        the body's own lock calls guard its plain stores (_mutex_call)."""
        if self.threaded_depth == 0 or s.mutex_name:
            self.stmt_(s.body)
            return
        self.atomic_depth += 1
        try:
            self.stmt_(s.body)
        finally:
            self.atomic_depth -= 1

    def _atomic_store(self, s: H.Store, buf: BufferInfo) -> None:
        """A store inside an atomic block run by a task, as Halide's CodeGen_LLVM::codegen_atomic_rmw
        emits it: an integer `buf[i] = buf[i] + x` (x not reading `buf`) is one `atomicrmw add`; any
        other update (min, max, a product, every float update, a float sum included: Halide's
        supports_atomic_add is integers only on CPUs) a compare-and-swap loop from a `load atomic`
        (on the element's bits for a float). A vector store is scalarised, one RMW or CAS loop per
        lane in lane order, as Halide's. Refused: a predicated store (Halide refuses it too), float16
        / bfloat16 / bool elements. (monotonic, as Halide's: the par_for's join orders the results.)"""
        v, t = s.value, s.value.type
        if s.predicate is not None:
            raise Unsupported(f"predicated atomic store to {s.buffer}", s)
        if t.is_bool or (t.is_float and (t.bits == 16 or t.code == "bfloat")):
            raise Unsupported(f"atomic {t.elem} update of {s.buffer}", s)
        index = self._lets_inlined(s.index)
        same = lambda e: (isinstance(e, H.Load) and e.buffer == s.buffer  # noqa: E731
                          and self._lets_inlined(e.index) == index)
        delta = None
        if isinstance(v, H.BinOp) and v.op == "+" and not t.is_float:
            for a, b in ((v.a, v.b), (v.b, v.a)):
                if same(a) and all(ld.buffer != s.buffer for ld in H.loads(b)):
                    delta = b
                    break
        et = ScalarType(False, t.bits) if t.is_float else fpir_type(t.elem, s)
        pointee = ir.IntType(_storage(et).bits)
        if t.is_scalar:
            p = self._elem_ptr(buf, et, self.address_index(s.index, s), pointee)
            if delta is not None:
                self._mem_access(buf, self.b.atomic_rmw("add", p, self._data_scalar(delta, s), "monotonic"))
            else:
                self._atomic_cas(s, buf, p, same, None)
            return
        if any(isinstance(n, (H.Shuffle, H.VectorReduce)) for n in H.walk(v)):
            raise Unsupported(f"vector atomic update of {s.buffer} whose lanes are not independent", s)
        idx = self.vector(s.index, s)
        add = self.vector(delta, s) if delta is not None else None
        for lane in range(t.lanes):
            k = ir.Constant(I32, lane)
            p = self._elem_ptr(buf, et, self.b.extract_element(idx, k), pointee)
            if add is not None:
                self._mem_access(buf, self.b.atomic_rmw("add", p, self.b.extract_element(add, k), "monotonic"))
            else:
                self._atomic_cas(s, buf, p, same, lane)

    def _atomic_cas(self, s: H.Store, buf: BufferInfo, p: ir.Value, same: Callable[[H.Expr], bool],
                    lane: Optional[int]) -> None:
        """`buf[i] = f(buf[i], ...)` as a compare-and-swap loop on the element at `p` (its bits):
        every read of the stored element in `f` is the value the CAS compares (Halide's loop re-reads
        the element with a plain load there: the same value unless another thread wrote it, when
        the CAS fails anyway), and the loop repeats until no other thread wrote the element in
        between. `lane`: the lane of a vector store this loop updates (its value computed with the
        element's old value in every lane, that lane taken)."""
        t = s.value.type
        st = t.elem
        ity = ir.IntType(t.bits)
        fty = (ir.FloatType() if t.bits == 32 else ir.DoubleType()) if t.is_float else ity
        first = self._mem_access(buf, self.b.load_atomic(self.b.bitcast(p, ir.PointerType(fty)), "monotonic",
                                                         align=t.bits // 8))
        if t.is_float:
            first = self.b.bitcast(first, ity)
        pre = self.b.block
        loop = self.fn.append_basic_block(f"atomic_cas_{s.buffer}")
        done = self.fn.append_basic_block(f"atomic_done_{s.buffer}")
        self.b.branch(loop)
        self.b.position_at_end(loop)
        old = self.b.phi(ity, "old")
        old.add_incoming(first, pre)
        name = f"atomic.old{next(self._leaf_ids)}"
        var: H.Expr = H.Variable(name, st)
        if lane is not None:
            var = H.Broadcast(var, t.lanes, t)

        def swap(x: Any) -> Any:
            return var if same(x) else map_children(x, H.Expr, swap)

        value = swap(s.value)
        if t.is_float:
            self.fscalars[name] = self.b.bitcast(old, fty)
            new = FloatEmitter(self, s).emit(value)
        else:
            self.scalars[name] = (old, fpir_type(st, s))
            new = self._data_scalar(value, s) if lane is None else self.vector(value, s)
        if lane is not None:
            new = self.b.extract_element(new, ir.Constant(I32, lane))
        new = self.b.bitcast(new, ity) if t.is_float else new
        pair = self._mem_access(buf, self.b.cmpxchg(p, old, new, "monotonic", "monotonic"))
        old.add_incoming(self.b.extract_value(pair, 0), self.b.block)
        self.b.cbranch(self.b.extract_value(pair, 1), done, loop)
        self.b.position_at_end(done)

    def _lets_inlined(self, e: H.Expr) -> H.Expr:
        """`e` with each scalar let that reads only input buffers replaced by its value: Halide computes
        an atomic update's key twice, for the index it stores to and the one it reads (`let t4.s =
        int32(t0*8)`, `let t5.s = int32(a[i]*8)`), and inputs are never written by the pipeline, so
        equal expressions of them are equal values (a let reading any other buffer stays a name)."""
        inputs = {a.name for a in self.captured.arguments if a.is_buffer}
        memo: dict[str, H.Expr] = {}  # each let inlined once (lets may chain)

        def go(x: Any) -> Any:
            if isinstance(x, H.Variable):
                if x.name not in memo:
                    v = self._scalar_src.get(x.name)
                    v = go(v) if v is not None else x
                    memo[x.name] = v if v is not x and all(ld.buffer in inputs for ld in H.loads(v)) else x
                return memo[x.name]
            return map_children(x, H.Expr, go)

        return go(e)

    # ---- mutex arrays (updates under a lock) ---------------------------------------------------
    def _s_mutex_array(self, s: H.Allocate) -> None:
        """A custom allocation: only Halide's mutex array is one. On a target with threads, where
        the scope runs a parallel loop or task, it is created by Halide's runtime, bound as a handle
        (tasks take it in their closure) and destroyed at the end of the scope (on a failure path
        out of the scope it is not destroyed: a leak of the array, never a wrong result). Elsewhere
        every update under it runs on one thread, so no lock is taken and nothing is created."""
        cg = self  # type: ignore[assignment]
        call = uncast(s.new_expr) if s.new_expr is not None else None
        if not (isinstance(call, H.Call) and call.name == MUTEX_CREATE and len(call.args) == 1
                and s.free_function in ("", MUTEX_DESTROY)):
            raise Unsupported(f"allocation {s.name} with a custom allocator ({s.new_expr}, {s.free_function})", s)
        threaded = cg.target in THREADED_TARGETS and any(
            isinstance(n, (H.Fork, H.Acquire)) or (isinstance(n, H.For) and n.kind == "parallel")
            for n in H.walk(s.body))
        if not threaded:
            cg.stmt_(s.body)
            return
        size = cg.scalar(call.args[0], s)
        create = self._runtime_function(MUTEX_CREATE, ir.FunctionType(PTR, [ir.IntType(64)]))
        arr = cg.b.call(create, [cg.b.sext(size, ir.IntType(64)) if size.type.width < 64 else size])
        self._check_runtime_result(cg.b.zext(cg.b.icmp_unsigned("==", arr, ir.Constant(PTR, None)), I32),
                                   f"{MUTEX_CREATE} for {s.name}", f"mutex_{_ident(s.name)}")
        saved = dict(cg.handles)
        cg.handles[s.name] = arr
        cg.stmt_(s.body)
        cg.handles = saved
        if not cg.b.block.is_terminated:
            destroy = self._runtime_function(MUTEX_DESTROY, ir.FunctionType(ir.VoidType(), [PTR, PTR]))
            cg.b.call(destroy, [ir.Constant(PTR, None), arr])

    def _mutex_call(self, v: H.Expr, node: H.Stmt) -> bool:
        """`halide_mutex_array_lock(m, i)` / `_unlock(m, i)`: a runtime call where the array exists,
        nothing where `_s_mutex_array` left it out (one thread runs every update)."""
        cg = self  # type: ignore[assignment]
        if not (isinstance(v, H.Call) and v.name in MUTEX_CALLS and len(v.args) == 2):
            return False
        m = uncast(v.args[0])
        if not isinstance(m, H.Variable):
            raise Unsupported(f"mutex array {v.args[0]}", node)
        arr = cg.handles.get(m.name)
        if arr is not None:
            fn = self._runtime_function(v.name, ir.FunctionType(I32, [PTR, I32]))
            cg.b.call(fn, [arr, cg.scalar(v.args[1], node)])
        return True

