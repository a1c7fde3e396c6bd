"""Streams of memory in Halide expressions, and [1 2 1] windows regrouped out of 16-bit add trees.

A *stream fact* says which dense loads of one expression read the same buffer at indices that differ by
a constant: `stream_fact(load)` is ((buffer, element type, symbolic index), constant element offset).
The codegen attaches it to every load leaf (`Leaf.stream`) and hands the facts to instruction selection
(`stream(x, y, z)` rule predicates) and to the emitter, for instructions that read a sliding window
(HVX vtmpy: x, x+1, x+2 of one stream from two registers).

Halide often spells a separable 3x3 stencil as one inlined sum (gaussian3x3: `rows(x-1) + 2 rows(x) +
rows(x+1)` with `rows` a vertical [1 2 1] sum, simplified into one add tree of nine weighted pixels), so
no sub-expression is a horizontal window. `rewrite_stmt` (hvx128, isel=pitchfork) flattens each 16-bit add
tree into weighted leaves and, for every stream read at offsets o, o+1, o+2 with weights a, 2a, a,
rebuilds the tree as `a * T(u16(p[o]) + u16(p[o+1]) * 2 + u16(p[o+2]))` + the other leaves, the spelling
of sobel's horizontal pass that lowering turns into one vtmpybus.

Invariant: the rewritten expression equals the original lane for lane. 16-bit vector arithmetic wraps
(modulo 2^16: Halide's no-overflow rule is only for 32 bits and wider), so the sum may be regrouped and
distributed freely; u16(p) and T(p) of a u8 p have the same bits, and T(u16 sum) keeps them.
"""

from __future__ import annotations

from typing import Container, Hashable, Optional

from pitchfork.halide import ir as H
from pitchfork.halide.htypes import HType
from pitchfork.halide.ir_walk import map_children, rewrite_values, split_const

StreamFact = tuple[Hashable, int]


def stream_fact(e: H.Load, bound: Container[str] = ()) -> Optional[StreamFact]:
    """A dense unpredicated load's stream: (buffer, type, symbolic index) and the constant element offset
    added to it. Loads of one expression with one key read the same buffer at the same symbolic index
    (one name denotes one value throughout an expression), so their elements are apart by exactly the
    difference of their offsets. An index naming one of the expression's own lets (`bound`: a nested
    let could rebind it) or reading memory gets no fact."""
    if e.predicate is not None or not (isinstance(e.index, H.Ramp) and isinstance(e.index.stride, H.IntImm)
                                       and e.index.stride.value == 1):
        return None
    sym, c = split_const(e.index.base)
    if any(isinstance(n, (H.Let, H.Load, H.Call)) or isinstance(n, H.Variable) and n.name in bound
           for n in H.walk(sym)):
        return None
    return (e.buffer, str(e.type.elem), sym), c


def rewrite_stmt(s: H.Stmt) -> H.Stmt:
    """`s` with the [1 2 1] windows of every stored 16-bit add tree grouped (`s` if none)."""
    return rewrite_values(s, regroup)


def regroup(e: H.Expr) -> H.Expr:
    """`e` with each maximal 16-bit add tree that holds a [1 2 1] window of one stream regrouped."""
    if any(isinstance(n, H.Let) for n in H.walk(e)):
        return e  # let-bound names inside: leave the expression as written
    return _Regroup().visit(e)


def _is_tree(e: H.Expr) -> bool:
    t = e.type
    return isinstance(e, H.BinOp) and e.op in ("+", "-", "*") and t.is_integer and not t.is_bool \
        and t.bits == 16 and t.lanes > 1


def _const(e: H.Expr) -> Optional[int]:
    if isinstance(e, H.Broadcast) and isinstance(e.value, H.IntImm):
        return e.value.value
    return None


