"""Memory access for the loop-nest code generator: element pointers, aligned and alias-scoped loads
and stores, gathers/scatters as lane loops, masks, stack slots. A mixin of LoopNestCodegen
(pitchfork/codegen/loop_nest.py), kept apart so statement and expression emission stay readable.

Invariants: every access to a buffer goes through `_mem_access` (so it gets the buffer's alias
scope); an alignment is never claimed beyond what the base pointer and Halide's `aligned(m, r)`
prove (`_align`); masked-off lanes are never read or written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from llvmlite import ir

from fpir.types import ScalarType, i32, u1
from pitchfork.backend.machine import get_target
from pitchfork.frontend import ir as H
from pitchfork.codegen.base import BufferInfo, Leaf, Unsupported, _show, _storage
from pitchfork.codegen.ir_constants import mask, pointer, undef, vector


#: gathers/scatters of at most this many unmasked lanes are written out lane by lane (no loop): the
#: lanes of one vector register of bytes on x86 (a u8 lookup table read at the schedule's vector
#: width, camera_pipe's tone curve: 32 lanes in the innermost loop), 16 elsewhere (one Neon register
#: of bytes; HVX keeps its lane loops, a straight-line lane costs ~2 packets and long compiles there)
SHORT_GATHER: dict[str, int] = {"x86-avx2": 32}
SHORT_GATHER_DEFAULT = 16


def short_gather(target: str) -> int:
    """The most unmasked lanes `target`'s gathers/scatters write out lane by lane (see SHORT_GATHER)."""
    return SHORT_GATHER.get(target, SHORT_GATHER_DEFAULT)


@dataclass(frozen=True)
class LoopFrame:
    """A serial loop being emitted: `pre`, the block that branches into it (its preheader);
    `blocks`, the function's block count when its body began (every block appended since, and
    `head` and `body`, lie in the loop); the preheader copies of arguments made for it so far
    (`_loop_copy`), by argument name."""

    pre: ir.Block
    head: ir.Block
    body: ir.Block
    blocks: int
    copies: dict[str, ir.Value] = field(default_factory=dict)


@dataclass(frozen=True)
class ClampedRamp:
    """`clamp(ramp(base, 1, n), lo, hi) + off` with scalar lo, hi, off; `lo_outer`: the clamp is
    max(min(.., hi), lo) (so lo wins when hi < lo), else min(max(.., lo), hi)."""

    base: H.Expr
    lo: H.Expr
    hi: H.Expr
    off: H.Expr
    lo_outer: bool


def clamped_ramp(index: H.Expr, src: Callable[[H.Expr], H.Expr]) -> Optional[ClampedRamp]:
    """The parts (ClampedRamp) if `index` is `clamp(ramp(B, 1, n), LO, HI) + OFF` with LO, HI, OFF broadcast
    scalars (max(min(.., HI), LO) or min(max(.., LO), HI); OFF absent = 0), else None. `src(e)` is the
    expression a vector let variable `e` is bound to (`e` itself for anything else)."""

    def splat(e: H.Expr) -> Optional[H.Expr]:
        e = src(e)
        return e.value if isinstance(e, H.Broadcast) else None

    off: Optional[H.Expr] = H.IntImm(0, index.type.with_lanes(1))
    e = src(index)
    if isinstance(e, H.BinOp) and e.op == "+":
        if splat(e.b) is not None:
            e, off = src(e.a), splat(e.b)
        elif splat(e.a) is not None:
            e, off = src(e.b), splat(e.a)
        else:
            return None
    if not (isinstance(e, H.BinOp) and e.op in ("min", "max") and splat(e.b) is not None):
        return None
    inner = src(e.a)
    if not (isinstance(inner, H.BinOp) and inner.op in ("min", "max") and inner.op != e.op
            and splat(inner.b) is not None):
        return None
    r = src(inner.a)
    if not (isinstance(r, H.Ramp) and isinstance(r.stride, H.IntImm) and r.stride.value == 1):
        return None
    lo, hi = (splat(e.b), splat(inner.b)) if e.op == "max" else (splat(inner.b), splat(e.b))
    assert lo is not None and hi is not None and off is not None
    return ClampedRamp(r.base, lo, hi, off, e.op == "max")


