"""Dot products written out as add trees, turned into Halide `VectorReduce`s the selector can see.

Halide code often spells a k-tap dot product lane-wise (matmul's `sum(u32(u16(A[4k+i]) * u16(B[x, 4k+i])))`):

    acc + T(x_0 * y_0) + T(x_1 * y_1) + ... + T(x_{f-1} * y_{f-1})          (n lanes each)

The dot-product instructions (ARM udot/sdot, HVX vrmpy, x86 pmaddwd) want the f products of one output
lane in f adjacent input lanes. This pass (isel=pitchfork only) rewrites each group of f such terms as

    acc + vector_reduce_add(T(interleave(x_0..x_{f-1}) * interleave(y_0..y_{f-1})))    (f*n -> n lanes)

so the frontend hands the selector a `vector_reduce_add_x<f>` of widening products, which the per-ISA
lowering rules turn into the dot-product instruction (and `acc + ...` into its accumulating form), as
Halide's own HVX/ARM backends do (section 2.3.4 of ISA_INTRINSICS.md). The interleaves are built so
they cost nothing where they can:
* loads at stride f whose bases are consecutive become one dense load;
* broadcasts of scalar loads at consecutive addresses become one f-lane load, repeated (a splat of one
  32-bit word on ARM/HVX: `ld1r {v.4s}` / the scalar operand of HVX `vrmpy`);
* anything else becomes an interleaving shuffle, which on these ISAs is cheaper than the widening
  multiplies and adds it replaces when the products are 8-bit into 32-bit (Halide makes the same choice).

Invariant: the rewritten expression equals the original lane for lane. Output lane i of the reduction
adds the f lanes f*i .. f*i+f-1 of the interleaved expression, which are exactly the f terms' lane i
(each term is the same lane-wise expression of its own operands), and wrapping addition is associative
and commutative, so regrouping the sum changes nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.frontend.ir_walk import map_children

#: dot-product width per target: 8-bit products into 32 bits (udot/vrmpy), 16-bit (or zero-extended
#: 8-bit) products into 32 bits (x86 pmaddwd)
FACTORS: dict[str, dict[int, int]] = {
    "arm64": {8: 4},
    "hvx128": {8: 4},
    "x86-avx2": {8: 2, 16: 2},
}
#: targets whose dot products need both operands of one signedness: AArch64 has udot/sdot, and its
#: mixed-sign usdot needs i8mm, which apple-m1 lacks; grouping a mixed-sign sum there only adds
#: interleaves (conv3x3a32 on arm64: 691k -> 857k estimated cycles, slower than LLVM alone)
SAME_SIGN_ONLY = frozenset({"arm64"})


@dataclass(frozen=True)
class _Product:
    """One term `wrap(cast(x) * cast(y))` of an add tree, with its narrow operands x and y."""

    term: H.Expr
    x: H.Expr
    y: H.Expr
    #: rebuilds the term from new (interleaved) operands
    rebuild: Callable[[H.Expr, H.Expr], H.Expr]


def _narrow(e: H.Expr) -> tuple[H.Expr, Callable[[H.Expr], H.Expr]] | None:
    """`e` = a value-preserving widening of a narrower expression v: (v, how to widen another v')."""
    if isinstance(e, H.Cast) and e.value.type.is_integer and not e.value.type.is_bool \
            and e.value.type.bits < e.type.bits and (e.type.is_int or e.value.type.is_uint):
        t = e.type
        return e.value, lambda v: H.Cast(t.with_lanes(v.type.lanes), v)
    if isinstance(e, H.Broadcast):
        inner = _narrow(e.value)
        if inner is not None and inner[0].type.is_scalar:
            v, _ = inner
            t = e.type
            return H.Broadcast(v, e.count, v.type.with_lanes(e.count)), \
                lambda w: H.Cast(t.with_lanes(w.type.lanes), w)
    return None


def _product(e: H.Expr) -> _Product | None:
    """`e` as a product of two widened narrow operands (possibly under one more widening cast)."""
    outer: Callable[[H.Expr], H.Expr] = lambda m: m
    m = e
    if isinstance(e, H.Cast) and isinstance(e.value, H.BinOp) and e.value.op == "*" \
            and e.value.type.bits < e.type.bits and e.type.is_integer:
        t = e.type
        outer = lambda mm: H.Cast(t.with_lanes(mm.type.lanes), mm)
        m = e.value
    if not (isinstance(m, H.BinOp) and m.op == "*"):
        return None
    a, b = _narrow(m.a), _narrow(m.b)
    if a is None or b is None:
        return None
    (x, wx), (y, wy) = a, b
    if x.type.bits != y.type.bits or x.type.bits * 2 > m.type.bits:
        return None
    mt = m.type

    def rebuild(nx: H.Expr, ny: H.Expr) -> H.Expr:
        return outer(H.BinOp("*", wx(nx), wy(ny), mt.with_lanes(nx.type.lanes)))

    return _Product(e, x, y, rebuild)


def _add_terms(e: H.Expr) -> list[H.Expr]:
    """The summands of a `+` tree of one type (no recursion: trees can be long)."""
    out, stack = [], [e]
    while stack:
        n = stack.pop()
        if isinstance(n, H.BinOp) and n.op == "+" and n.type == e.type:
            stack.extend((n.b, n.a))
        else:
            out.append(n)
    return out


def offset(a: H.Expr, b: H.Expr) -> int | None:
    """c if `b` is syntactically `a + c` (None if that cannot be seen)."""
    def split(e: H.Expr) -> tuple[H.Expr | None, int]:
        if isinstance(e, H.IntImm):
            return None, e.value
        if isinstance(e, H.BinOp) and e.op == "+" and isinstance(e.b, H.IntImm):
            return e.a, e.b.value
        if isinstance(e, H.BinOp) and e.op == "-" and isinstance(e.b, H.IntImm):
            return e.a, -e.b.value
        return e, 0
    (ba, ca), (bb, cb) = split(a), split(b)
    return cb - ca if ba == bb else None


def _scalar_load(e: H.Expr) -> H.Load | None:
    return e.value if isinstance(e, H.Broadcast) and isinstance(e.value, H.Load) and e.value.type.is_scalar \
        and e.value.predicate is None else None


def _strided_load(e: H.Expr) -> H.Load | None:
    if isinstance(e, H.Load) and e.predicate is None and isinstance(e.index, H.Ramp):
        return e
    return None


def interleave(vs: list[H.Expr], target: str = "") -> H.Expr:
    """`interleave_vectors(vs)` (lane f*i+k = vs[k] lane i), as a dense load or a repeated short load
    where the operands allow it; on hvx128 also broadcasts of any f scalars as one repeated f-lane
    group (`_repeat_group`)."""
    f, n = len(vs), vs[0].type.lanes
    t = vs[0].type.with_lanes(f * n)
    loads = [_scalar_load(v) for v in vs]
    if all(ld is not None and ld.buffer == loads[0].buffer for ld in loads):  # type: ignore[union-attr]
        first = loads[0]
        assert first is not None
        if all(offset(first.index, ld.index) == k for k, ld in enumerate(loads)):  # type: ignore[union-attr]
            group = H.Load(first.buffer, H.Ramp(first.index, H.IntImm(1, first.index.type), f,
                                                first.index.type.with_lanes(f)), first.type.with_lanes(f),
                           first.alignment)
            return H.Shuffle("shuffle", (group,), tuple(k for _ in range(n) for k in range(f)), t)
    if target == "hvx128":
        group = _repeat_group(vs)
        if group is not None:
            return group
    dense = [_strided_load(v) for v in vs]
    if all(ld is not None and ld.buffer == dense[0].buffer for ld in dense):  # type: ignore[union-attr]
        ramps = [ld.index for ld in dense]  # type: ignore[union-attr]
        r0 = ramps[0]
        assert isinstance(r0, H.Ramp)
        if isinstance(r0.stride, H.IntImm) and r0.stride.value == f and all(
                isinstance(r, H.Ramp) and r.stride == r0.stride and offset(r0.base, r.base) == k
                for k, r in enumerate(ramps)):
            ld0 = dense[0]
            assert ld0 is not None
            return H.Load(ld0.buffer, H.Ramp(r0.base, H.IntImm(1, r0.stride.type), f * n,
                                             r0.type.with_lanes(f * n)), t, ld0.alignment)
    return H.Shuffle("interleave", tuple(vs), tuple(k * n + i for i in range(n) for k in range(f)), t)


def _repeat_group(vs: list[H.Expr]) -> H.Expr | None:
    """`interleave_vectors` of broadcasts of f scalars whose f lanes make one 16/32/64-bit word, as
    that f-lane vector repeated: codegen's `_repeat` emits it as a splat of the word, which HVX's
    vrmpy takes as its scalar operand (Vx.w += vrmpy(Vu.ub, Rt.b)). conv3x3a32's runtime mask taps
    (not at consecutive addresses, so not one short load) were an interleave of four splats: four
    vector registers per group of taps held for the whole loop, which spilled (hot loop 249
    instructions, Halide 21's 179 with the taps in two scalar registers)."""
    f, n = len(vs), vs[0].type.lanes
    if not all(isinstance(v, H.Broadcast) and v.value.type.is_scalar and v.type == vs[0].type for v in vs):
        return None
    elem = vs[0].type.with_lanes(1)
    if not elem.is_integer or elem.is_bool or f * elem.bits not in (16, 32, 64):
        return None
    group = H.Shuffle("interleave", tuple(v.value for v in vs), tuple(range(f)), elem.with_lanes(f))  # type: ignore[attr-defined]
    return H.Shuffle("shuffle", (group,), tuple(k for _ in range(n) for k in range(f)), vs[0].type.with_lanes(f * n))


def _sort_key(ps: list[_Product]) -> list[_Product]:
    """Products ordered by the offset of their broadcast (or load) operand from the first one's, so
    that consecutive addresses end up in one group; the source order when offsets are unknown."""
    for side in ("y", "x"):
        base = getattr(ps[0], side)
        offs = []
        for p in ps:
            a, b = _scalar_load(base), _scalar_load(getattr(p, side))
            o = offset(a.index, b.index) if a is not None and b is not None and a.buffer == b.buffer else None
            if o is None:
                break
            offs.append(o)
        else:
            return [p for _, p in sorted(zip(offs, ps), key=lambda t: t[0])]
    return ps


def rewrite_sum(e: H.Expr, target: str) -> H.Expr:
    """`e` with groups of f same-shaped products of its `+` tree as vector reductions (`e` if none)."""
    if not (isinstance(e, H.BinOp) and e.op == "+" and e.type.is_vector and e.type.is_integer
            and e.type.bits == 32):
        return e
    factors = FACTORS.get(target, {})
    terms = _add_terms(e)
    groups: dict[tuple[HType, HType, str], list[_Product]] = {}
    rest: list[H.Expr] = []
    for t in terms:
        p = _product(t)
        f = factors.get(p.x.type.bits) if p is not None else None
        if p is None or f is None or (target in SAME_SIGN_ONLY and p.x.type.code != p.y.type.code):
            rest.append(t)
            continue
        shape = str(p.rebuild(H.Variable("x", p.x.type), H.Variable("y", p.y.type)))
        groups.setdefault((p.x.type, p.y.type, shape), []).append(p)
    out = list(rest)
    changed = False
    for (xt, _, _), ps in groups.items():
        f = factors[xt.bits]
        ps = _sort_key(ps) if len(ps) >= f else ps
        full = len(ps) - len(ps) % f
        for g in range(0, full, f):
            grp = ps[g:g + f]
            prod = grp[0].rebuild(interleave([p.x for p in grp], target), interleave([p.y for p in grp], target))
            out.append(H.VectorReduce("add", prod, e.type))
            changed = True
        out.extend(p.term for p in ps[full:])
    if not changed:
        return e
    acc = out[0]
    for t in out[1:]:
        acc = H.BinOp("+", acc, t, e.type)
    return acc


def _map_expr(e: H.Expr, target: str) -> H.Expr:
    """Rewrite every maximal `+` tree in `e` (post-order over the non-`+` structure)."""
    if isinstance(e, H.BinOp) and e.op == "+" and e.type.is_vector:
        terms = _add_terms(e)
        if len(terms) > 1:
            new_terms = [_map_expr(t, target) for t in terms]
            acc = new_terms[0]
            for t in new_terms[1:]:
                acc = H.BinOp("+", acc, t, e.type)
            return rewrite_sum(acc, target)
    if not e.type.is_vector:
        return e
    return map_children(e, H.Expr, lambda x: _map_expr(x, target))


def rewrite_stmt(s: H.Stmt, target: str) -> H.Stmt:
    """`s` with the dot products of its stored vector values turned into vector reductions."""
    if isinstance(s, H.Store):
        v = _map_expr(s.value, target) if s.value.type.is_vector else s.value
        return s if v is s.value else dataclasses.replace(s, value=v)
    return map_children(s, H.Stmt, lambda x: rewrite_stmt(x, target))
