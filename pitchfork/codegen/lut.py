"""Small lookup tables on HVX: a gather from a byte table of at most 256 entries as `vlut32`.

A Halide load `table[index]` with a vector index is a gather. On hvx128 a gather is a lane loop of
about two packets per lane (camera_pipe's tone curve spent 85% of its time in twelve such loops).
When the table's elements are bytes and the index is known (interval analysis of its FPIR term,
pitchfork.selection.bounds) to lie in [lo, lo + 255], Halide's own Hexagon backend reads the table into one or
two vector registers and looks all 128 lanes up at once with `vlut32` (`V6_vlutvvb` and its `|=`
form `V6_vlutvvb_oracc`); this module does the same. A mixin of LoopNestCodegen.

`Vd.b = vlut32(Vu.b, Vv.b, Rt)` (hvx128): lane i is `Vv.h[idx % 64].byte[(Rt >> 1) & 1]` when the
byte index `idx = Vu.ub[i]` satisfies `idx >> 5 == Rt & 7`, else 0. So one call covers a 32-entry
segment: entry `e` of a 128-entry register must sit at byte `2 * (e % 64) + e // 64`, which is
`vshuff(Vu.b)` (interleave the two 64-byte halves) of the table in memory order; segments 0-3 read
entries 0-127 from the first register, segments 4-7 entries 128-255 from the second (Rt = 4..7
gives the same byte positions). The results of the segments are OR-ed (`_oracc`): each lane matches
exactly one segment. Verified bit-exactly under qemu-hexagon (tests/pitchfork/codegen/test_lut.py).

Invariant: only tables in allocations are read this way. The table registers cover up to 255 bytes
past the last entry the index can reach, and every allocation has PADDING (512) bytes after it
(codegen_alloc.py), so the vector loads stay inside memory the kernel owns; argument buffers have no
such promise and keep the lane loop.
"""

from __future__ import annotations

import math
from typing import Optional

from llvmlite import ir

from fpir.ops import make
from fpir.term import Term, const
from fpir.types import ScalarType, u8
from pitchfork.selection.bounds import bounds
from pitchfork.frontend import ir as H
from pitchfork.codegen.base import BufferInfo, _storage
from pitchfork.codegen.ir_constants import mask, undef
from pitchfork.codegen.span import span_parts
from pitchfork.frontend.htypes import Int

#: bytes per HVX register (hvx128) and entries one vlut32 call looks up
REG_BYTES = 128
SEGMENT = 32


