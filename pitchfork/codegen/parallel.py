"""Parallel loops on Halide's runtime: `parallel (v, min, extent) {body}` as Halide's code runs it.

Halide (LowerParallelTasks.cpp, CodeGen_LLVM) outlines the body of a parallel loop into a task
function `int task(void *user_context, int idx, uint8_t *closure)`, stores every value the body reads
into a closure struct, and calls its runtime's thread pool:

    int halide_do_par_for(void *user_context, halide_task_t task, int min, int size, uint8_t *closure)

which runs task(user_context, i, closure) for i in [min, min + size) on up to HL_NUM_THREADS threads
(default: the number of cores) and returns the first non-zero result. We emit the same: the task is
an internal function of the kernel's module, the closure an entry-block alloca of the caller, and
`halide_do_par_for` an external symbol that the Halide runtime defines (`halide.compile_standalone_
runtime` for the target: pitchfork/backend/halide_runtime.py loads it for the x86 JIT and links it
into the qemu-aarch64 harness; an AOT object links against a runtime the application supplies, as
Halide's own objects do with `no_runtime`). No thread pool of our own.

What the closure holds: every value in scope where the loop starts (scalars and float scalars by
name, each buffer's host pointer and dimension fields, the error slot). The task reloads them and
emits the body with the same codegen, one iteration per call; LLVM drops the loads the body does
not use. Vector lets are symbolic (FPIR terms over leaves, pitchfork/codegen/to_fpir.py), so
they carry over without values. Scoped-alias metadata is module-wide, so the task's accesses keep
their buffer scopes.

Errors: a failed check inside a task writes its code to a task-local slot, frees the task's live
heap buffers, and returns the code; the task copies a non-zero code to the kernel's error slot
(tasks that fail at once may race to write it: one of their codes wins, any is a true failure).
The caller leaves through its own failure path when `halide_do_par_for` returns non-zero, keeping a
task's code, or its own (a runtime failure) if no task wrote one.

Where there are no threads (hvx128: Hexagon's runtime threads do not run under qemu) the loop is
emitted serially, with a `PitchforkSerialNote` warning that names it: never silently.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING

from llvmlite import ir

from pitchfork.frontend import ir as H
from pitchfork.codegen.base import BufferInfo, _ident

if TYPE_CHECKING:
    from fpir.types import ScalarType

I8, I32 = ir.IntType(8), ir.IntType(32)
PTR = ir.PointerType(I8)
#: halide_task_t: int (*)(void *user_context, int idx, uint8_t *closure)
TASK_TYPE = ir.FunctionType(I32, [PTR, I32, PTR])
#: targets whose runtime has threads we run (x86 in process, arm64 under qemu-aarch64)
THREADED_TARGETS = frozenset({"x86-avx2", "arm64"})


class PitchforkSerialNote(UserWarning):
    """A parallel loop compiled as a serial loop (the target has no threads to run it on)."""


class ParallelMixin:
    """`_parallel_for`: a parallel loop as a task function and a `halide_do_par_for` call. Needs the
    codegen state of LoopNestCodegen (`fn`, `b`, `err`, `exit`, `scalars`, `fscalars`, `buffers`,
    `vlets`, `_heap_live`, `_loops`, `module`, `name`, `target`) and its statement emitter."""

    def _parallel_for(self, s: H.For, lo: ir.Value, ext: ir.Value) -> None:
        cg = self  # type: ignore[assignment]
        values: list[ir.Value] = [cg.err]
        scalar_slots: dict[str, int] = {}
        for name, (v, _st) in cg.scalars.items():
            scalar_slots[name] = len(values)
            values.append(v)
        float_slots: dict[str, int] = {}
        for name, v in cg.fscalars.items():
            float_slots[name] = len(values)
            values.append(v)
        buffer_slots: dict[int, tuple[int, list[tuple[int, int, int]]]] = {}
        for info in cg.buffers.values():
            if id(info) in buffer_slots:
                continue
            ptr_at = len(values)
            values.append(info.ptr)
            dims = []
            for d in info.dims:
                dims.append((len(values), len(values) + 1, len(values) + 2))
                values.extend(d)
            buffer_slots[id(info)] = (ptr_at, dims)
        struct_t = ir.LiteralStructType([v.type for v in values])
        closure = cg._entry_alloca(struct_t, 16)
        for k, v in enumerate(values):
            cg.b.store(v, cg.b.gep(closure, [I32(0), I32(k)], inbounds=True))

        task = ir.Function(cg.module, TASK_TYPE, name=f"{cg.name}.par_for.{_ident(s.name)}")
        task.linkage = "internal"
        task.args[0].name, task.args[1].name, task.args[2].name = "__user_context", _ident(s.name), "closure"
        task.args[2].add_attribute("noalias")
        for attr in cg.fn.attributes:  # the kernel's string attributes (no-builtin-memcpy)
            if isinstance(attr, str) and attr.startswith('"'):
                set.add(task.attributes, attr)

        saved = (cg.fn, cg.b, cg.err, cg.exit, cg.scalars, cg.fscalars, cg.buffers, cg.vlets,
                 cg._heap_live, cg._loops)
        try:
            self._emit_task(s, task, struct_t, values, scalar_slots, float_slots, buffer_slots)
        finally:
            (cg.fn, cg.b, cg.err, cg.exit, cg.scalars, cg.fscalars, cg.buffers, cg.vlets,
             cg._heap_live, cg._loops) = saved

        do_par_for = cg.module.globals.get("halide_do_par_for")
        if do_par_for is None:
            do_par_for = ir.Function(cg.module, ir.FunctionType(I32, [PTR, TASK_TYPE.as_pointer(), I32, I32, PTR]),
                                     name="halide_do_par_for")
        result = cg.b.call(do_par_for, [ir.Constant(PTR, None), task, lo, ext, cg.b.bitcast(closure, PTR)])
        code = next(cg._assert_ids)
        cg.stats.asserts_checked += 1
        cg.assert_messages[code] = f"halide_do_par_for failed for parallel loop {s.name}"
        fail = cg.fn.append_basic_block(f"par_{_ident(s.name)}_fail")
        cont = cg.fn.append_basic_block(f"par_{_ident(s.name)}_ok")
        cg.b.cbranch(cg.b.icmp_signed("==", result, I32(0)), cont, fail)
        cg.b.position_at_end(fail)
        slot = cg.b.bitcast(cg.err, I32.as_pointer())
        old = cg.b.load(slot)
        cg.b.store(cg.b.select(cg.b.icmp_signed("==", old, I32(0)), I32(code), old), slot)
        cg._leave_freeing_heap()
        cg.b.position_at_end(cont)

    def _emit_task(self, s: H.For, task: ir.Function, struct_t: ir.LiteralStructType, values: list[ir.Value],
                   scalar_slots: dict[str, int], float_slots: dict[str, int],
                   buffer_slots: dict[int, tuple[int, list[tuple[int, int, int]]]]) -> None:
        """The body of task function `task` for one iteration of `s` (state swapped by the caller)."""
        cg = self  # type: ignore[assignment]
        b = ir.IRBuilder(task.append_basic_block("entry"))
        env = b.bitcast(task.args[2], struct_t.as_pointer())
        loaded = [b.load(b.gep(env, [I32(0), I32(k)], inbounds=True), name=f"c{k}") for k in range(len(values))]
        shared_err = loaded[0]
        local_err = b.alloca(I32, name="task_err")
        b.store(I32(0), local_err)
        scalars: dict[str, tuple[ir.Value, ScalarType]] = {}
        for name, k in scalar_slots.items():
            scalars[name] = (loaded[k], cg.scalars[name][1])
        fscalars = {name: loaded[k] for name, k in float_slots.items()}
        rebuilt: dict[int, BufferInfo] = {}
        buffers: dict[str, BufferInfo] = {}
        for name, info in cg.buffers.items():
            got = rebuilt.get(id(info))
            if got is None:
                ptr_at, dims = buffer_slots[id(info)]
                got = rebuilt[id(info)] = dataclasses.replace(
                    info, ptr=loaded[ptr_at], dims=[(loaded[a], loaded[e], loaded[st]) for a, e, st in dims])
            buffers[name] = got
        from fpir.types import i32

        scalars[s.name] = (task.args[1], i32)
        exit_block = task.append_basic_block("task_exit")
        cg.fn, cg.b, cg.err, cg.exit = task, b, local_err, exit_block
        cg.scalars, cg.fscalars, cg.buffers, cg.vlets = scalars, fscalars, buffers, dict(cg.vlets)
        cg._heap_live, cg._loops = [], []
        cg.stmt_(s.body)
        if not cg.b.block.is_terminated:
            cg.b.branch(exit_block)
        eb = ir.IRBuilder(exit_block)
        code = eb.load(local_err)
        with eb.if_then(eb.icmp_signed("!=", code, I32(0)), likely=False):
            eb.store(code, eb.bitcast(shared_err, I32.as_pointer()))
        eb.ret(code)

    def _serial_note(self, s: H.For) -> None:
        """The one-line note for a parallel loop run serially (no threads on this target)."""
        cg = self  # type: ignore[assignment]
        warnings.warn(f"{cg.name}: parallel loop {s.name} runs serially on {cg.target} (Halide's Hexagon "
                      "runtime threads are not available under qemu)", PitchforkSerialNote, stacklevel=2)
