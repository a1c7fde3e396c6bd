"""x86: the operand of a 32 -> 16-bit pack computed in the lane order the pack consumes (no vpermq).

AVX2's vpackssdw/vpackusdw work per 128-bit half: pack(x, y) = [x0..3, y0..3 | x4..7, y4..7]. The
pack emitters (`pitchfork.targets.x86._pack`) restore natural lane order with a vpermq after each pack,
and the widenings feeding them cost cross-lane shuffles too (vextracti128 + vpmovsxwd from a register,
or a byte interleave + vpmovzxbw from a register). On the host (AMD Zen 3) those cross-lane shuffles
from a register take 2-3 times the issue slots of in-lane unpacks or of a vpmovzx from memory
(measured: 8 vpmovzxbw ymm,xmm 8.1 ns, 8 vpmovzxbw ymm,m128 3.4 ns, 8 vpunpcklbw 3.3 ns), and they
made conv3x3a32's hot loop slower than Halide 21's (96 instructions against 125, 0.86x its speed).

If each pair of 8-lane registers of the i32 operand holds, for its 16 output lanes o..o+15, the lanes
`PACK_ORDER` = o + [0, 1, 2, 3, 8, 9, 10, 11 | 4, 5, 6, 7, 12, 13, 14, 15], the in-lane pack puts
them in natural order by itself. That order is also the one the in-lane unpacks produce:
* a 16 -> 32-bit widening of 16 natural lanes X is vpunpcklwd/vpunpckhwd(X, X or 0) (+ vpsrad 16 for
  a sign extension): lanes [0..3, 8..11] and [4..7, 12..15];
* `x86.pmaddwd_pairs` over an 8 -> 16-bit widening of an interleave (a0, b0, a1, b1, ...) (the dot
  products `pitchfork.passes.dot_products` builds) is vpmaddwd of vpunpcklwd/vpunpckhwd(A, B), with A, B
  the 16-bit widenings of 16 lanes of a and b (vpmovzxbw from memory when a, b are loads);
* lane-wise ops keep any order; values equal in every lane (or in every other lane, for the pair
  operand) are their own reordering.

`pack_order_registers(em, term)` returns the operand's registers in that order when every leaf of the
term is one of those cases and the shuffle issue slots it saves (`COST`, measured on the host) exceed
what it adds (a 16-bit *load* widened in pack order takes unpacks where natural order reads it with
vpmovsxwd from memory), else None (the caller then emits as before). Invariant: register r
holds exactly the lanes PACK_ORDER says of the operand's value, so the pack's result is the same value
lane for lane as the natural-order emission; only the instructions differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from llvmlite import ir

from fpir.opspec import spec
from fpir.term import Term
from pitchfork.codegen.ir_constants import mask, undef

#: lanes of one 16-lane group of the pack operand, in the order its two registers hold them
PACK_ORDER = (0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15)
_LO = (0, 1, 2, 3, 8, 9, 10, 11)
_HI = (4, 5, 6, 7, 12, 13, 14, 15)

#: issue slots on the 2 shuffle pipes of the host (AMD Zen 3), in units of one in-lane unpack, per 16
#: lanes of the i32 pack operand (measured with 8 independent instructions in a loop: vpunpcklbw,
#: vpmovzx* from memory, vpsrad, vpmaddwd 1; vextracti128 2; vpmovzxbw/vpmovsxwd ymm from a register,
#: vpermq 2.5-3):
#: * pack_fixup: the natural-order pack's vpermq;
#: * widen16_load / widen16_reg: i32(x_16) in natural order from memory (2 vpmovsxwd m128) / from a
#:   register (vextracti128 + 2 vpmovsxwd); unpack_sext / unpack_zext: in pack order (2 vpunpck*wd,
#:   + 2 vpsrad for a sign extension);
#: * interleave_natural: LLVM's vpmaddwd operand i16(interleave(a, b)) (vpunpck*bw, vextracti128,
#:   2 vpmovzxbw from a register); interleave_load / _reg: in pair order (2 vpmovzxbw, from memory /
#:   from a register, + 2 vpunpck*wd).
COST = {"pack_fixup": 3.0, "widen16_load": 2.0, "widen16_reg": 7.0, "unpack_sext": 4.0, "unpack_zext": 2.0,
        "interleave_natural": 8.0, "interleave_load": 4.0, "interleave_reg": 7.0}

#: primitive lane-wise ops whose emitters work on any lane order (all operands lane-wise)
_LANE_WISE = frozenset({"add", "sub", "mul", "and", "or", "xor", "not", "min", "max", "shl", "shr", "select",
                        "abs", "reinterpret", "eq", "ne", "lt", "le", "gt", "ge"})


def _mask(idx: Sequence[int]) -> ir.Constant:
    return mask(idx)  # shared (pitchfork/codegen/ir_constants.py)


def _sources(v: ir.Value, depth: int) -> list[tuple[int, int]]:
    """Lane i of `v` as (id of a base value, its lane), looking through `depth` levels of
    shufflevectors (an undefined lane is (-1, -1))."""
    if depth > 0 and isinstance(v, ir.instructions.ShuffleVector):
        x, y, m = v.operands
        n = x.type.count
        sx, sy = _sources(x, depth - 1), _sources(y, depth - 1)
        out = []
        for c in m.constant:
            i = getattr(c, "constant", c)
            out.append((-1, -1) if not isinstance(i, int) else (sx[i] if i < n else sy[i - n]))
        return out
    if isinstance(v, ir.Constant) and isinstance(v.constant, list):
        # a constant vector: lanes with equal values share a source
        return [(hash(("const", str(c))), 0) for c in v.constant]
    return [(id(v), i) for i in range(v.type.count)]


def _period(v: ir.Value, p: int) -> bool:
    """Every lane of `v` equals the lane p before it (p = 1: a splat; 2: a repeated pair)."""
    if isinstance(v, ir.CastInstr) and v.opname == "bitcast" and isinstance(v.operands[0].type, ir.VectorType):
        # a splat of a k-lane-wide word (codegen's `_repeat`: a dot product's operand pair) repeats
        # every k lanes
        src = v.operands[0]
        k = v.type.count // src.type.count
        return k >= 1 and p % k == 0 and _period(src, 1)
    s = _sources(v, 3)
    return all(s[i] == s[i % p] and s[i][0] != -1 for i in range(len(s)))


def _interleave_halves(v: ir.Value) -> Optional[tuple[ir.Value, int, ir.Value, int]]:
    """`v` = (a[oa], b[ob], a[oa + 1], b[ob + 1], ...) for base values a, b: (a, oa, b, ob), else None."""
    n = v.type.count // 2
    for depth in (1, 2):
        s = _sources(v, depth)
        (ia, oa), (ib, ob) = s[0], s[1]
        if ia == -1 or ib == -1:
            continue
        if all(s[2 * i] == (ia, oa + i) and s[2 * i + 1] == (ib, ob + i) for i in range(n)):
            base = {id(x): x for x in _bases(v, depth)}
            if ia in base and ib in base:
                return base[ia], oa, base[ib], ob
    return None


def _bases(v: ir.Value, depth: int) -> list[ir.Value]:
    if depth > 0 and isinstance(v, ir.instructions.ShuffleVector):
        return _bases(v.operands[0], depth - 1) + _bases(v.operands[1], depth - 1)
    return [v]


class _Order:
    """Emits terms in pack order (`level` 1: i32 lanes as PACK_ORDER; level 2: the i16 pair operands
    of vpmaddwd, each i32 lane's two i16 lanes in that order)."""

    def __init__(self, em) -> None:  # type: ignore[no-untyped-def]
        self.em = em
        self.memo: dict[tuple[Term, int], ir.Value] = {}

    def natural(self, t: Term, lanes: int) -> ir.Value:
        em = self.em
        top = em.lanes
        em.lanes = lanes
        try:
            return em.emit(t)
        finally:
            em.lanes = top

    def saving(self, t: Term, level: int, lanes: int) -> Optional[float]:
        """Issue slots (`COST` units per 16 lanes) the pack order saves on `t` (at `lanes` lanes)
        against natural order, or None if some part of `t` cannot be had in pack order cheaply."""
        if t.is_uniform_leaf:
            return 0.0
        if t.op == "var":
            # both orders keep each lane's parity, so a vector repeating every 2 lanes is unchanged
            return 0.0 if _period(self.em.env[t.name], 2) else None
        if t.op == "cast" and level == 1 and t.type.bits == 32 and t.args[0].type.bits == 16:
            x = t.args[0]
            loaded = x.op == "var" and isinstance(self.em.env[x.name], ir.LoadInstr)
            natural = COST["widen16_load"] if loaded else COST["widen16_reg"]
            return natural - COST["unpack_sext" if x.type.signed else "unpack_zext"]
        if t.op == "cast" and level == 2 and t.type.bits == 16 and t.args[0].type.bits == 8 \
                and t.args[0].op == "var":
            v = self.em.env[t.args[0].name]
            if _period(v, 2):
                return 0.0
            halves = _interleave_halves(v)
            if halves is None:
                return None
            loaded = all(isinstance(h, ir.LoadInstr) for h in (halves[0], halves[2]))
            return COST["interleave_natural"] - COST["interleave_load" if loaded else "interleave_reg"]
        s = spec(t.op)
        if t.op == "x86.pmaddwd_pairs" and level == 1:
            parts = [self.saving(a, 2, 2 * lanes) for a in t.args]
        elif s.combines_lanes or s.reduce is not None or s.kind == "fpir" \
                or (s.kind == "primitive" and t.op not in _LANE_WISE):
            return None
        else:
            parts = [0.0 if i in s.lane0_args else self.saving(a, level, lanes) for i, a in enumerate(t.args)]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[misc]

    def emit(self, t: Term, level: int, lanes: int) -> ir.Value:
        key = (t, level)
        if key not in self.memo:
            self.memo[key] = self._emit(t, level, lanes)
        return self.memo[key]

    def _emit(self, t: Term, level: int, lanes: int) -> ir.Value:
        em = self.em
        if t.is_uniform_leaf or (t.op == "var" and _period(em.env[t.name], 2)):
            return self.natural(t, lanes)  # its own reordering
        if t.op == "cast" and level == 1 and t.type.bits == 32 and t.args[0].type.bits == 16:
            return self._widen16(t, lanes)
        if t.op == "cast" and level == 2:
            if _period(em.env[t.args[0].name], 2):
                return self.natural(t, lanes)
            return self._widen8_interleave(t, lanes)
        if t.op == "x86.pmaddwd_pairs":
            args = [self.emit(a, 2, 2 * lanes) for a in t.args]
        else:
            s = spec(t.op)
            args = [self.natural(a, lanes) if i in s.lane0_args else self.emit(a, level, lanes)
                    for i, a in enumerate(t.args)]
        top = em.lanes
        em.lanes = lanes
        try:
            s = spec(t.op)
            if s.kind == "target":
                return s.meta["emit"](em, args, t)
            return getattr(em, f"_p_{t.op}")(t, args)
        finally:
            em.lanes = top

    def _widen16(self, t: Term, lanes: int) -> ir.Value:
        """i32(x_16) in pack order: per 16 natural lanes X, unpack(X, X) >> 16 (signed) or unpack(X, 0)."""
        em = self.em
        x = self.natural(t.args[0], lanes)
        signed = t.args[0].type.signed
        i32x8 = ir.VectorType(ir.IntType(32), 8)
        regs = []
        for g in em.split(x, 16):
            other = g if signed else ir.Constant(g.type, [ir.Constant(ir.IntType(16), 0)] * 16)
            for half in (_LO, _HI):
                w = em.b.shuffle_vector(g, other, _mask([k for i in half for k in (i, 16 + i)]))
                d = em.b.bitcast(w, i32x8)
                if signed:
                    d = em.b.ashr(d, ir.Constant(i32x8, [ir.Constant(ir.IntType(32), 16)] * 8))
                regs.append(d)
        return em.concat(regs, lanes)

    def _widen8_interleave(self, t: Term, lanes: int) -> ir.Value:
        """i16(interleave(a, b)) in pair order: per 16 pixels, unpack(A, B) of the 16-bit widenings."""
        em = self.em
        v = em.env[t.args[0].name]
        halves = _interleave_halves(v)
        assert halves is not None
        a, oa, b, ob = halves
        signed = t.args[0].type.signed
        i16x16 = ir.VectorType(ir.IntType(16), 16)
        regs = []
        for g in range(lanes // 32):  # lanes = 2 x pixels; 16 pixels a group
            wide = []
            for src, off in ((a, oa), (b, ob)):
                piece = em.b.shuffle_vector(src, undef(src.type),
                                            _mask(list(range(off + 16 * g, off + 16 * g + 16))))
                wide.append(em.b.sext(piece, i16x16) if signed else em.b.zext(piece, i16x16))
            for half in (_LO, _HI):
                regs.append(em.b.shuffle_vector(wide[0], wide[1], _mask([k for i in half for k in (i, 16 + i)])))
        return em.concat(regs, lanes)


def pack_order_registers(em, term: Term) -> Optional[list[ir.Value]]:  # type: ignore[no-untyped-def]
    """The i32 `term` (the operand of a 32 -> 16-bit pack, at `em.lanes` lanes) as 8-lane registers in
    PACK_ORDER, or None if some part of it would need a cross-lane shuffle to get there or the order
    saves nothing."""
    lanes = em.lanes
    if term.type.bits != 32 or lanes % 16:
        return None
    order = _Order(em)
    saved = order.saving(term, 1, lanes)
    if saved is None or saved + COST["pack_fixup"] <= 0:
        return None
    return em.split(order.emit(term, 1, lanes), 8)