class LutMixin:
    """`_hvx_lut`; needs `b`, `target`, `to_term`, `_emit_term`, `_elem_ptr`, `_mem_access` and
    `_intrinsic` of LoopNestCodegen / MemoryMixin."""

    b: ir.IRBuilder
    target: str

    def _hvx_lut(self, buf: BufferInfo, st: ScalarType, index: H.Expr, lanes: int,
                 node: H.Node) -> Optional[ir.Value]:
        """`buf[index]` (byte elements, `lanes` lanes) by vlut32 table lookups, or None when the load
        is not one: not hvx128, not bytes, not an allocation, lanes not whole registers, or an index
        whose proven range is wider than 256 entries or may be negative."""
        if not self.passes.on("hvx_lut") or st.bits != 8 or buf.scope != "allocations" or lanes % REG_BYTES:  # type: ignore[attr-defined]
            return None
        term: Term = self.to_term(index, node)  # type: ignore[attr-defined]
        lo, hi = bounds(term)
        if lo < 0 or hi - lo >= 2 * REG_BYTES:
            return None
        # The index as table offsets in bytes: exact, since 0 <= index - lo <= 255.
        off = make("sub", term, const(lo, term.type)) if lo else term
        idx = self._emit_term(make("cast", off, type=u8), lanes, node)  # type: ignore[attr-defined]
        reg = ir.VectorType(ir.IntType(32), 32)
        tables = []
        first = self._elem_ptr(buf, _storage(st), ir.Constant(ir.IntType(64), lo), ir.IntType(8))  # type: ignore[attr-defined]
        for r in range((hi - lo) // REG_BYTES + 1):
            p = self.b.gep(first, [ir.Constant(ir.IntType(32), REG_BYTES * r)], inbounds=True)
            at = lo + REG_BYTES * r
            align = REG_BYTES if at % REG_BYTES == 0 else math.gcd(at, REG_BYTES)
            tables.append(self._mem_access(buf, self.b.load(self.b.bitcast(p, ir.PointerType(reg)), align=align)))  # type: ignore[attr-defined]
        return self._vlut(idx, tables, (hi - lo) // SEGMENT + 1, lanes)

    def _hvx_span_gather(self, buf: BufferInfo, st: ScalarType, index: H.Expr, lanes: int,
                         node: H.Node) -> Optional[ir.Value]:
        """`buf[M + OFF]` (byte elements) where M is lane-monotone: `ramp(B, S, L)` or `ramp(B, S, L) / D`
        (Halide's division is monotone in the dividend for any D; D = 0 gives 0), OFF and D scalars,
        L = 128 (at 256 lanes LLVM 22's Hexagon backend aborts, "Couldn't find the register class").
        Its lanes then lie between those of lanes 0 and L-1, [lo, hi]; when hi - lo < 128 (checked at
        run time) the values are in the 128-byte window of buf from lo (`_hvx_aligned_window`, which
        reads only aligned blocks holding elements the gather reads), looked up with vlut32 at
        `index - lo`; otherwise the lane-by-lane gather runs. (Halide itself rewrites constant-stride
        loads into dense loads and shuffles before this point.)
        depthwise_conv's `input[ramp(c, 1, L) / depth_multiplier + row]`, runtime strides. None when
        the load is not of that form (or not hvx128, bytes, 128 lanes)."""
        if self.target != "hvx128" or not self.passes.on("span_gathers") or st.bits != 8 or lanes not in (REG_BYTES,):  # type: ignore[attr-defined]
            return None
        parts = span_parts(index, self._vector_source)  # type: ignore[attr-defined]
        if parts is None:
            return None
        off = parts.off
        ends = [parts.lane(0), parts.lane(lanes - 1)]
        b = self.b
        i32t = ir.IntType(32)
        first, last = (self.scalar(x, node, nsw=False) for x in ends)  # type: ignore[attr-defined]
        lo = b.select(b.icmp_signed("<", first, last), first, last)
        hi = b.select(b.icmp_signed("<", first, last), last, first)
        span = b.sub(hi, lo)  # hi >= lo: exact as an unsigned 32-bit number even where it wraps
        ok = b.icmp_unsigned("<", span, ir.Constant(i32t, REG_BYTES))
        vec = self.vector(index, node)  # type: ignore[attr-defined]
        start = b.add(lo, self.scalar(off, node, nsw=False)) if off is not None else lo  # type: ignore[attr-defined]
        def fast_lut() -> ir.Value:
            k = b.trunc(b.sub(vec, self._splat(start, Int(32).to_fpir(), lanes)),  # type: ignore[attr-defined]
                        ir.VectorType(ir.IntType(8), lanes))
            window = self._hvx_aligned_window(buf, st, start, REG_BYTES,  # type: ignore[attr-defined]
                                              (start, b.add(start, span)))
            return self._vlut(k, [b.bitcast(window, ir.VectorType(i32t, 32))], 4, lanes)

        return self._fast_else_gather(ok, "span_lut", fast_lut,  # type: ignore[attr-defined]
                                      lambda: self._gather(buf, st, vec, lanes))  # type: ignore[attr-defined]

    def _vlut(self, idx: ir.Value, tables: list[ir.Value], segments: int, lanes: int) -> ir.Value:
        """`lanes` bytes: lane i is byte idx[i] of the concatenated `tables` (registers in memory order,
        `<32 x i32>`), for idx[i] < 32 * segments; vshuff + vlut32 / vlut32_or (module docstring)."""
        reg = ir.VectorType(ir.IntType(32), 32)
        i32t = ir.IntType(32)
        shuffle = self._intrinsic("llvm.hexagon.V6.vshuffb.128B", reg, [reg])  # type: ignore[attr-defined]
        tables = [self.b.call(shuffle, [t]) for t in tables]
        lut = self._intrinsic("llvm.hexagon.V6.vlutvvb.128B", reg, [reg, reg, i32t])  # type: ignore[attr-defined]
        lut_or = self._intrinsic("llvm.hexagon.V6.vlutvvb.oracc.128B", reg, [reg, reg, reg, i32t])  # type: ignore[attr-defined]
        chunks = []
        for c in range(lanes // REG_BYTES):
            part = idx if lanes == REG_BYTES else self.b.shuffle_vector(
                idx, undef(idx.type),
                mask(range(c * REG_BYTES, (c + 1) * REG_BYTES)))
            u = self.b.bitcast(part, reg)
            acc: Optional[ir.Value] = None
            for s in range(segments):
                tab, rt = tables[s // 4], ir.Constant(i32t, s)
                acc = self.b.call(lut, [u, tab, rt]) if acc is None else self.b.call(lut_or, [acc, u, tab, rt])
            assert acc is not None
            chunks.append(self.b.bitcast(acc, ir.VectorType(ir.IntType(8), REG_BYTES)))
        if len(chunks) == 1:
            return chunks[0]
        from pitchfork.codegen.expr import ExprEmitter

        return ExprEmitter(self.b, lanes, {}, self.target).concat(chunks, lanes)
