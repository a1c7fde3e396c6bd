"""Allocations of the loop-nest code generator, placed as Halide places them, and the heap they use.

A mixin of LoopNestCodegen (pitchfork/codegen/loop_nest.py) for `allocate`/`free` statements, and the
one way out of a kernel on a failed check (`_fail`).

Placement (Halide 21's, measured: 16384 bytes become an alloca, 16385 a `halide_malloc` call, on x86
and Hexagon alike): an allocation of constant size of at most STACK_LIMIT bytes, or one Halide
placed `in Stack`/`in Register`, is a stack slot (an alloca in the entry block, reused by every
iteration of an enclosing loop; a dynamic size `in Stack` is a stacksave/alloca/stackrestore scope,
except on Hexagon, where it goes to the heap: no HVX kernel has a variable-sized alloca, see
`_s_Allocate` and tests/pitchfork/codegen/test_hvx_stack.py).
Every other allocation is `halide_malloc(user_context, bytes)` and `halide_free(user_context, ptr)`:
large buffers never touch the stack, so a compute_root image fits on every target (an 8 MB host
stack, qemu-hexagon's stack). One departure from Halide, on arm64: an allocation that opens a
serial loop's body with a size the loop does not change is made once around the loop
(`hoist_allocations`), so no call sits inside the loop (why that matters: its docstring).

The heap entry points are Halide's runtime's: `heap_functions` defines them in the kernel's module
with WEAK default bodies (an application that defines its own wins, as with Halide's runtime):
`halide_malloc` takes `bytes + ALLOC_ALIGN + sizeof(void *)` from libc `malloc`, rounds up to an
ALLOC_ALIGN boundary and keeps the `malloc` pointer in the word below the block; `halide_free` reads
it back and calls `free`. On the 64-bit (Linux) targets a block of HUGE_ADVICE_BYTES or more is also
advised for transparent huge pages, as numpy advises its own arrays of 4 MiB or more: with the
system's THP mode `madvise` (this machine's), only advised memory gets 2 MiB pages, and without the
advice whether a large compute_root buffer got them was the luck of the process's heap history.
The whole pages inside the block get MADV_HUGEPAGE: pages that fault in there after the advice are
huge pages. Measured (interpolate x86 JIT, 1536x2560, the apps suite's worker setup, /proc/self/pagemap +
/proc/kpageflags of each block after two calls, /work/coord/s26/fl6/thp): downsampled_1 (15.2 MiB) was
0% in huge pages in PITCHFORK's worker without advice and 39% with it (the rest of the range was
populated before the advice), 87% in Halide 21's (whose `halide_malloc` does not advise: it reused a
range numpy had advised, by chance). Session 22 measured the same code 3-7% faster with that buffer in
huge pages. MADV_COLLAPSE would gather the already-populated pages too (92% there), but it is left out
on purpose: it overrides the system's THP mode (even `never`, an administrator's explicit choice, which
MADV_HUGEPAGE respects) and stalls the first call that reuses a populated range for 8.5-17 ms (fl6,
/work/coord/s26/fl6/thp/mcost*.c); the quiet apps run of session 26 showed no gain from it to pay for
that. Halide's runtime, where it is linked and its definition wins, does not advise. A process with THP
disabled (PR_SET_THP_DISABLE: the apps suite's --no-huge-pages) gets no huge pages. The same pair serves every place a kernel runs: the x86 JIT (the
process's libc), qemu-aarch64 (glibc), the AOT object (the user's libc or own `halide_malloc`), and
the bare-metal Hexagon harness, which has no libc and defines `malloc`/`free` itself with anonymous
mmaps (pitchfork/backend/harness.py). Contract, as Halide's: `halide_malloc` returns NULL or memory
aligned to the target's HEAP_ALIGN bytes (Halide 21 runtime's `halide_malloc_alignment()`: 64 on x86,
32 on arm64, 128 on Hexagon), and that is all the kernel's loads and stores of a heap buffer assume:
where a program links Halide's runtime beside our object, the linker may keep Halide's definition of
the WEAK symbol, not ours. Our default gives ALLOC_ALIGN (128) on every target, more than is claimed.
Stack slots are ours alone and keep ALLOC_ALIGN.

Invariant: every pointer a kernel obtains from `halide_malloc` goes to `halide_free` exactly once on
every path out of its scope: the normal end of the scope, and every failed assertion or failed
allocation inside it (`_fail` frees the live heap buffers, innermost first, before leaving). A NULL
result is reported in the error slot (its own assertion number) and is not freed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from llvmlite import ir

from pitchfork.frontend import ir as H
from pitchfork.codegen.base import (ALLOC_ALIGN, HEAP_ALIGN, STACK_LIMIT, VERY_LIKELY, BufferInfo,
                                           Stats)
from pitchfork.frontend.htypes import BOOL

I8, I32 = ir.IntType(8), ir.IntType(32)
PTR = ir.PointerType(I8)
#: bytes after every allocation, so that vector loads Halide rounds up stay inside it
PADDING = 512
PAGE = 4096
#: Linux's MADV_HUGEPAGE (the same number on x86-64 and AArch64)
MADV_HUGEPAGE = 14
#: heap blocks of at least this many bytes are advised for huge pages (numpy's threshold for its arrays)
HUGE_ADVICE_BYTES = 4 << 20


def hoist_allocations(loop: H.For) -> Optional[H.Stmt]:
    """`for (v) {allocate a[...]; ... body}` as `allocate a[...] if extent > 0 {for (v) {body}}` when
    the allocations that open the loop body have sizes that do not depend on the loop (Halide's
    `store_at(f, yo)` buffers, sized by values computed before the loop); None if there is none.

    Halide allocates such buffers afresh every iteration; one allocation for the whole loop is the
    same program (no iteration reads what an earlier one left in the buffer: Halide's semantics
    never read a buffer before writing it), with two `halide_malloc`/`halide_free` calls in all
    instead of two per iteration, and, what matters more, no call inside the loop: every Neon and
    AVX register is caller-saved (whole), so a vector LLVM hoists out of the loop was spilled
    across the calls, and LLVM 22 put the reloads in the innermost loop (camera_pipe arm64: the
    colour matrix's 9 coefficients and 3 offsets, loaded once before `camera_pipe.s0.y.yi.yo`,
    reloaded from the stack in every iteration of `corrected.s0.y`: 78 instructions, now 70).
    The condition `extent > 0` keeps a loop that does not run from allocating a size computed
    from extents that only make sense when it runs.

    Applied on arm64 only (LoopNestCodegen._s_For), where it was measured: camera_pipe 78 -> 70,
    the other pipelines it changes (sobel3x3, gaussian5x5/7x7) unchanged. On x86 (16 vector
    registers) the values then kept live through the loop cost more than the reloads around the
    calls did: sobel3x3's hot loop 206 -> 221, gaussian5x5's 79 -> 82 (Halide 21: 208, 79)."""
    if loop.kind != "serial":
        return None
    allocs, body = _peel(loop.body, loop.name)
    if not allocs:
        return None
    runs = H.BinOp(">", loop.extent, H.IntImm(0, loop.extent.type), BOOL)
    out: H.Stmt = replace(loop, body=body)
    for a in reversed(allocs):
        cond = runs if a.condition is None else H.BinOp("&&", runs, a.condition, BOOL)
        out = replace(a, body=out, condition=cond)
    return out


def _peel(s: H.Stmt, var: str) -> tuple[list[H.Allocate], H.Stmt]:
    """The allocations that open `s` (through other allocations and the last statement of a block:
    the statements before it stay where they are, they cannot change a size that reads no buffer)
    and do not depend on loop variable `var`; `s` without them."""
    if isinstance(s, H.Allocate) and not _mentions(s, var):
        allocs, rest = _peel(s.body, var)
        return [s, *allocs], rest
    if isinstance(s, H.Block) and s.stmts:
        allocs, last = _peel(s.stmts[-1], var)
        if allocs:
            return allocs, replace(s, stmts=(*s.stmts[:-1], last))
    return [], s


def _mentions(a: H.Allocate, name: str) -> bool:
    """Whether `a`'s size or condition reads variable `name` or any buffer (a load could read what
    the loop writes)."""
    exprs = [*a.extents, *([a.condition] if a.condition is not None else [])]
    return any((isinstance(n, H.Variable) and n.name == name) or isinstance(n, (H.Load, H.Call))
               for e in exprs for n in H.walk(e))


def unconditional_frees(body: H.Stmt, name: str) -> frozenset[str]:
    """The buffers whose `free` runs on every path through `body` (the scope of `allocate name`):
    reached through blocks, lets, producer/consumer markers, hoisted storage and nested allocations
    only, never inside a loop, a branch, a fork, an acquire or an atomic; a nested allocation of
    `name` itself shadows it (its frees are its own)."""
    out: set[str] = set()
    todo = [body]
    while todo:
        st = todo.pop()
        if isinstance(st, H.Free):
            out.add(st.name)
        elif isinstance(st, H.Block):
            todo.extend(st.stmts)
        elif isinstance(st, H.Allocate):
            if st.name != name:
                todo.append(st.body)
        elif isinstance(st, (H.LetStmt, H.ProducerConsumer, H.HoistedStorage)):
            todo.append(st.body)
    return frozenset(out)


def word_type(target: str) -> ir.IntType:
    """`size_t` of `target` (Hexagon is a 32-bit machine)."""
    return ir.IntType(32 if target == "hvx128" else 64)


class AllocMixin:
    """`allocate`/`free` statements and `_fail`; needs `b`, `fn`, `module`, `target`, `err`, `exit`,
    `buffers`, `stats`, `assert_messages`, `_assert_ids` and the expression entry points of
    LoopNestCodegen."""

    b: ir.IRBuilder
    fn: ir.Function
    module: ir.Module
    target: str
    err: ir.Value
    exit: ir.Block
    buffers: dict[str, BufferInfo]
    stats: Stats
    assert_messages: dict[int, str]

    #: `halide_malloc` results whose scope encloses the code being emitted, outermost first
    _heap_live: list[ir.Value]
    #: buffer name -> its `halide_malloc` result while its `free` (one that comes before the end of
    #: its scope, `unconditional_frees`) is pending; None otherwise (and once that `free` was emitted)
    _early_free: dict[str, Optional[ir.Value]]

    def _s_Allocate(self, s: H.Allocate) -> None:
        """An intermediate buffer (compute_root/compute_at): a stack slot aligned to ALLOC_ALIGN bytes or
        a heap block known to be aligned to HEAP_ALIGN[target] (see the module docstring), PADDING
        bytes longer than Halide asks. A custom allocation (an atomic() update's mutex array) is
        AtomicMixin._s_mutex_array's."""
        if s.new_expr is not None or s.free_function:
            self._s_mutex_array(s)  # type: ignore[attr-defined]
            return
        elem_bytes = max(1, s.type.bits // 8)
        terms = [self.to_term(e, s) for e in s.extents]  # type: ignore[attr-defined]
        const_elems: Optional[int] = 1
        for t in terms:
            const_elems = const_elems * t.value if const_elems is not None and t.is_const else None
        on_stack = s.memory_type in ("Stack", "Register")
        if const_elems is not None and const_elems >= 0 and s.memory_type != "Heap" and (
                const_elems * elem_bytes <= STACK_LIMIT or on_stack):
            slot = self._entry_alloca(ir.ArrayType(I8, const_elems * elem_bytes + PADDING))  # type: ignore[attr-defined]
            self._scope(s, self.b.bitcast(slot, PTR))
            return
        word = word_type(self.target)
        n: ir.Value = ir.Constant(word, 1)
        for t in terms:
            v = self._emit_scalar_term(t)  # type: ignore[attr-defined]
            n = self.b.mul(n, self.b.sext(v, word) if v.type.width < word.width else v)
        if s.condition is not None:
            # `allocate ... if cond` (e.g. a Func used only under a specialization): the buffer is
            # only touched when cond holds, and its extents may be meaningless otherwise.
            n = self.b.select(self.scalar(s.condition, s), n, ir.Constant(word, 0))  # type: ignore[attr-defined]
        size = self.b.add(self.b.mul(n, ir.Constant(word, elem_bytes)), ir.Constant(word, PADDING))
        if on_stack and self.target != "hvx128":  # Halide keeps `in Stack` allocations on the stack
            # whatever their size. Not on Hexagon: there a variable-sized alloca next to any
            # over-aligned stack object (HVX spill slots, the stack temporaries LLVM makes to
            # scalarize a vector division, ...) gives the function an aligned-stack base register
            # (AP, `r16 = and(r30, #-A)`), and LLVM 22 may spill an argument through AP before AP is
            # set (depthwise_conv/hvx128: the output's extent.1 reloaded as 0, so Halide's
            # output-bounds assertion #13 failed). HVX kernels have no variable-sized alloca:
            # dynamic `in Stack` allocations take the heap path below.
            save = self.b.call(self._intrinsic("llvm.stacksave.p0", PTR, []), [])  # type: ignore[attr-defined]
            mem = self.b.alloca(I8, size=size)
            mem.align = ALLOC_ALIGN
            self._scope(s, mem)
            if not self.b.block.is_terminated:
                self.b.call(self._intrinsic("llvm.stackrestore.p0", ir.VoidType(), [PTR]), [save])  # type: ignore[attr-defined]
            return
        hmalloc, hfree = heap_functions(self.module, word)
        null = ir.Constant(PTR, None)  # user_context: none (the kernel has no user context argument)
        mem = self.b.call(hmalloc, [null, size])
        if not self.no_asserts:  # type: ignore[attr-defined]  # (Halide's no_asserts leaves this check out too)
            code = next(self._assert_ids)  # type: ignore[attr-defined]
            self.stats.asserts_checked += 1  # a check we add (Halide's halide_malloc result check)
            # The text names Halide's runtime call, so the AOT entry returns its code (out_of_memory, -11).
            self.assert_messages[code] = f"halide_malloc returned NULL for {s.name}: halide_error_out_of_memory"
            self._check(self.b.icmp_unsigned("!=", mem, null), code, f"alloc_{code}")
        self._heap_live.append(mem)
        early = s.name in unconditional_frees(s.body, s.name)
        if not self._scope(s, mem, early=early, align=HEAP_ALIGN[self.target]):
            self._forget_heap(mem)
            if not self.b.block.is_terminated:
                self.b.call(hfree, [null, mem])

    def _scope(self, s: H.Allocate, mem: ir.Value, early: bool = False, align: int = ALLOC_ALIGN) -> bool:
        """Emit `s`'s body with its buffer bound to `mem`, known to be aligned to `align` bytes (a stack
        slot's ALLOC_ALIGN, a heap block's HEAP_ALIGN); with `early` (a heap buffer whose `free`
        runs on every path through the body), the `free` frees it. Whether it did."""
        saved = dict(self.buffers)
        self.buffers[s.name] = BufferInfo(s.name, mem, s.type.elem, align=align, scope="allocations")
        had, prev = s.name in self._early_free, self._early_free.get(s.name)
        self._early_free[s.name] = mem if early else None  # shadows an enclosing buffer of the name
        self.stmt_(s.body)  # type: ignore[attr-defined]
        freed = early and self._early_free[s.name] is None
        if had:
            self._early_free[s.name] = prev
        else:
            del self._early_free[s.name]
        self.buffers = saved
        return freed

    def _s_Free(self, s: H.Free) -> None:
        """Where Halide frees a heap buffer before its scope ends (its last use: EarlyFree), free it
        there, as Halide's code does: a compute_root chain (bilateral_grid's blurz, blurx, blury)
        then holds two grids at a time, not all three, and libc's heap neither grows past nor trims
        back what the next call allocates again (bilateral_grid x86: kernel time in page faults 21% of
        the run, Halide's 15%). Only a `free` that runs on every path through the scope
        (`unconditional_frees`) and of a buffer this function allocated (not an enclosing function's,
        from inside a parallel task); every other one waits for the end of the scope, which frees on
        every path (see `_fail`)."""
        mem = self._early_free.get(s.name)
        if mem is None or not any(m is mem for m in self._heap_live):
            return
        self._early_free[s.name] = None  # freed: the end of the scope must not free it again
        self._forget_heap(mem)
        if not self.b.block.is_terminated:
            _, hfree = heap_functions(self.module, word_type(self.target))
            self.b.call(hfree, [ir.Constant(PTR, None), mem])

    def _forget_heap(self, mem: ir.Value) -> None:
        """Drop `mem` from the live heap buffers (freed: `_fail` must not free it again)."""
        self._heap_live[:] = [m for m in self._heap_live if m is not mem]

    def _check(self, ok: ir.Value, code: int, label: str) -> None:
        """Continue where `ok` holds; otherwise `_fail(code)`."""
        fail = self.fn.append_basic_block(f"{label}_fail")
        cont = self.fn.append_basic_block(f"{label}_ok")
        br = self.b.cbranch(ok, cont, fail)
        if self._loops and self.passes.on("branch_weights"):  # type: ignore[attr-defined]
            # Inside a loop the failure side is marked cold, as Halide marks every check: evenly
            # weighted, each check halves LLVM's estimate of the loop body's code after it, and the
            # register allocator then spilled the values of the loops before the checks and
            # reloaded them in every iteration (camera_pipe's denoise loop, ahead of the line
            # buffers' fold checks: 7 reloads an iteration). The checks ahead of the loop nest (the
            # argument checks) keep even weights: they scale the whole nest alike, and weighting
            # them moved the register allocator's spill choices in sobel3x3's hot loop (2 reloads
            # more) without removing a reload anywhere.
            br.set_weights(VERY_LIKELY)
        self.b.position_at_end(fail)
        self._fail(code)
        self.b.position_at_end(cont)

    def _fail(self, code: int) -> None:
        """Leave the kernel with `code` in the error slot, freeing the live heap buffers first."""
        self.b.store(ir.Constant(I32, code), self.b.bitcast(self.err, ir.PointerType(I32)))
        self._leave_freeing_heap()

    def _leave_freeing_heap(self) -> None:
        """Free the live heap buffers (innermost first) and branch to the exit."""
        if self._heap_live:
            _, hfree = heap_functions(self.module, word_type(self.target))
            for mem in reversed(self._heap_live):
                self.b.call(hfree, [ir.Constant(PTR, None), mem])
        self.b.branch(self.exit)


def heap_functions(module: ir.Module, word: ir.IntType) -> tuple[ir.Function, ir.Function]:
    """(`halide_malloc`, `halide_free`) of `module`, with weak default bodies, created once."""
    got = module.globals.get("halide_malloc")
    if isinstance(got, ir.Function):
        free_fn = module.globals["halide_free"]
        assert isinstance(free_fn, ir.Function)
        return got, free_fn
    malloc = _declare(module, "malloc", PTR, [word])
    free = _declare(module, "free", ir.VoidType(), [PTR])
    hmalloc = ir.Function(module, ir.FunctionType(PTR, [PTR, word]), name="halide_malloc")
    hfree = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), name="halide_free")
    for fn in (hmalloc, hfree):
        fn.linkage = "weak"  # an application's own definition wins, as with Halide's runtime
    hmalloc.return_value.add_attribute("noalias")
    slot = ir.Constant(word, word.width // 8)
    zero = ir.Constant(word, 0)

    b = ir.IRBuilder(hmalloc.append_basic_block("entry"))
    n = hmalloc.args[1]
    raw = b.call(malloc, [b.add(n, ir.Constant(word, ALLOC_ALIGN + word.width // 8))])
    with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)), likely=False):
        b.ret(ir.Constant(PTR, None))
    # The first ALLOC_ALIGN boundary at least a word past `raw`, reached by a GEP from `raw` (not
    # inttoptr) so the result is still `raw`'s object for LLVM.
    past = b.add(b.ptrtoint(raw, word), slot)
    pad = b.add(slot, b.and_(b.sub(zero, past), ir.Constant(word, ALLOC_ALIGN - 1)))
    mem = b.gep(raw, [pad], inbounds=True)
    b.store(raw, b.bitcast(b.gep(mem, [b.sub(zero, slot)], inbounds=True), ir.PointerType(PTR)))
    if word.width == 64:  # Linux (x86-64, AArch64); the bare-metal Hexagon harness has no madvise
        # The whole pages inside [mem, mem + n): advice is per page, and a neighbouring block's
        # pages are not ours to advise. The result is ignored: advice that fails changes nothing.
        madvise = _declare(module, "madvise", I32, [PTR, word, I32])
        with b.if_then(b.icmp_unsigned(">=", n, ir.Constant(word, HUGE_ADVICE_BYTES)), likely=False):
            lo = b.and_(b.add(b.ptrtoint(mem, word), ir.Constant(word, PAGE - 1)), ir.Constant(word, -PAGE))
            hi = b.and_(b.add(b.ptrtoint(mem, word), n), ir.Constant(word, -PAGE))
            b.call(madvise, [b.inttoptr(lo, PTR), b.sub(hi, lo), ir.Constant(I32, MADV_HUGEPAGE)])
    b.ret(mem)

    b = ir.IRBuilder(hfree.append_basic_block("entry"))
    p = hfree.args[1]
    with b.if_then(b.icmp_unsigned("!=", p, ir.Constant(PTR, None))):
        home = b.bitcast(b.gep(p, [b.sub(zero, slot)], inbounds=True), ir.PointerType(PTR))
        b.call(free, [b.load(home)])
    b.ret_void()
    return hmalloc, hfree


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    assert isinstance(fn, ir.Function)
    return fn
