"""Parallel loops and async producers on Halide's runtime, as Halide's own code runs them.

Halide (LowerParallelTasks.cpp, CodeGen_LLVM) outlines the body of a parallel loop into a task
function `int task(void *user_context, int idx, uint8_t *closure)`, stores every value the body reads
into a closure struct, and calls its runtime's thread pool:

    int halide_do_par_for(void *user_context, halide_task_t task, int min, int size, uint8_t *closure)

which runs task(user_context, i, closure) for i in [min, min + size) on up to HL_NUM_THREADS threads
(default: the number of cores) and returns the first non-zero result. We emit the same: the task is
an internal function of the kernel's module, the closure an entry-block alloca of the caller, and
`halide_do_par_for` an external symbol that the Halide runtime defines (`halide.compile_standalone_
runtime` for the target: pitchfork/backend/halide_runtime.py loads it for the x86 JIT and links it
into the qemu-aarch64 harness; the AOT static library carries it). No thread pool of our own.

Async producers (`.async_()`): Halide's statement holds semaphores (`let s = (struct
halide_semaphore_t *)alloca(16)`, `halide_semaphore_init/release` calls), `fork {producer}
{consumer}` and `acquire (s, n) {body}`. As Halide's code does, each `fork` (its branches flattened)
and each `acquire` (its nested acquires peeled into the task's semaphore list) is one call of

    int halide_do_parallel_tasks(void *user_context, int num_tasks, struct halide_parallel_task_t *tasks,
                                 void *task_parent)

over loop-task functions `int task(void *uc, int min, int extent, uint8_t *closure, void *task_parent)`,
each task with its semaphores to acquire before it runs and its `min_threads` (`min_threads`, ported
from Halide's MinThreads visitor, so the runtime does not deadlock committing its threads to tasks
that wait). Inside such a task, a parallel loop is a loop task of `halide_do_parallel_tasks` with the
task's parent (Halide uses `halide_do_par_for` only outside the task system).

What the closure holds: every value in scope where the task starts (scalars and float scalars by
name, each buffer's host pointer and dimension fields, semaphores, the error slot). The task
reloads them and emits its body with the same codegen; LLVM drops the loads the body does not use.
Vector lets are symbolic (FPIR terms over leaves, pitchfork/codegen/to_fpir.py), so they carry over
without values. Scoped-alias metadata is module-wide, so the task's accesses keep their buffer scopes.

Errors: a failed check inside a task writes its code to a task-local slot, frees the task's live
heap buffers, and returns the code; the task copies a non-zero code to the kernel's error slot
(tasks that fail at once may race to write it: one of their codes wins, any is a true failure).
The caller leaves through its own failure path when the runtime call returns non-zero, keeping a
task's code, or its own (a runtime failure) if no task wrote one.

Where there are no threads (hvx128: Hexagon's runtime threads do not run under qemu) a parallel loop
is emitted serially, with a `PitchforkSerialNote` warning that names it: never silently; async
producers are refused there (`refuse_async`: a fallback to Halide naming them), since run serially a
producer can block for good on a folding semaphore only its consumer releases. `prefetch`
directives never reach the statement we compile.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Optional

from llvmlite import ir

from pitchfork.codegen.base import BufferInfo, Unsupported, _ident
from pitchfork.codegen.name_scope import fast_names
from pitchfork.frontend import ir as H

I8, I32 = ir.IntType(8), ir.IntType(32)
PTR = ir.PointerType(I8)
#: halide_task_t: int (*)(void *user_context, int idx, uint8_t *closure)
TASK_TYPE = ir.FunctionType(I32, [PTR, I32, PTR])
#: halide_loop_task_t: int (*)(void *user_context, int min, int extent, uint8_t *closure, void *task_parent)
LOOP_TASK_TYPE = ir.FunctionType(I32, [PTR, I32, I32, PTR, PTR])
#: struct halide_semaphore_acquire_t {halide_semaphore_t *semaphore; int count;}
SEMAPHORE_ACQUIRE = ir.LiteralStructType([PTR, I32])
#: struct halide_parallel_task_t {fn, closure, name, semaphores, num_semaphores, min, extent,
#: min_threads, serial}
PARALLEL_TASK = ir.LiteralStructType([LOOP_TASK_TYPE.as_pointer(), PTR, PTR, SEMAPHORE_ACQUIRE.as_pointer(),
                                      I32, I32, I32, I32, ir.IntType(8)])
#: targets whose runtime has threads we run (x86 in process, arm64 under qemu-aarch64)
THREADED_TARGETS = frozenset({"x86-avx2", "arm64"})
#: the semaphore calls of Halide's statement, compiled as calls into its runtime
SEMAPHORE_CALLS = ("halide_semaphore_init", "halide_semaphore_release")


def refuse_async(stmt: H.Stmt) -> None:
    """On a target without runtime threads: raise Unsupported naming an async() producer (Halide's
    `fork` / `acquire`), a fallback to Halide's compiler."""
    for n in H.walk(stmt):
        if isinstance(n, (H.Fork, H.Acquire)):
            what = "fork" if isinstance(n, H.Fork) else "acquire"
            raise Unsupported(f"async() producer ({what} on Halide's task semaphores) needs runtime threads, "
                              "which this target does not have here", n)


