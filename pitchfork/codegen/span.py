"""Gathers with a lane-monotone index as table lookups: the index's form, and AArch64's `tbl`.

A Halide load `buf[M + OFF]` of bytes, with M = `ramp(B, S, L)` or `ramp(B, S, L) / D` and OFF, D
scalars, is a gather (depthwise_conv's `input[ramp(c, 1, L) / depth_multiplier + row]`: runtime
depth multiplier, strides and dilations). Halide's division is monotone in the dividend for any D
(D = 0 gives 0), so each lane of M lies between its first and last lanes, [lo, hi]. When hi - lo is
small (checked at run time), every element the gather reads is in a short window of `buf`, and the
gather is a lookup in that window. `span_parts` recognises the form (shared with the HVX vlut32
version, `codegen_lut._hvx_span_gather`); `_arm_span_gather` is the arm64 lookup:

per 16 lanes with hi - lo < 16, the elements lie in the 16-byte-aligned block of `buf + lo + OFF`
and the block of `buf + hi + OFF` (the same block, or the next one); both are loaded whole and
`tbl` (two-register table) picks lane i at byte (M[i] - lo) + ((buf + lo + OFF) mod 16) of the pair.
M - lo and its narrowing to bytes do not depend on OFF, so in a loop over OFF (depthwise_conv's x
loop) they are loop-invariant; the loop keeps two loads, a few scalar operations, an add and the
`tbl`, against 16 lane extractions, address additions and lane loads. Otherwise (a wider span) the
lane-by-lane gather runs.

Invariant: only aligned 16-byte blocks are read, each holding an element the gather itself reads,
so no read crosses into a page the program does not touch (an aligned block never crosses a page);
the block addresses are computed without `inbounds`. Both isels use it, as they share the loop-nest
code generation (the HVX form does the same).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from llvmlite import ir

from fpir.types import ScalarType
from pitchfork.frontend import ir as H
from pitchfork.codegen.base import BufferInfo
from pitchfork.codegen.ir_constants import mask, undef
from pitchfork.frontend.htypes import Int

#: bytes of one Neon register: the lanes one `tbl` produces
NEON_BYTES = 16


@dataclass(frozen=True)
class SpanIndex:
    """`index` = M + off with M = `ramp` or `ramp / den` (M's expression is `monotone`)."""

    monotone: H.Expr
    ramp: H.Ramp
    den: Optional[H.Expr]
    off: Optional[H.Expr]

    def lane(self, j: int) -> H.Expr:
        """M at lane j, a scalar expression."""
        t = Int(32)
        x: H.Expr = H.BinOp("+", self.ramp.base, H.BinOp("*", self.ramp.stride, H.IntImm(j, t), t), t)
        return H.BinOp("/", x, self.den, t) if self.den is not None else x


def span_parts(index: H.Expr, src: Callable[[H.Expr], H.Expr]) -> Optional[SpanIndex]:
    """`index` as a SpanIndex (looking through vector lets with `src`), or None. An i32 index only."""
    if index.type.elem != Int(32):
        return None
    e, off = src(index), None
    if isinstance(e, H.BinOp) and e.op == "+":
        a, c = src(e.a), src(e.b)
        if isinstance(c, H.Broadcast):
            e, off = a, c.value
        elif isinstance(a, H.Broadcast):
            e, off = c, a.value
    monotone, den = e, None
    if isinstance(e, H.BinOp) and e.op == "/" and isinstance(src(e.b), H.Broadcast):
        den = src(e.b).value  # type: ignore[attr-defined]
        e = src(e.a)
    if not isinstance(e, H.Ramp):
        return None
    return SpanIndex(monotone, e, den, off)


class SpanMixin:
    """`_arm_span_gather`; needs `b`, `fn`, `target`, `scalar`, `vector`, `_splat`, `_elem_ptr`,
    `_mem_access`, `_intrinsic`, `_gather` and `_vector_source` of LoopNestCodegen / MemoryMixin."""

    b: ir.IRBuilder
    target: str

    def _arm_span_gather(self, buf: BufferInfo, st: ScalarType, index: H.Expr, lanes: int,
                         node: H.Node) -> Optional[ir.Value]:
        """`buf[index]` by `tbl` over the aligned blocks around its span (module docstring), with the
        lane-by-lane gather as the fallback; None when not arm64, not bytes, not a power of two of
        whole registers, or the index is not of the form."""
        chunks = lanes // NEON_BYTES
        if self.target != "arm64" or not self.passes.on("span_gathers") or st.bits != 8 or lanes % NEON_BYTES \
                or chunks & (chunks - 1):  # type: ignore[attr-defined]
            return None
        parts = span_parts(index, self._vector_source)  # type: ignore[attr-defined]
        if parts is None:
            return None
        b = self.b
        i8t, i32t, i64t = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        reg = ir.VectorType(i8t, NEON_BYTES)
        bounds: list[tuple[ir.Value, ir.Value]] = []
        ok: Optional[ir.Value] = None
        for c in range(chunks):
            first, last = (self.scalar(parts.lane(j), node, nsw=False)  # type: ignore[attr-defined]
                           for j in (NEON_BYTES * c, NEON_BYTES * c + NEON_BYTES - 1))
            less = b.icmp_signed("<", first, last)
            lo, hi = b.select(less, first, last), b.select(less, last, first)
            # hi >= lo: the difference is exact as an unsigned 32-bit number even where it wraps
            fits = b.icmp_unsigned("<", b.sub(hi, lo), ir.Constant(i32t, NEON_BYTES))
            ok = fits if ok is None else b.and_(ok, fits)
            bounds.append((lo, hi))
        assert ok is not None
        def fast_tbl() -> ir.Value:
            m = self.vector(parts.monotone, node)  # type: ignore[attr-defined]
            off = self.scalar(parts.off, node, nsw=False) if parts.off is not None else None  # type: ignore[attr-defined]
            tbl2 = self._intrinsic("llvm.aarch64.neon.tbl2.v16i8", reg, [reg, reg, reg])  # type: ignore[attr-defined]
            zero64 = ir.Constant(i64t, 0)
            pieces = []
            for c, (lo, hi) in enumerate(bounds):
                blocks, shift = [], None
                for x in (lo, hi):
                    at = b.add(x, off) if off is not None else x
                    p = self._elem_ptr(buf, st, at, i8t)  # type: ignore[attr-defined]  # an element read
                    s = b.and_(b.ptrtoint(p, i64t), ir.Constant(i64t, NEON_BYTES - 1))
                    shift = shift if shift is not None else s
                    blk = b.bitcast(b.gep(p, [b.sub(zero64, s)]), ir.PointerType(reg))  # not inbounds
                    blocks.append(self._mem_access(buf, b.load(blk, align=NEON_BYTES)))  # type: ignore[attr-defined]
                mc = m if chunks == 1 else b.shuffle_vector(
                    m, undef(m.type),
                    mask(range(NEON_BYTES * c, NEON_BYTES * (c + 1))))
                rel = b.trunc(b.sub(mc, self._splat(lo, Int(32).to_fpir(), NEON_BYTES)), reg)  # type: ignore[attr-defined]
                k = b.add(rel, self._splat(b.trunc(shift, i8t), Int(8).to_fpir(), NEON_BYTES))  # type: ignore[attr-defined]
                pieces.append(b.call(tbl2, [blocks[0], blocks[1], k]))
            return pieces[0] if chunks == 1 else _concat(b, pieces)

        return self._fast_else_gather(ok, "span_tbl", fast_tbl, lambda: self._gather(  # type: ignore[attr-defined]
            buf, st, self.vector(index, node), lanes))  # type: ignore[attr-defined]

    def _fast_else_gather(self, ok: ir.Value, fast_name: str, fast: Callable[[], ir.Value],
                          slow: Callable[[], ir.Value]) -> ir.Value:
        """`ok ? fast() : slow()` as two blocks joined by a phi: the span lookups (tbl here, vlut32 in
        codegen_lut) with the lane-by-lane gather as the fallback."""
        b = self.b
        blocks = [self.fn.append_basic_block(n)  # type: ignore[attr-defined]
                  for n in (fast_name, "span_gather", "span_done")]
        b.cbranch(ok, blocks[0], blocks[1])
        incoming = []
        for block, make in zip(blocks[:2], (fast, slow)):
            b.position_at_end(block)
            value = make()
            incoming.append((value, b.block))
            b.branch(blocks[2])
        b.position_at_end(blocks[2])
        v = b.phi(incoming[0][0].type)
        for value, block in incoming:
            v.add_incoming(value, block)
        return v


def _concat(b: ir.IRBuilder, parts: list[ir.Value]) -> ir.Value:
    """A power of two of equal vectors, concatenated in order (pairwise shuffles)."""
    while len(parts) > 1:
        n = parts[0].type.count
        m = mask(range(2 * n))
        parts = [b.shuffle_vector(parts[i], parts[i + 1], m) for i in range(0, len(parts), 2)]
    return parts[0]
