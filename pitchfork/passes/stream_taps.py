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
of sobel's horizontal pass that lowering turns into one vtmpybus. Likewise a run of i16 loads of one
stream at o, o+1, ..., o+2m (gaussian5x5's horizontal [1 4 6 4 1] over its i16 `rows`) becomes m
sliding groups a*p[o+2k] + b*p[o+2k+1] + p[o+2k+2] with byte taps a, b (`_tap_groups`), summed in i32
and truncated to the tree's type: the shape lowering turns into one vtmpyhb per group and 64 results,
which reads the middle tap from its (x, z) register pair, so a row needs 2 valigned registers per
group where the weighted sum needs 4 for 5 taps (HVX has one permute slot a packet).

Invariant: the rewritten expression equals the original lane for lane. 16-bit vector arithmetic wraps
(modulo 2^16: Halide's no-overflow rule is only for 32 bits and wider), so the sum may be regrouped and
distributed freely; u16(p) and T(p) of a u8 p have the same bits, and T(u16 sum) keeps them; the i32
group sum is exact (at most 64 groups of |a|, |b| <= 128 on |p| <= 2^15: no i32 overflow, which
Halide's nsw arithmetic rules out) and its truncation is the sum modulo 2^16.
"""

from __future__ import annotations

from typing import Container, Hashable, Optional

from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.frontend.ir_walk import map_children, rewrite_values, split_const

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
        windows: list[tuple[int, H.Expr, H.Expr, H.Expr, int, int]] = []
        for offsets in streams.values():
            for o in sorted(offsets):
                lo, mid, hi = (offsets.get(o + k) for k in range(3))
                if lo is None or mid is None or hi is None or not all(x in weights for x in (lo, mid, hi)):
                    continue
                taps = _byte_taps(weights[lo], weights[mid], weights[hi])
                if taps is not None:
                    windows.append((weights[hi], lo, mid, hi) + taps)
                    for x in (lo, mid, hi):
                        del weights[x]
        groups = _tap_groups(weights)
        if not windows and not groups:
            return map_children(root, H.Expr, self.visit)
        n = t.lanes
        u16 = HType("uint", 16, n)
        terms: list[tuple[int, H.Expr]] = []
        for a, lo, mid, hi, p, q in windows:
            assert isinstance(lo, H.Cast) and isinstance(mid, H.Cast) and isinstance(hi, H.Cast)
            x, y = (H.Cast(u16, lo.value) if p == 1 else H.BinOp("*", H.Cast(u16, lo.value), _splat(p, u16), u16),
                    H.BinOp("*", H.Cast(u16, mid.value), _splat(q, u16), u16) if q != 1 else H.Cast(u16, mid.value))
            # [1 2 1]: sobel's spelling, y first; otherwise in tap order (lifting canonicalises either)
            s = H.BinOp("+", H.BinOp("+", y, x, u16) if p == 1 else H.BinOp("+", x, y, u16), H.Cast(u16, hi.value), u16)
            terms.append((a, s if t == u16 else H.Cast(t, s)))
        if groups:
            terms.append((1, H.Cast(t, _group_sum(groups, n))))
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


def _byte_taps(w_lo: int, w_mid: int, w_hi: int) -> Optional[tuple[int, int]]:
    """(p, q) when the weights (mod 2^16) of a u8 window at o, o+1, o+2 are a * (p, q, 1) with a the
    weight of o+2 and p, q in 1..127: vtmpybus's shape (p*x + q*y + z with byte taps; signed bytes,
    but a negative tap would make the u16 sum a difference, which lifting spells otherwise). Covers
    [1 2 1] (sobel, gaussian3x3), [1 q 1] and any [p q 1] multiple."""
    a = _signed(w_hi, 16)
    if a == 0:
        return None
    lo, mid = _signed(w_lo, 16), _signed(w_mid, 16)
    if lo % a or mid % a:
        return None
    p, q = lo // a, mid // a
    return (p, q) if 1 <= p <= 127 and 1 <= q <= 127 else None


def _signed(w: int, bits: int) -> int:
    w %= 1 << bits
    return w - (1 << bits) if w >= 1 << (bits - 1) else w


#: a window's group count bound: |sum| <= 2^15 * (2 * 128 + 1) per group stays far inside i32
_MAX_GROUPS = 64


def _tap_groups(weights: dict[H.Expr, int]) -> list[tuple[H.Expr, H.Expr, H.Expr, int, int]]:
    """Runs of 16-bit loads of one stream at offsets o, o+1, ..., o+2m (m >= 1) in the add tree, split
    into m sliding 3-tap groups (x, y, z, a, b) = a*p[o+2k] + b*p[o+2k+1] + p[o+2k+2] with a and b
    signed bytes: the shape of vtmpy on halfwords (vtmpyhb, rules/lower/hvx.rules `vtmpy_h`), which
    reads y from its (x, z) register pair, so per 64 results it needs the registers of x and z only
    (two valigns at most) where the weighted sum needs one aligned register per tap. Group k's z is
    group k+1's x: its weight is split, 1 to group k, the rest to group k+1 (`a`); whatever weight of
    the last tap is not 1 stays in `weights`. Consumed weights are removed from `weights` (mod 2^16)."""
    streams: dict[Hashable, dict[int, H.Expr]] = {}
    for leaf, w in weights.items():
        if w and isinstance(leaf, H.Load) and leaf.type.is_int and leaf.type.bits == 16:
            fact = stream_fact(leaf)
            if fact is not None:
                streams.setdefault(fact[0], {})[fact[1]] = leaf
    mod = 1 << 16
    groups: list[tuple[H.Expr, H.Expr, H.Expr, int, int]] = []
    for offsets in streams.values():
        o = min(offsets) if offsets else 0
        for start in sorted(offsets):
            if start < o:
                continue  # inside a run already taken
            run = start
            while run + 1 in offsets:
                run += 1
            for k in range(min((run - start) // 2, _MAX_GROUPS - len(groups))):
                x, y, z = (offsets[start + 2 * k + j] for j in range(3))
                a, b = _signed(weights[x], 16), _signed(weights[y], 16)  # x's weight less the 1 group k-1 took
                if not (-128 <= a <= 127 and -128 <= b <= 127) or a == 0 or b == 0:
                    break  # not a byte tap: the run ends here, its leaves keep their weights
                groups.append((x, y, z, a, b))
                weights[x] = weights[y] = 0
                weights[z] = (weights[z] - 1) % mod
            o = run + 1
    for leaf in [leaf for leaf, w in weights.items() if not w]:
        del weights[leaf]
    return groups


def _group_sum(groups: list[tuple[H.Expr, H.Expr, H.Expr, int, int]], n: int) -> H.Expr:
    """The i32 sum of the groups, each spelled i32(x) * a + i32(y) * b + i32(z) (a = 1: i32(x) + ...).
    Exact in i32 (no wrap: Halide's signed 32-bit arithmetic never overflows), and its 16-bit
    truncation is the 16-bit tree's value, which wraps modulo 2^16."""
    i32 = HType("int", 32, n)

    def tap(x: H.Expr, w: int) -> H.Expr:
        c = H.Cast(i32, x)
        return c if w == 1 else H.BinOp("*", c, H.Broadcast(H.IntImm(w, i32.elem), n, i32), i32)

    out: Optional[H.Expr] = None
    for x, y, z, a, b in groups:
        g = H.BinOp("+", H.BinOp("+", tap(x, a), tap(y, b), i32), H.Cast(i32, z), i32)
        out = g if out is None else H.BinOp("+", out, g, i32)
    assert out is not None
    return out


def _splat(v: int, t: HType) -> H.Broadcast:
    """Broadcast of the 16-bit value v (mod 2^16) as an immediate of t's signedness."""
    v %= 1 << 16
    if t.is_int and v >= 1 << 15:
        v -= 1 << 16
    return H.Broadcast(H.IntImm(v, t.elem), t.lanes, t)