def uncast(e: H.Expr) -> H.Expr:
    """`e` under its casts and reinterprets (a runtime handle is printed as `(void *)m`, `(struct
    halide_semaphore_t *)s`, ...)."""
    while isinstance(e, (H.Cast, H.Reinterpret)):
        e = e.value
    return e


def _peel_acquires(s: H.Stmt) -> tuple[H.Stmt, list[H.Acquire]]:
    got = []
    while isinstance(s, H.Acquire):
        got.append(s)
        s = s.body
    return s, got


def min_threads(s: H.Stmt) -> int:
    """The execution contexts a task running `s` needs to finish (Halide's MinThreads visitor in
    CodeGen_LLVM / LowerParallelTasks): a fork needs one more than its branches' sum when any of them
    blocks, an acquire one more than its body, a parallel loop one more than a blocking body."""
    if isinstance(s, H.Fork):
        total = direct = 0
        node: H.Stmt = s
        while isinstance(node, H.Fork):
            for branch in (node.first,) + ((node.rest,) if not isinstance(node.rest, H.Fork) else ()):
                rest, acq = _peel_acquires(branch)
                direct += len(acq)
                total += min_threads(rest)
            node = node.rest
        return 0 if direct == 0 and total == 0 else total + 1
    if isinstance(s, H.For):
        if s.kind == "parallel":
            r = min_threads(s.body)
            return r + 1 if r > 0 else 0
        return min_threads(s.body)
    if isinstance(s, H.Acquire):
        rest, _ = _peel_acquires(s)
        return min_threads(rest) + 1
    return max((min_threads(c) for c in H.children(s) if isinstance(c, H.Stmt)), default=0)


@dataclasses.dataclass(frozen=True, slots=True)
class _Closure:
    """The values a task reads, as one struct, and where each lies in it."""

    values: list[ir.Value]
    scalars: dict[str, int]
    floats: dict[str, int]
    handles: dict[str, int]
    buffers: dict[int, tuple[int, list[tuple[int, int, int]]]]

    @property
    def type(self) -> ir.LiteralStructType:
        return ir.LiteralStructType([v.type for v in self.values])