class MemoryMixin:
    """Loads, stores, gathers and scatters; needs `b`, `fn`, `module`, `name`, `target`, `buffers`,
    `_scoped` and the expression entry points `scalar`/`vector`/`_splat` of LoopNestCodegen."""

    b: ir.IRBuilder
    fn: ir.Function
    module: ir.Module
    name: str
    target: str
    buffers: dict[str, BufferInfo]
    _scoped: list[tuple[str, ir.Instruction]]

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
        base = self.b.bitcast(buf.ptr, pointer(ir.IntType(st.bits)))
        # inbounds: Halide only addresses inside a buffer (allocations carry a vector of padding).
        p = self.b.gep(base, [self._address_width(index)], inbounds=True)
        return self.b.bitcast(p, pointer(pointee))

    @property
    def pointer_bits(self) -> int:
        """The target's address width: GEP indices are of this width (64 on x86/arm64, 32 on
        Hexagon), so LLVM sees no extension or truncation between an index and its address."""
        return get_target(self.target).pointer_bits  # type: ignore[attr-defined]

    def _address_width(self, index: ir.Value) -> ir.Value:
        """A (signed) index widened to the address width; a wider one is left to the GEP."""
        bits = self.pointer_bits
        return self.b.sext(index, ir.IntType(bits)) if index.type.width < bits else index

    def _store_elem(self, buf: BufferInfo, et: ScalarType, idx: ir.Value, val: ir.Value,
                    alignment: Optional[tuple[int, int]] = None) -> None:
        st = _storage(et)
        if et.bits == 1:
            val = self.b.zext(val, ir.IntType(8))
        p = self._elem_ptr(buf, et, idx, ir.IntType(st.bits))
        self._mem_access(buf, self.b.store(val, p, align=self._align(buf, et, alignment)))

    def _align(self, buf: BufferInfo, et: ScalarType, alignment: Optional[tuple[int, int]]) -> int:
        """Bytes a load/store at index `i` of `buf` is aligned to: the base's alignment combined with
        Halide's `aligned(m, r)` (i = m*k + r) of the index, else with the element size. Never more
        than is true: on Hexagon an over-claimed alignment silently loads the wrong bytes."""
        size = _storage(et).bits // 8
        a = math.gcd(buf.align, size)
        if alignment is not None and alignment[0] > 1:
            m, r = alignment
            a = math.gcd(buf.align, size * m)
            if r % m:
                a = math.gcd(a, size * (r % m))
        return a & -a

    def _mem_access(self, buf: BufferInfo, inst: ir.Instruction) -> ir.Instruction:
        """Tag a load/store of `buf` with its alias scope; `build` attaches the metadata at the end."""
        if buf.scope:
            self._scoped.append((buf.scope, inst))
        return inst

    def _alias_metadata(self) -> None:
        """Scoped-alias metadata: every access to a buffer is in that buffer's scope and does not alias
        the other scopes. Argument buffers get one scope each; all allocations share one (two
        allocations with disjoint lifetimes can reuse the same memory, so they are not told apart)."""
        names = sorted({sc for sc, _ in self._scoped})
        if len(names) < 2:
            return
        m = self.module
        domain = m.add_metadata([ir.MetaDataString(m, f"{self.name}.buffers")])
        scopes = {n: m.add_metadata([ir.MetaDataString(m, f"{self.name}.{n}"), domain]) for n in names}
        lists = {n: (m.add_metadata([scopes[n]]), m.add_metadata([scopes[o] for o in names if o != n]))
                 for n in names}
        for sc, inst in self._scoped:
            own, others = lists[sc]
            inst.set_metadata("alias.scope", own)
            inst.set_metadata("noalias", others)

    def _to_storage(self, v: ir.Value, et: ScalarType) -> ir.Value:
        if et.bits == 1:
            return self.b.zext(v, ir.VectorType(ir.IntType(8), v.type.count))
        return v

    def _entry_alloca(self, t: ir.Type, align: int = 128) -> ir.Value:
        """A stack slot in the function's entry block, where LLVM folds it into the frame (a static
        alloca) wherever the block places it."""
        entry = self.fn.entry_basic_block
        if self.b.block is entry:
            # Still emitting the entry block (a kernel with no argument checks before its first
            # allocation, e.g. a no_asserts target): insert at the builder's own position. Inserting
            # at the block's start through a second builder would leave this builder's insertion
            # index one place short, and the block's last instruction would land after its terminator.
            a = self.b.alloca(t)
        else:
            b = ir.IRBuilder(entry)
            b.position_at_start(entry)
            a = b.alloca(t)
        a.align = align
        return a

    def _scratch_alloca(self, t: ir.Type) -> ir.Value:
        """A stack slot for the lane-by-lane gathers/scatters and border windows (whose accesses
        declare element alignment only). On x86 it is aligned to 16 bytes, what the ABI keeps the
        stack at: one slot aligned beyond that makes LLVM realign the stack, which reserves %rbp as
        the frame pointer in the whole kernel, one general register fewer for every loop, so the hot
        loop spills (gaussian5x5: a row pointer swapped through a register, 80 instructions against
        Halide 21's 79, whose kernel has no such slot). Elsewhere 128: on HVX, LLVM raises the
        alignment of the slot's vector accesses to the slot's and uses aligned vmem."""
        return self._entry_alloca(t, 16 if self.target == "x86-avx2" else 128)

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

    def _loop_base(self, buf: BufferInfo) -> BufferInfo:
        """`buf` with its base pointer passed through an empty inline-asm statement, for a lane loop.
        The argument pointer lives through the whole kernel; where the register allocator spills
        it, it reloads it at its uses, so a lane loop reading it reloaded it in every lane (matmul
        hvx128: a 3-packet gather lane where 2 do). The opaque copy is a new value whose life is
        this loop: at most one reload, before the loop. Alias scope and alignment are `buf`'s (the
        loads carry them as metadata and explicit alignment)."""
        opaque = ir.InlineAsm(ir.FunctionType(buf.ptr.type, [buf.ptr.type]), "", "=r,0")
        return replace(buf, ptr=self.b.call(opaque, [buf.ptr]))

    def _loop_copy(self, arg: ir.Argument) -> ir.Value:
        """A copy of the kernel argument `arg`, made (empty inline asm) at the end of the innermost
        enclosing loop's preheader, once per loop and argument. Why: an argument lives through the
        whole kernel; when the register allocator spills it, LLVM 22 reloads it before each use,
        i.e. inside the loop, in every iteration, even with registers free there (depthwise_conv p1:
        x86 `movq 344(%rbx), %r8` for the input pointer in the 16-lane gather loop, 61 instructions
        against Halide 21's 60; arm64 `ldr x15, [x19, #904]` for the row stride the loop steps by,
        which waits behind the 16 lane loads in the load queue: 31 against 25 cycles an iteration
        in llvm-mca). The copy is a value whose life is this loop: at most one reload per entry to
        it, one loop further out, as Halide 21's code does. The call is declared to write memory
        no IR can see (`inaccessiblemem`), so LLVM neither hoists it out of the enclosing loop
        (where it would live as long as the argument again) nor merges copies, while loads and
        stores still move across it; `willreturn nounwind`, or what follows it in the enclosing
        loop would no longer be sure to run and LICM would keep a trapping division there (the
        gather's index c / dm: 16 idivl per row)."""
        frame = self._loops[-1]  # type: ignore[attr-defined]
        copy = frame.copies.get(arg.name)
        if copy is None:
            b = ir.IRBuilder(frame.pre)
            b.position_before(frame.pre.terminator)
            opaque = ir.InlineAsm(ir.FunctionType(arg.type, [arg.type]), "", "=r,0")
            copy = frame.copies[arg.name] = b.call(opaque, [arg])
            for attr in ("nounwind", "willreturn", "memory(inaccessiblemem: readwrite)"):
                set.add(copy.attributes, attr)  # llvmlite's attribute check predates memory(...)
        return copy

    def _loop_local_gather(self, buf: BufferInfo, idx: ir.Value) -> BufferInfo:
        """For a straight-line gather in a loop: `buf` with its base pointer read through
        `_loop_copy`, and, in place, the instructions of `idx`'s computation that vary in this loop
        with the arguments they read (the stride the loop steps by) read through it too. Only
        varying ones: an invariant part (the channel index c / dm) must stay free to leave the
        loop nest, and it could not leave the enclosing loop if it read a copy made there.
        Arguments only: any other value may be defined inside the loop. Alias scope and alignment
        are `buf`'s. Nothing changes outside a loop."""
        if not self._loops:  # type: ignore[attr-defined]
            return buf
        frame = self._loops[-1]  # type: ignore[attr-defined]
        blocks = self.fn.blocks[frame.blocks:]  # type: ignore[attr-defined]
        inside = {id(frame.head), id(frame.body)} | {id(bb) for bb in blocks}
        varies: dict[int, bool] = {}

        def localize(v: ir.Value) -> bool:
            """Whether `v` varies in the loop (an instruction of it reading a phi, load or call of
            it); reads the arguments of those that do through their copies."""
            if not isinstance(v, ir.Instruction) or id(v.parent) not in inside:
                return False
            if id(v) not in varies:
                varies[id(v)] = True  # phis, loads and calls; and a guard against revisits
                if not isinstance(v, (ir.PhiInstr, ir.LoadInstr, ir.CallInstr)):
                    varies[id(v)] = any([localize(op) for op in v.operands])
                    if varies[id(v)]:
                        for op in v.operands:
                            if isinstance(op, ir.Argument) and isinstance(op.type, ir.IntType):
                                v.replace_usage(op, self._loop_copy(op))
            return varies[id(v)]

        localize(idx)
        if isinstance(buf.ptr, ir.Argument):
            buf = replace(buf, ptr=self._loop_copy(buf.ptr))
        return buf

    def _gather(self, buf: BufferInfo, st: ScalarType, idx: ir.Value, lanes: int,
                mask: Optional[ir.Value] = None, border: bool = False) -> ir.Value:
        """Lane-by-lane load of `buf[idx[k]]`; lanes whose `mask` bit is false are not read (zero).
        `border`: the slow path of a border window, which runs only at image edges: kept a compact
        lane loop beyond SHORT_GATHER_DEFAULT lanes (written out, sobel3x3's x86 kernel grew by 325
        lines and its hot loop by 2 instructions, through register allocation), and given no
        loop-local copies of its addresses (`_loop_local_gather`): those would hold registers through
        the hot loop around it (conv3x3a16 arm64: same 52-instruction loop, static estimate +1.2%)."""
        et = ir.IntType(_storage(st).bits)
        if mask is None and lanes <= (SHORT_GATHER_DEFAULT if border else short_gather(self.target)):
            # Few lanes (fully_connected's rfactor intermediates at stride 4, in the inner loop; on
            # x86 camera_pipe's 32-lane tone-curve lookup, which as a lane loop through two stack
            # slots ran at 0.65x of Halide 21's speed, whose code reads the table lane by lane too):
            # straight-line loads, which LLVM schedules and combines, instead of a loop per vector.
            # A float buffer's lanes are read and inserted as floats on x86, as Halide's code does
            # (vmovss + vinsertps): inserted as their integer bits they became vmovd + vpinsrd, whose
            # vector then crosses from the integer to the float domain on its way into float
            # arithmetic (bilateral_grid's slicing stage, 8-lane gathers of the grid: 4.8% more CPU
            # than Halide's, session 16). The vector is handed back as integer bits, like every load.
            lt = et
            if (self.target == "x86-avx2" and buf.elem is not None and buf.elem.code == "float"
                    and buf.elem.bits in (32, 64) and buf.elem.bits == et.width):
                lt = ir.FloatType() if et.width == 32 else ir.DoubleType()
            v: ir.Value = undef(ir.VectorType(lt, lanes))
            idx = self._index32(idx)
            if not border:
                buf = self._loop_local_gather(buf, idx)
                if (self.target == "x86-avx2" and lt == ir.FloatType() and lanes in (8, 16, 32)
                        and self.passes.on("x86_float_gathers")):  # type: ignore[attr-defined]
                    return self._avx2_gather(buf, idx, lanes)
            for k in range(lanes):
                ix = self.b.extract_element(idx, ir.Constant(ir.IntType(32), k))
                x = self._mem_access(buf, self.b.load(self._elem_ptr(buf, st, ix, lt), align=self._align(buf, st, None)))
                v = self.b.insert_element(v, x, ir.Constant(ir.IntType(32), k))
            return v if lt is et else self.b.bitcast(v, ir.VectorType(et, lanes))
        idx_mem = self._scratch_alloca(ir.ArrayType(ir.IntType(32), lanes))
        out_mem = self._scratch_alloca(ir.ArrayType(et, lanes))
        self.b.store(self._index32(idx), self.b.bitcast(idx_mem, ir.PointerType(ir.VectorType(ir.IntType(32), lanes))),
                     align=4)
        if mask is not None:
            self.b.store(ir.Constant(ir.VectorType(et, lanes), [0] * lanes),
                         self.b.bitcast(out_mem, ir.PointerType(ir.VectorType(et, lanes))), align=1)
        mask_mem = self._mask_memory(mask, lanes)
        zero = ir.Constant(ir.IntType(32), 0)
        buf = self._loop_base(buf)

        def body(k: ir.Value) -> None:
            def one() -> None:
                ix = self.b.load(self.b.gep(idx_mem, [zero, k]), align=4)
                x = self._mem_access(buf, self.b.load(self._elem_ptr(buf, st, ix, et), align=self._align(buf, st, None)))
                self.b.store(x, self.b.gep(out_mem, [zero, k]), align=1)

            self._if_lane(mask_mem, k, one)

        self._lane_loop(lanes, body)
        return self.b.load(self.b.bitcast(out_mem, ir.PointerType(ir.VectorType(et, lanes))), align=1)

    def _avx2_gather(self, buf: BufferInfo, idx: ir.Value, lanes: int) -> ir.Value:
        """x86-avx2: the unmasked straight-line gather of a float32 buffer (`lanes` 8, 16 or 32,
        `idx` <lanes x i32>) as `vgatherdps`, 8 lanes each (llvm.x86.avx2.gather.d.ps.256, all lanes
        enabled, scale 4): lane k reads buf[sext(idx[k])], the address the lane-by-lane form reads, and
        the result is the loaded bits (a load only). Halide 21's x86 code, and LLVM's own lowering
        of a gather for an AVX2 target without AVX-512, reads the lanes one by one: per 8 lanes 8
        `vpextrd`/`vmovd` + 8 `movslq` + 8 `vinsertps`/`vmovss` + 2 128-bit moves, half of them on
        one shuffle port. Bilateral_grid's slicing stage (16 gathers of the grid per 8 pixels, 65%
        of its time) is where it counts. Returned as integer bits, like every load. The codegen pass
        `x86_float_gathers` chooses it, on by default only where LLVM's tuning for the compiling host's CPU
        uses vgatherdps itself (Intel Skylake and later; not Haswell or AMD Zen, where local_laplacian ran
        ~10% slower with it: codegen/float_gather_cpu.py); `enable_passes` / `disable_passes` force it
        either way (one module serves the JIT and object_file(): code for another machine chooses)."""
        b = self.b
        i8, i32, f32 = ir.IntType(8), ir.IntType(32), ir.FloatType()
        vf, vi = ir.VectorType(f32, 8), ir.VectorType(i32, 8)
        gather = self._intrinsic("llvm.x86.avx2.gather.d.ps.256", vf, [vf, ir.PointerType(i8), vi, vf, i8])
        base = b.bitcast(buf.ptr, ir.PointerType(i8))
        on = b.bitcast(ir.Constant(vi, [-1] * 8), vf)  # every lane's mask bit (the sign bit) set
        parts = []
        for k in range(0, lanes, 8):
            part = idx if lanes == 8 else b.shuffle_vector(idx, idx, ir.Constant(vi, list(range(k, k + 8))))
            parts.append(self._mem_access(buf, b.call(gather, [undef(vf), base, part, on, ir.Constant(i8, 4)])))
        while len(parts) > 1:  # concatenate in lane order
            n = parts[0].type.count
            parts = [b.shuffle_vector(parts[j], parts[j + 1], ir.Constant(ir.VectorType(i32, 2 * n), list(range(2 * n))))
                     for j in range(0, len(parts), 2)]
        return b.bitcast(parts[0], ir.VectorType(i32, lanes))

    def _clamped_gather(self, buf: BufferInfo, st: ScalarType, parts: ClampedRamp,
                        index: ir.Value, lanes: int, node: H.Node) -> ir.Value:
        """`buf[clamp(ramp(B, 1, n), LO, HI) + OFF]` (an image border under repeat_edge) without a lane
        loop: with s = clamp(B, LO, HI - n + 1) every clamped index lies in [s, s + n - 1], so one dense
        load D = buf[s + OFF .. s + OFF + n - 1] holds every value, and the result is the n-lane window
        at offset n + clamp(B - s, -n, n) of [splat(D[0]), D, splat(D[n - 1])] (through a stack slot),
        or D itself where B = s (no lane clamped). Used when HI - LO >= n - 1 and D lies inside the
        buffer's elements (its dims, checked at run time); otherwise the lane-by-lane gather of `index`
        (the index vector) runs.

        Away from the border (HI - LO >= n - 1 and B = s) the load at B + OFF is the result with no
        bounds check and no stack round trip, tested before anything else: there LO <= B and
        B + n - 1 <= HI, so no lane is clamped under either min/max order, and the indices B + OFF + k
        are the addresses the gather reads. Both conditions are needed: on an image narrower than
        the vector (HI - LO < n - 1), s = HI - n + 1 can equal B while B's first lanes lie below LO
        (test_clamped_loads.py, test_narrow_image_tile_at_its_top_clamp). blur x86, 1 thread (AOT
        driver, best of 200 calls, 5 interleaved rounds): checked form 1.23-1.27 ms, this 1.01-1.04 ms.
        (On hvx128 this path's code shape once led to a wrong answer through a `:mem_noshuf` packet;
        the backend no longer forms those: pitchfork/backend/machine.py `_init_llvm`.)"""
        b = self.b
        i32, i64 = ir.IntType(32), ir.IntType(64)
        base, lo, hi, off = (b.sext(self.scalar(x, node, nsw=False), i64)  # type: ignore[attr-defined]
                             for x in (parts.base, parts.lo, parts.hi, parts.off))
        n = ir.Constant(i64, lanes)
        s = b.select(b.icmp_signed("<", base, lo), lo, base)
        top = b.sub(hi, ir.Constant(i64, lanes - 1))
        s = b.select(b.icmp_signed(">", s, top), top, s)
        first = b.add(s, off)
        et = ir.IntType(_storage(st).bits)
        vt = ir.VectorType(et, lanes)
        align = self._align(buf, st, None)
        wide = b.icmp_signed(">=", b.sub(hi, lo), ir.Constant(i64, lanes - 1))  # loop-invariant: hoisted
        interior = self.fn.append_basic_block("border_interior")
        border = self.fn.append_basic_block("border_check")
        done = self.fn.append_basic_block("border_done")
        b.cbranch(b.and_(wide, b.icmp_signed("==", base, s)), interior, border)
        b.position_at_end(interior)
        inner_v = self._mem_access(buf, b.load(self._elem_ptr(buf, st, first, vt), align=align))
        interior_end = b.block
        b.branch(done)
        b.position_at_end(border)
        last_ok = ir.Constant(i64, 0)  # the buffer's last element index: sum (extent - 1) * stride
        ok = wide
        for _, ext, stride in buf.dims:
            ok = b.and_(ok, b.icmp_signed(">=", b.sext(stride, i64), ir.Constant(i64, 0)))
            last_ok = b.add(last_ok, b.mul(b.sub(b.sext(ext, i64), ir.Constant(i64, 1)), b.sext(stride, i64)))
        ok = b.and_(ok, b.icmp_signed(">=", first, ir.Constant(i64, 0)))
        ok = b.and_(ok, b.icmp_signed("<=", b.add(first, ir.Constant(i64, lanes - 1)), last_ok))
        fast = self.fn.append_basic_block("border_window")
        slow = self.fn.append_basic_block("border_gather")
        b.cbranch(ok, fast, slow)
        b.position_at_end(fast)
        d = self._mem_access(buf, b.load(self._elem_ptr(buf, st, first, vt), align=align))

        def window_shift() -> ir.Value:  # clamp(base - s, -n, n)
            shift = b.sub(base, s)
            shift = b.select(b.icmp_signed("<", shift, b.neg(n)), b.neg(n), shift)
            return b.select(b.icmp_signed(">", shift, n), n, shift)

        if self.target == "x86-avx2" and lanes == 8 and buf.elem is not None and buf.elem.code == "float" \
                and buf.elem.bits == 32 == et.width:
            fast_v = self._window_permute(d, window_shift())
        else:
            # Only the vectors that straddle the border shift through the stack (three vector stores,
            # one load across two of them, which store forwarding cannot serve). (The shift is built
            # after the stores, in this order since it was written: the integer kernels' objects
            # depend on the instruction order.)
            slot = self._scratch_alloca(ir.ArrayType(et, 3 * lanes))
            for k, part in enumerate((b.shuffle_vector(d, d, mask([0] * lanes)), d,
                                      b.shuffle_vector(d, d, mask([lanes - 1] * lanes)))):
                at = b.gep(slot, [ir.Constant(i32, 0), ir.Constant(i32, k * lanes)], inbounds=True)
                b.store(part, b.bitcast(at, ir.PointerType(vt)), align=1)
            at = b.gep(slot, [ir.Constant(i64, 0), b.add(n, window_shift())], inbounds=True)
            fast_v = b.load(b.bitcast(at, ir.PointerType(vt)), align=1)
        fast_end = b.block
        b.branch(done)
        b.position_at_end(slow)
        slow_v = self._gather(buf, st, index, lanes, border=True)
        slow_end = b.block
        b.branch(done)
        b.position_at_end(done)
        v = b.phi(vt)
        v.add_incoming(inner_v, interior_end)
        v.add_incoming(fast_v, fast_end)
        v.add_incoming(slow_v, slow_end)
        return v

    def _window_permute(self, d: ir.Value, shift: ir.Value) -> ir.Value:
        """The border window of `_clamped_gather` in registers (x86-avx2, 8 float lanes): lane k of
        [splat(d[0]), d, splat(d[7])] at offset 8 + shift (shift in [-8, 8]) is d[clamp(shift + k, 0, 7)],
        one `vpermps` (a pure lane move: the values are d's bits). Float buffers only: integer kernels
        keep the stack window, so their selected code stays byte-identical; the stack form costs
        three stores and a reload that store forwarding cannot serve, in every border vector (interpolate
        x86: ~80 stack stores, ~40 reloads and ~80 broadcasts in its border loops)."""
        b = self.b
        vi, vf = ir.VectorType(ir.IntType(32), 8), ir.VectorType(ir.FloatType(), 8)
        k = b.add(self._splat(b.trunc(shift, ir.IntType(32)), i32, 8), ir.Constant(vi, list(range(8))))
        k = b.select(b.icmp_signed("<", k, ir.Constant(vi, [0] * 8)), ir.Constant(vi, [0] * 8), k)
        k = b.select(b.icmp_signed(">", k, ir.Constant(vi, [7] * 8)), ir.Constant(vi, [7] * 8), k)
        permps = self._intrinsic("llvm.x86.avx2.permps", vf, [vf, vi])
        return b.bitcast(b.call(permps, [b.bitcast(d, vf), k]), d.type)

    def _scatter(self, buf: BufferInfo, st: ScalarType, idx: ir.Value, val: ir.Value, lanes: int,
                 mask: Optional[ir.Value] = None) -> None:
        """Lane-by-lane store of `val[k]` to `buf[idx[k]]`, in lane order (a later lane wins), skipping
        lanes whose `mask` bit is false."""
        et = ir.IntType(_storage(st).bits)
        if mask is None and lanes <= short_gather(self.target):
            idx = self._index32(idx)
            for k in range(lanes):  # straight-line, in lane order (see _gather)
                ix = self.b.extract_element(idx, ir.Constant(ir.IntType(32), k))
                x = self.b.extract_element(val, ir.Constant(ir.IntType(32), k))
                self._mem_access(buf, self.b.store(x, self._elem_ptr(buf, st, ix, et), align=self._align(buf, st, None)))
            return
        idx_mem = self._scratch_alloca(ir.ArrayType(ir.IntType(32), lanes))
        val_mem = self._scratch_alloca(ir.ArrayType(et, lanes))
        self.b.store(self._index32(idx), self.b.bitcast(idx_mem, ir.PointerType(ir.VectorType(ir.IntType(32), lanes))),
                     align=4)
        self.b.store(val, self.b.bitcast(val_mem, ir.PointerType(val.type)), align=1)
        mask_mem = self._mask_memory(mask, lanes)
        zero = ir.Constant(ir.IntType(32), 0)
        buf = self._loop_base(buf)

        def body(k: ir.Value) -> None:
            def one() -> None:
                ix = self.b.load(self.b.gep(idx_mem, [zero, k]), align=4)
                x = self.b.load(self.b.gep(val_mem, [zero, k]), align=1)
                self._mem_access(buf, self.b.store(x, self._elem_ptr(buf, st, ix, et), align=self._align(buf, st, None)))

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
        mem = self._scratch_alloca(ir.ArrayType(ir.IntType(8), lanes))
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

    def _hvx_window(self, e: H.Load, node: H.Node) -> Optional[ir.Value]:
        """A dense, unpredicated HVX load narrower than a register, as the whole register starting at
        its first element (the wanted lanes first, the rest don't-care), from `_hvx_aligned_window`.
        Hexagon has no cheap sub-register vector load (LLVM loads such a vector byte by byte), and an
        unaligned `vmemu` of a whole register could read past the buffer into an unmapped page.
        None if `e` is not such a load."""
        ramp = self._dense(e.index)
        st = _storage(e.type.elem.to_fpir()) if e.type.is_integer and not e.type.is_bool else None
        if self.target != "hvx128" or ramp is None or e.predicate is not None or st is None \
                or st.bits < 8 or e.type.lanes * st.bits >= 1024:
            return None
        return self._hvx_aligned_window(self._buffer(e.buffer, node), e.type.elem.to_fpir(),
                                        self.address_index(ramp, node), e.type.lanes)

    def _hvx_misaligned_load(self, buf: BufferInfo, st: ScalarType, index: ir.Value, lanes: int,
                             alignment: Optional[tuple[int, int]]) -> Optional[ir.Value]:
        """A dense load of whole HVX registers whose first byte lies a known, nonzero distance `rb`
        past a 128-byte boundary (a 128-aligned base and Halide's `aligned(m, r)` with m*size a
        multiple of 128), as Halide's Hexagon backend emits it: the aligned blocks holding its bytes,
        each result register `valign`ed from two neighbours. The loads of x, x+1, x+2, ... of one row
        then share their aligned blocks (LLVM merges equal loads), where unaligned `vmemu` loads
        each need their own address register and load slot (conv3x3a32's loop: 18 pointers, spilled).
        Every block holds a byte the program reads (rb > 0, so the last block holds the last byte):
        an aligned block never crosses a page, so this reads nothing the original load would not
        fault on. None where the misalignment is not known to be a nonzero constant."""
        rb = _hvx_block_offset(buf, st, lanes, alignment)
        if rb is None:
            return None
        size = _storage(st).bits // 8
        regs = lanes * size // 128
        if rb == 0 and (regs == 1 or buf.name not in self._read_misaligned()):
            return None  # the plain aligned load (blocks only beside misaligned reads, see below)
        i8t, i32t = ir.IntType(8), ir.IntType(32)
        p = self._elem_ptr(buf, st, index, i8t)
        lo = self.b.gep(p, [ir.Constant(i32t, -rb)])  # not inbounds: a plain address computation
        blk = ir.VectorType(i32t, 32)
        blocks = [self._mem_access(buf, self.b.load(self.b.bitcast(self.b.gep(lo, [ir.Constant(i32t, 128 * j)])
                                                                   if j else lo, ir.PointerType(blk)), align=128))
                  for j in range(regs + (1 if rb else 0))]
        if rb == 0:
            # An aligned load of several registers, also as register blocks: LLVM merges it with the
            # blocks of its misaligned neighbours only when the types agree (a <128 x i16> load
            # beside <32 x i32> blocks became an extract from <2 x i1024>, which the Hexagon backend
            # builds word by word through the stack: gaussian5x5's loop grew to 724 instructions).
            parts = blocks
        else:
            # The intrinsic, not a two-source shufflevector: LLVM lowered the shuffle form of
            # 16-bit rows (gaussian5x5) to vror/vinsert chains.
            valign = self._intrinsic("llvm.hexagon.V6.valignb.128B", blk, [blk, blk, i32t])
            parts = [self.b.call(valign, [blocks[j + 1], blocks[j], ir.Constant(i32t, rb)]) for j in range(regs)]
        whole = parts[0]
        if regs > 1:
            from pitchfork.codegen.expr import ExprEmitter

            whole = ExprEmitter(self.b, 32 * regs, {}, self.target).concat(parts, 32 * regs)
        return self.b.bitcast(whole, ir.VectorType(ir.IntType(_storage(st).bits), lanes))

    def _hvx_valign_leaf(self, leaf: Leaf, node: H.Node) -> bool:
        """Whether `_emit_leaf` emits `leaf` as `valign`s of aligned blocks (hvx128, isel=pitchfork):
        a value computed for its reader alone, where an aligned load's blocks are shared with the
        misaligned loads of the same row (pitchfork.codegen.hvx_accumulate)."""
        e = leaf.node
        if leaf.kind != "load" or not isinstance(e, H.Load) or e.predicate is not None \
                or self._dense(e.index) is None or e.buffer not in self.buffers:
            return False
        rb = _hvx_block_offset(self.buffers[e.buffer], leaf.type, leaf.lanes, e.alignment)
        return bool(rb)

    def _read_misaligned(self) -> frozenset[str]:
        """Buffers some dense vector load of the statement reads at a nonzero remainder of its
        alignment modulus (the stencil rows whose aligned loads share blocks with misaligned ones).
        Aligned multi-register loads of other buffers stay plain loads: as blocks they made
        matmul's loop slower (703870 vs 514080 estimated packets)."""
        got = getattr(self, "_misaligned_bufs", None)
        if got is None:
            stmt = self.stmt  # type: ignore[attr-defined]
            got = frozenset(n.buffer for n in H.walk(stmt) if isinstance(n, H.Load) and n.alignment is not None
                            and n.alignment[0] > 1 and n.alignment[1] % n.alignment[0] and n.type.is_vector)
            self._misaligned_bufs = got
        return got

    def _dense(self, index: H.Expr) -> Optional[H.Expr]:
        if isinstance(index, H.Ramp) and isinstance(index.stride, H.IntImm) and index.stride.value == 1:
            return index.base
        return None

    def _intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    # ---- clamped dense loads on HVX (boundary conditions) ----------------------------------
    def _clamped_ramp_load(self, buf: BufferInfo, st: ScalarType, shape: ClampedRamp, lanes: int,
                           node: H.Node) -> Optional[ir.Value]:
        """`buf[clamp(ramp(b, 1, L), lo, hi) + off]` (what `repeat_edge` / `clamp` boundary conditions
        leave in the border tiles Halide's loop partitioning splits off) as one dense load plus two
        broadcasts, instead of an L-lane gather loop.

        Lane i reads `buf[b + i + off]` when lo <= b + i <= hi; the lanes below lo all read the
        element lane 0 reads, the lanes above hi the element lane L-1 reads (both computed with the
        index's own min/max order, so `hi < lo` is exact too). The in-range lanes come from
        `_hvx_aligned_window`, which reads only aligned vectors holding elements the gather would read.
        Only on hvx128, where a gather costs ~2 packets per lane and vectors are whole registers
        (`_masked_ok`). Returns None where that does not hold or the index is not 32-bit.
        """
        if not self.passes.on("hvx_clamped_loads") or st.bits == 1 or not self._masked_ok(lanes, st):  # type: ignore[attr-defined]
            return None
        i32t = ir.IntType(32)
        b, lo, hi, offv = (self.scalar(x, node) for x in (shape.base, shape.lo, shape.hi, shape.off))
        if any(v.type != i32t for v in (b, lo, hi, offv)):
            return None

        def clamp(x: ir.Value) -> ir.Value:  # the index's own min/max nest
            inner, outer = ((hi, ">"), (lo, "<")) if shape.lo_outer else ((lo, "<"), (hi, ">"))
            for c, cmp in (inner, outer):
                x = self.b.select(self.b.icmp_signed(cmp, x, c), c, x)
            return x

        last = self.b.add(b, ir.Constant(i32t, lanes - 1))
        et = ir.IntType(_storage(st).bits)
        first_v = self._mem_access(buf, self.b.load(self._elem_ptr(buf, st, self.b.add(clamp(b), offv), et),
                                                    align=self._align(buf, st, None)))
        last_v = self._mem_access(buf, self.b.load(self._elem_ptr(buf, st, self.b.add(clamp(last), offv), et),
                                                   align=self._align(buf, st, None)))
        # Lane masks from a constant lane-number vector, of the element's width where the lane count
        # fits (the predicate layout HVX compares produce directly): `below` = b+i < lo, i.e. i < k1;
        # `above` = b+i > hi, i.e. i >= k2 (k1, k2 clamped to [0, L], which then fits too).
        bits = next(w for w in (et.width, 16, 32) if w >= et.width and lanes < (1 << w))
        it = ir.IntType(bits)
        iota = vector(bits, range(lanes))

        def lane_count(x: ir.Value) -> ir.Value:  # clamp to [0, L] and narrow to the iota's type
            x = self.b.select(self.b.icmp_signed("<", x, ir.Constant(i32t, 0)), ir.Constant(i32t, 0), x)
            x = self.b.select(self.b.icmp_signed(">", x, ir.Constant(i32t, lanes)), ir.Constant(i32t, lanes), x)
            return self._splat(self.b.trunc(x, it) if bits < 32 else x, ScalarType(False, bits), lanes)

        below = self.b.icmp_unsigned("<", iota, lane_count(self.b.sub(lo, b)))
        above = self.b.icmp_unsigned(">=", iota, lane_count(self.b.add(self.b.sub(hi, b), ir.Constant(i32t, 1))))
        vt = ir.VectorType(et, lanes)
        dense = self._hvx_aligned_window(buf, st, self.b.add(b, offv), lanes,
                                         (self.b.add(clamp(b), offv), self.b.add(clamp(last), offv)))
        v = self.b.select(above, self._splat(last_v, _storage(st), lanes), dense)
        return self.b.select(below, self._splat(first_v, _storage(st), lanes), v)

    def _hvx_aligned_window(self, buf: BufferInfo, st: ScalarType, start: ir.Value, lanes: int,
                            valid: Optional[tuple[ir.Value, ir.Value]] = None) -> ir.Value:
        """The `lanes` elements from index `start` as whole registers (fewer than a register's worth:
        one register, those lanes first), built like an unaligned load from aligned 128-byte blocks
        combined with `valign`, so that only aligned blocks are read: an aligned HVX vector never
        crosses a page, so reading a block that holds an element the program reads never faults.

        `valid` None: every one of the elements is read by the program; the blocks are those of the
        first byte onwards, the last one the block of the last byte (the next block exactly when the
        range crosses a boundary), addressed from the element pointer (in bounds).
        `valid` = (first, last) (border tiles): only the elements in [first, last] are known to be
        read, and `start` may lie far outside the buffer; the result is exact for the lanes inside
        [first, last], and every block is clamped into the blocks holding them. Byte addresses are
        then plain integers: an `inbounds` GEP out there would be poison, which LLVM used to delete
        the kernel's checks. (A plain unaligned load of a border tile reaching far past the image
        crashed under qemu, and LLVM lowers llvm.masked.load to exactly such a load.)

        (Reading the blocks with `vmem` from unaligned addresses, claiming 128-byte alignment, saves
        the masking but is wrong: LLVM's Hexagon backend then treats both loads as one block, and
        matmul on hvx128 gave wrong results.)"""
        i32t = ir.IntType(32)
        size = _storage(st).bits // 8
        regs = max(1, lanes * size // 128)
        blk = ir.VectorType(i32t, 32)
        if valid is None:
            p = self._elem_ptr(buf, st, start, ir.IntType(8))
            shift = self.b.and_(self.b.ptrtoint(p, i32t), ir.Constant(i32t, 127))
            lo = self.b.gep(p, [self.b.sub(ir.Constant(i32t, 0), shift)])
            last = self.b.and_(self.b.add(shift, ir.Constant(i32t, lanes * size - 1)), ir.Constant(i32t, -128))
            addrs = [self.b.gep(lo, [ir.Constant(i32t, 128 * j)]) if j else lo for j in range(regs)]
            ptrs = [self.b.bitcast(q, ir.PointerType(blk)) for q in addrs + [self.b.gep(lo, [last])]]
        else:
            base = self.b.ptrtoint(buf.ptr, i32t)

            def addr(index: ir.Value) -> ir.Value:
                return self.b.add(base, self.b.mul(index, ir.Constant(i32t, size)))

            mask = ir.Constant(i32t, -128)
            a = addr(start)
            a0 = self.b.and_(a, mask)
            low = self.b.and_(addr(valid[0]), mask)
            high = self.b.and_(self.b.add(addr(valid[1]), ir.Constant(i32t, size - 1)), mask)
            ptrs = []
            for j in range(regs + 1):
                aj = self.b.add(a0, ir.Constant(i32t, 128 * j))
                aj = self.b.select(self.b.icmp_unsigned("<", aj, low), low, aj)
                aj = self.b.select(self.b.icmp_unsigned(">", aj, high), high, aj)
                ptrs.append(self.b.inttoptr(aj, ir.PointerType(blk)))
            shift = self.b.sub(a, a0)
        blocks = [self._mem_access(buf, self.b.load(q, align=128)) for q in ptrs]
        valign = self._intrinsic("llvm.hexagon.V6.valignb.128B", blk, [blk, blk, i32t])
        parts = [self.b.call(valign, [blocks[r + 1], blocks[r], shift]) for r in range(regs)]
        whole = parts[0]
        if regs > 1:
            from pitchfork.codegen.expr import ExprEmitter

            whole = ExprEmitter(self.b, 32 * regs, {}, self.target).concat(parts, 32 * regs)
        return self.b.bitcast(whole, ir.VectorType(ir.IntType(_storage(st).bits), regs * 1024 // _storage(st).bits))


def _hvx_block_offset(buf: BufferInfo, st: ScalarType, lanes: int,
                      alignment: Optional[tuple[int, int]]) -> Optional[int]:
    """The byte distance past a 128-byte boundary at which a dense load of whole HVX registers
    starts, when the buffer's alignment and Halide's `aligned(m, r)` fact determine it (see
    `_hvx_misaligned_load`); None where they do not."""
    size = _storage(st).bits // 8
    if alignment is None or buf.align % 128 or (lanes * size) % 128 or st.bits == 1:
        return None
    m, r = alignment
    if m <= 1 or (m * size) % 128:
        return None
    return (size * (r % m)) % 128