class _Regroup:
    def __init__(self) -> None:
        self.memo: dict[int, H.Expr] = {}

    def visit(self, e: H.Expr) -> H.Expr:
        if id(e) not in self.memo:
            self.memo[id(e)] = self._tree(e) if _is_tree(e) else map_children(e, H.Expr, self.visit)
        return self.memo[id(e)]

    def _tree(self, root: H.Expr) -> H.Expr:
        t = root.type
        mod = 1 << 16
        weights: dict[H.Expr, int] = {}
        constant = 0
        stack: list[tuple[H.Expr, int]] = [(root, 1)]
        while stack:
            e, w = stack.pop()
            c = _const(e)
            if c is not None:
                constant = (constant + w * c) % mod
            elif isinstance(e, H.BinOp) and e.type == t and e.op in ("+", "-"):
                stack.append((e.b, -w if e.op == "-" else w))
                stack.append((e.a, w))
            elif isinstance(e, H.BinOp) and e.type == t and e.op == "*" and _const(e.b) is not None:
                stack.append((e.a, w * _const(e.b)))  # type: ignore[operator]
            elif isinstance(e, H.BinOp) and e.type == t and e.op == "*" and _const(e.a) is not None:
                stack.append((e.b, w * _const(e.a)))  # type: ignore[operator]
            elif e is root:  # a product of two variable operands: not a sum, only its operands can be
                return map_children(e, H.Expr, self.visit)
            else:
                leaf = self.visit(e)
                weights[leaf] = (weights.get(leaf, 0) + w) % mod
        streams: dict[Hashable, dict[int, H.Expr]] = {}
        for leaf, w in weights.items():
            if w and isinstance(leaf, H.Cast) and isinstance(leaf.value, H.Load) and leaf.value.type.is_uint \
                    and leaf.value.type.bits == 8:
                fact = stream_fact(leaf.value)
                if fact is not None:
                    streams.setdefault(fact[0], {})[fact[1]] = leaf
        windows: list[tuple[int, H.Expr, H.Expr, H.Expr]] = []
        for offsets in streams.values():
            for o in sorted(offsets):
                lo, mid, hi = (offsets.get(o + k) for k in range(3))
                if lo is None or mid is None or hi is None or not all(x in weights for x in (lo, mid, hi)):
                    continue
                a = weights[lo]
                if weights[mid] == 2 * a % mod and weights[hi] == a:
                    windows.append((a, lo, mid, hi))
                    for x in (lo, mid, hi):
                        del weights[x]
        if not windows:
            return map_children(root, H.Expr, self.visit)
        n = t.lanes
        u16 = HType("uint", 16, n)
        terms: list[tuple[int, H.Expr]] = []
        for a, lo, mid, hi in windows:
            assert isinstance(lo, H.Cast) and isinstance(mid, H.Cast) and isinstance(hi, H.Cast)
            s = H.BinOp("+", H.BinOp("+", H.BinOp("*", H.Cast(u16, mid.value), _splat(2, u16), u16),
                                     H.Cast(u16, lo.value), u16), H.Cast(u16, hi.value), u16)
            terms.append((a, s if t == u16 else H.Cast(t, s)))
        terms += [(w, leaf) for leaf, w in weights.items() if w]
        out: Optional[H.Expr] = None
        for w, x in terms:
            neg = w == mod - 1 and out is not None
            if not neg and w != 1:
                x = H.BinOp("*", x, _splat(w, t), t)
            out = x if out is None else H.BinOp("-" if neg else "+", out, x, t)
        if constant:
            out = H.BinOp("+", out, _splat(constant, t), t)  # type: ignore[arg-type]
        assert out is not None
        return out


def _splat(v: int, t: HType) -> H.Broadcast:
    """Broadcast of the 16-bit value v (mod 2^16) as an immediate of t's signedness."""
    v %= 1 << 16
    if t.is_int and v >= 1 << 15:
        v -= 1 << 16
    return H.Broadcast(H.IntImm(v, t.elem), t.lanes, t)