class ParallelMixin:
    """Parallel loops (`_parallel_for`), `fork` / `acquire` (`_s_Fork`, `_s_Acquire`) and semaphores
    (`_bind_semaphore`, `_semaphore_call`). Needs the codegen state of LoopNestCodegen (`fn`, `b`,
    `err`, `exit`, `scalars`, `fscalars`, `buffers`, `vlets`, `handles`, `task_parent`,
    `_heap_live`, `_loops`, `module`, `name`, `target`) and its statement emitter."""

    # ---- closures and task functions ----------------------------------------------------------
    def _capture(self) -> _Closure:
        cg = self  # type: ignore[assignment]
        cl = _Closure([cg.err], {}, {}, {}, {})
        for name, (v, _st) in cg.scalars.items():
            cl.scalars[name] = len(cl.values)
            cl.values.append(v)
        for name, v in cg.fscalars.items():
            cl.floats[name] = len(cl.values)
            cl.values.append(v)
        for name, v in cg.handles.items():
            cl.handles[name] = len(cl.values)
            cl.values.append(v)
        for info in cg.buffers.values():
            if id(info) in cl.buffers:
                continue
            ptr_at = len(cl.values)
            cl.values.append(info.ptr)
            dims = []
            for d in info.dims:
                dims.append((len(cl.values), len(cl.values) + 1, len(cl.values) + 2))
                cl.values.extend(d)
            cl.buffers[id(info)] = (ptr_at, dims)
        return cl

    def _store_closure(self, cl: _Closure) -> ir.Value:
        """The closure struct, filled, as the `uint8_t *` tasks take."""
        cg = self  # type: ignore[assignment]
        mem = cg._entry_alloca(cl.type, 16)
        for k, v in enumerate(cl.values):
            cg.b.store(v, cg.b.gep(mem, [I32(0), I32(k)], inbounds=True))
        return cg.b.bitcast(mem, PTR)

    def _task_function(self, label: str, ftype: ir.FunctionType, cl: _Closure,
                       body: Callable[[ir.Function], None]) -> ir.Function:
        """An internal task function of type `ftype` whose closure argument holds `cl`; `body(task)`
        emits what it runs with the codegen state set to the task's (restored afterwards)."""
        cg = self  # type: ignore[assignment]
        task = ir.Function(cg.module, ftype, name=f"{cg.name}.{label}")
        fast_names(task)
        task.linkage = "internal"
        closure_arg = task.args[2] if ftype is TASK_TYPE else task.args[3]
        closure_arg.add_attribute("noalias")
        task.args[0].name, closure_arg.name = "__user_context", "closure"
        for attr in cg.fn.attributes:  # the kernel's string attributes (no-builtin-memcpy)
            if isinstance(attr, str) and attr.startswith('"'):
                set.add(task.attributes, attr)
        saved = (cg.fn, cg.b, cg.err, cg.exit, cg.scalars, cg.fscalars, cg.buffers, cg.vlets, cg.handles,
                 cg.task_parent, cg._heap_live, cg._loops)
        try:
            b = ir.IRBuilder(task.append_basic_block("entry"))
            env = b.bitcast(closure_arg, cl.type.as_pointer())
            loaded = [b.load(b.gep(env, [I32(0), I32(k)], inbounds=True), name=f"c{k}") for k in range(len(cl.values))]
            local_err = b.alloca(I32, name="task_err")
            b.store(I32(0), local_err)
            # The body starts in a block of its own, so the entry block holds only the closure loads and
            # the stack slots `_entry_alloca` adds for the body.
            first = task.append_basic_block("body")
            b.branch(first)
            b.position_at_end(first)
            rebuilt: dict[int, BufferInfo] = {}
            buffers: dict[str, BufferInfo] = {}
            for name, info in cg.buffers.items():
                got = rebuilt.get(id(info))
                if got is None:
                    ptr_at, dims = cl.buffers[id(info)]
                    got = rebuilt[id(info)] = dataclasses.replace(
                        info, ptr=loaded[ptr_at], dims=[(loaded[a], loaded[e], loaded[st]) for a, e, st in dims])
                buffers[name] = got
            exit_block = task.append_basic_block("task_exit")
            cg.scalars = {name: (loaded[k], cg.scalars[name][1]) for name, k in cl.scalars.items()}
            cg.fscalars = {name: loaded[k] for name, k in cl.floats.items()}
            cg.handles = {name: loaded[k] for name, k in cl.handles.items()}
            cg.buffers, cg.vlets = buffers, dict(cg.vlets)
            cg.fn, cg.b, cg.err, cg.exit = task, b, local_err, exit_block
            cg.task_parent = task.args[4] if ftype is LOOP_TASK_TYPE else None
            cg._heap_live, cg._loops = [], []
            cg.threaded_depth += 1  # what the body emits may run beside other tasks (atomic updates)
            try:
                body(task)
            finally:
                cg.threaded_depth -= 1
            if not cg.b.block.is_terminated:
                cg.b.branch(exit_block)
            eb = ir.IRBuilder(exit_block)
            code = eb.load(local_err)
            with eb.if_then(eb.icmp_signed("!=", code, I32(0)), likely=False):
                eb.store(code, eb.bitcast(loaded[0], I32.as_pointer()))
            eb.ret(code)
        finally:
            (cg.fn, cg.b, cg.err, cg.exit, cg.scalars, cg.fscalars, cg.buffers, cg.vlets, cg.handles,
             cg.task_parent, cg._heap_live, cg._loops) = saved
        return task

    def _runtime_function(self, name: str, ftype: ir.FunctionType) -> ir.Function:
        cg = self  # type: ignore[assignment]
        fn = cg.module.globals.get(name)
        if fn is None:
            fn = ir.Function(cg.module, ftype, name=name)
        return fn

    def _check_runtime_result(self, result: ir.Value, what: str, label: str) -> None:
        """Continue when a runtime call returned 0; else leave through the failure path, keeping the
        code a failed task wrote (or this call's own when none did)."""
        cg = self  # type: ignore[assignment]
        code = next(cg._assert_ids)
        cg.stats.asserts_checked += 1
        cg.assert_messages[code] = f"{what} failed"
        fail = cg.fn.append_basic_block(f"{label}_fail")
        cont = cg.fn.append_basic_block(f"{label}_ok")
        cg.b.cbranch(cg.b.icmp_signed("==", result, I32(0)), cont, fail)
        cg.b.position_at_end(fail)
        slot = cg.b.bitcast(cg.err, I32.as_pointer())
        old = cg.b.load(slot)
        cg.b.store(cg.b.select(cg.b.icmp_signed("==", old, I32(0)), I32(code), old), slot)
        cg._leave_freeing_heap()
        cg.b.position_at_end(cont)

    # ---- parallel loops -----------------------------------------------------------------------
    def _parallel_for(self, s: H.For, lo: ir.Value, ext: ir.Value) -> None:
        cg = self  # type: ignore[assignment]
        if cg.task_parent is not None:  # inside the task system: a loop task with the task's parent
            self._parallel_tasks([(s.body, [], s)], s, lo, ext)
            return
        cl = self._capture()
        closure = self._store_closure(cl)
        from fpir.types import i32

        def body(task: ir.Function) -> None:
            task.args[1].name = _ident(s.name)
            cg.scalars[s.name] = (task.args[1], i32)
            cg.stmt_(s.body)

        task = self._task_function(_unique(cg.module, cg.name, f"par_for.{_ident(s.name)}"), TASK_TYPE, cl, body)
        do_par_for = self._runtime_function(
            "halide_do_par_for", ir.FunctionType(I32, [PTR, TASK_TYPE.as_pointer(), I32, I32, PTR]))
        result = cg.b.call(do_par_for, [ir.Constant(PTR, None), task, lo, ext, closure])
        self._check_runtime_result(result, f"halide_do_par_for for parallel loop {s.name}", f"par_{_ident(s.name)}")

    # ---- async producers: fork, acquire, semaphores -------------------------------------------
    def _s_Fork(self, s: H.Fork) -> None:
        branches: list[H.Stmt] = []
        node: H.Stmt = s
        while isinstance(node, H.Fork):
            branches.append(node.first)
            node = node.rest
        branches.append(node)
        tasks = []
        for br in branches:
            rest, acq = _peel_acquires(br)
            tasks.append((rest, acq, None))
        self._parallel_tasks(tasks, s)

    def _s_Acquire(self, s: H.Acquire) -> None:
        rest, acq = _peel_acquires(s)
        self._parallel_tasks([(rest, acq, None)], s)

    def _parallel_tasks(self, tasks: list[tuple[H.Stmt, list[H.Acquire], Optional[H.For]]], node: H.Stmt,
                        lo: Optional[ir.Value] = None, ext: Optional[ir.Value] = None) -> None:
        """One `halide_do_parallel_tasks` call running `tasks`: (body, acquires to make before each
        call, the parallel loop it is the body of, if any: then over [lo, lo + ext), any order)."""
        cg = self  # type: ignore[assignment]
        from fpir.types import i32

        cl = self._capture()
        closure = self._store_closure(cl)
        array = cg._entry_alloca(ir.ArrayType(PARALLEL_TASK, len(tasks)), 16)
        for k, (body_stmt, acquires, loop) in enumerate(tasks):
            sems: ir.Value = ir.Constant(SEMAPHORE_ACQUIRE.as_pointer(), None)
            if acquires:
                sem_array = cg._entry_alloca(ir.ArrayType(SEMAPHORE_ACQUIRE, len(acquires)), 16)
                for j, a in enumerate(acquires):
                    slot = cg.b.gep(sem_array, [I32(0), I32(j)], inbounds=True)
                    cg.b.store(self._semaphore(a.semaphore, a), cg.b.gep(slot, [I32(0), I32(0)], inbounds=True))
                    cg.b.store(cg.scalar(a.count, a), cg.b.gep(slot, [I32(0), I32(1)], inbounds=True))
                sems = cg.b.bitcast(sem_array, SEMAPHORE_ACQUIRE.as_pointer())
            label = _unique(cg.module, cg.name, f"task.{_ident(loop.name)}" if loop is not None else "task")

            def body(task: ir.Function, body_stmt: H.Stmt = body_stmt, loop: Optional[H.For] = loop) -> None:
                if loop is None:
                    cg.stmt_(body_stmt)
                    return
                # the slice [min, min + extent) the runtime hands this call, as a serial loop
                cg.scalars["__task_min"] = (task.args[1], i32)
                cg.scalars["__task_extent"] = (task.args[2], i32)
                cg.stmt_(dataclasses.replace(loop, kind="serial", min=H.Variable("__task_min", loop.min.type),
                                             extent=H.Variable("__task_extent", loop.extent.type)))

            task = self._task_function(label, LOOP_TASK_TYPE, cl, body)
            name = _c_string(cg.module, f"{cg.name}.{label}.name", label)
            fields = [task, closure, name, sems, I32(len(acquires)),
                      lo if loop is not None else I32(0), ext if loop is not None else I32(1),
                      I32(min_threads(loop if loop is not None else body_stmt)), ir.Constant(ir.IntType(8), 0)]
            entry = cg.b.gep(array, [I32(0), I32(k)], inbounds=True)
            for j, v in enumerate(fields):
                cg.b.store(v, cg.b.gep(entry, [I32(0), I32(j)], inbounds=True))
        run = self._runtime_function(
            "halide_do_parallel_tasks", ir.FunctionType(I32, [PTR, I32, PARALLEL_TASK.as_pointer(), PTR]))
        parent = cg.task_parent if cg.task_parent is not None else ir.Constant(PTR, None)
        result = cg.b.call(run, [ir.Constant(PTR, None), I32(len(tasks)),
                                 cg.b.bitcast(array, PARALLEL_TASK.as_pointer()), parent])
        what = "fork" if isinstance(node, H.Fork) else "acquire" if isinstance(node, H.Acquire) else "parallel loop"
        self._check_runtime_result(result, f"halide_do_parallel_tasks ({what})", "tasks")

    def _semaphore(self, e: H.Expr, node: H.Node) -> ir.Value:
        cg = self  # type: ignore[assignment]
        e = uncast(e)
        if isinstance(e, H.Variable) and e.name in cg.handles:
            return cg.handles[e.name]
        raise Unsupported(f"semaphore {e}", node)

    def _bind_semaphore(self, name: str, value: H.Expr) -> bool:
        """`let s = (struct halide_semaphore_t *)alloca(16)`: a stack slot (in the entry block, as
        Halide's own allocas), bound in `handles`."""
        cg = self  # type: ignore[assignment]
        v = uncast(value)
        if not (isinstance(v, H.Call) and v.name == "alloca" and len(v.args) == 1
                and isinstance(v.args[0], H.IntImm) and "halide_semaphore_t" in value.type.handle):
            return False
        slot = cg._entry_alloca(ir.ArrayType(I8, max(16, v.args[0].value)), 16)
        cg.handles[name] = cg.b.bitcast(slot, PTR)
        return True

    def _semaphore_call(self, v: H.Expr, node: H.Stmt) -> bool:
        """`halide_semaphore_init(s, n)` / `halide_semaphore_release(s, n)`: calls into the runtime."""
        cg = self  # type: ignore[assignment]
        if not (isinstance(v, H.Call) and v.name in SEMAPHORE_CALLS and len(v.args) == 2):
            return False
        fn = self._runtime_function(v.name, ir.FunctionType(I32, [PTR, I32]))
        cg.b.call(fn, [self._semaphore(v.args[0], node), cg.scalar(v.args[1], node)])
        return True

    def _serial_note(self, s: H.For) -> None:
        """The one-line note for a parallel loop run serially (no threads on this target)."""
        cg = self  # type: ignore[assignment]
        warnings.warn(f"{cg.name}: parallel loop {s.name} runs serially on {cg.target} (Halide's Hexagon "
                      "runtime threads are not available under qemu)", PitchforkSerialNote, stacklevel=2)


class PitchforkSerialNote(UserWarning):
    """A parallel loop compiled as a serial loop (the target has no threads to run it on)."""


def _unique(module: ir.Module, prefix: str, label: str) -> str:
    """`label`, or `label.N`, such that `prefix.label` names nothing in `module` yet."""
    k, out = 0, label
    while f"{prefix}.{out}" in module.globals:
        k += 1
        out = f"{label}.{k}"
    return out


def _c_string(module: ir.Module, name: str, text: str) -> ir.Value:
    """A private NUL-terminated string constant, as an i8 pointer."""
    got = module.globals.get(name)
    if got is None:
        data = bytearray(text.encode()) + b"\0"
        t = ir.ArrayType(I8, len(data))
        got = ir.GlobalVariable(module, t, name=name)
        got.global_constant, got.linkage, got.initializer = True, "private", ir.Constant(t, data)
    return got.bitcast(PTR)
