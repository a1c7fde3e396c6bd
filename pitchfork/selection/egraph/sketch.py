"""Sketch-guided terms for the lifting pass: the lifting rules' left sides as sketches (paper 001).

The lifting pass (engine.py `_lift_pass`) lifts each e-node over its children's cheapest terms. A
lifting rule whose left side looks deeper than one node then misses an idiom whose inner node is in
the child's e-class but is not that class's cheapest term: `(x + 2) >> 2` is `rounding_shr(x, 2)`,
but the class of `x + 2` may be cheapest as `widening_shl(b, 1) + widening_add(a, 2)` (the constant
folded into another add), and the product under `saturating_cast<i16>(rounding_shr(p, 15))` may be
cheapest as an `extending_mul` while `rounding_mul_shr` needs its `widening_mul` twin.

So each rule's left side is reduced to a sketch, its op skeleton (`Sketch`: the op, then per operand
a sub-sketch, CONST for a constant, None for a wildcard), and for every e-node whose op heads a
sketch the pass also builds the term that follows the sketch through the e-classes: at each level
the e-node of the class that has the sketch's op and whose children can follow the rest of it (the
class's cheapest node when it can, else the cheapest such node), the cheapest term below the sketch.
The lifting TRS then decides on that term as on any other (its matcher, predicates and bounds): a
sketch only chooses which equal term the TRS is shown, so it cannot make a result wrong.

Invariant: every guided term is a term of the e-node's e-class (built from e-nodes of the classes it
passes through), so unioning its lifting with the e-node is sound exactly as the plain pass's is.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from fpir.term import Term
from pitchfork.selection.egraph.declare import CONST, LEAF, Encoding, parse_ctor
from pitchfork.trs.pattern import PApp, PConst, PLit, Pattern
from pitchfork.trs.rules import RuleSet

#: an op skeleton: (op, sub-sketch per operand); a sub-sketch is a Sketch, CONST or None (anything)
Sketch = tuple
SubSketch = Union[tuple, str, None]

#: sketches deeper than this are cut (their deeper levels become wildcards): the lifting rules look
#: at most three levels down, and each level multiplies the pass's work
MAX_DEPTH = 3


def _sketch(p: Pattern, depth: int) -> SubSketch:
    if isinstance(p, (PConst, PLit)):
        return CONST
    if not isinstance(p, PApp) or depth >= MAX_DEPTH:
        return None
    return (p.op,) + tuple(_sketch(a, depth + 1) for a in p.args)


def _informative(s: SubSketch) -> bool:
    """A sub-sketch that constrains its operand (not a bare wildcard)."""
    return s is not None


#: sketches per rule set (kept alive beside it: ids of dead rule sets may be reused)
_CACHE: dict[int, tuple[RuleSet, dict[str, tuple[Sketch, ...]]]] = {}


def _interned(s: SubSketch, table: dict[tuple, tuple]) -> SubSketch:
    """`s` with every equal sub-sketch one object (Guide keys its memos by a sketch's id, which is
    then as good as its value, and cheaper than hashing a nested tuple at every lookup)."""
    if not isinstance(s, tuple):
        return s
    t = (s[0],) + tuple(_interned(a, table) for a in s[1:])
    return table.setdefault(t, t)


def _sketches_of(rs: RuleSet) -> dict[str, tuple[Sketch, ...]]:
    out: dict[str, dict[Sketch, None]] = {}
    table: dict[tuple, tuple] = {}
    for op, entries in rs.index.items():
        for _rule, p in entries:
            s = _interned(_sketch(p, 0), table)
            assert isinstance(s, tuple)
            if any(_informative(a) for a in s[1:]):  # a root-only sketch is what the plain pass shows
                out.setdefault(op, {})[s] = None
    return {op: tuple(d) for op, d in out.items()}


def sketches(rs: RuleSet) -> dict[str, tuple[Sketch, ...]]:
    """The distinct sketches of `rs`'s left sides per root op (only those that look below the root)."""
    hit = _CACHE.get(id(rs))
    if hit is None or hit[0] is not rs:
        hit = _CACHE[id(rs)] = (rs, _sketches_of(rs))
    return hit[1]


class Guide:
    """Sketch-following over one read-out of the e-graph: `classes` (extract.read_egraph), `best`
    (class -> (cost, chosen e-node), extract._best) and `terms` (class -> cheapest term)."""

    def __init__(self, classes: dict[Any, list], best: dict[Any, tuple], terms: dict[Any, Term],
                 enc: Encoding) -> None:
        self.classes, self.best, self.terms, self.enc = classes, best, terms, enc
        # memos keyed by (class, id(sub-sketch)): sketches() interns its sub-sketches and keeps them
        # alive, so an id stands for one value (a fit's recursion only goes to strictly smaller
        # sub-sketches, so no two live keys can mean one value either way)
        self._fit: dict[tuple[Any, int], Optional[Any]] = {}
        self._term: dict[tuple[Any, int], Optional[Term]] = {}
        # class -> the heads of its e-nodes (their ops, CONST for a constant): a necessary condition
        # for a class to follow a sub-sketch is that one of its nodes has the sub-sketch's head
        self._heads: dict[Any, frozenset[str]] = {}

    def _node_cost(self, n: Any) -> tuple:
        from pitchfork.selection.egraph.extract import _node_cost

        types = _BitsView(self.classes)
        c = _node_cost(n, types)
        for ch in n.children:
            cc = self.best[ch][0]
            c = (c[0] + cc[0], c[1] + cc[1], c[2] + cc[2])
        return c

    def fit(self, cls: Any, s: SubSketch) -> Optional[Any]:
        """The e-node of `cls` that follows sketch `s` (None: no node does)."""
        key = (cls, id(s))
        if key in self._fit:
            return self._fit[key]
        self._fit[key] = None  # cycles through this class do not fit
        got = None
        if s == CONST:
            got = next((n for n in self.classes.get(cls, ()) if n.ctor == CONST), None)
        elif s is not None:
            op, subs = s[0], s[1:]
            chosen = self.best.get(cls, (None, None))[1]
            best = self.best
            cands = [n for n in self.classes.get(cls, ()) if n.ctor not in (CONST, LEAF)
                     and parse_ctor(n.ctor)[0] == op and len(n.children) == len(subs)
                     and all(ch in best for ch in n.children)]
            ok = [n for n in cands if all(sub is None or self.fit(ch, sub) is not None
                                          for ch, sub in zip(n.children, subs))]
            if ok:
                got = chosen if chosen in ok else min(ok, key=self._node_cost)
        self._fit[key] = got
        return got

    def term(self, cls: Any, s: SubSketch) -> Optional[Term]:
        """The cheapest term of `cls` that follows `s` (its cheapest term for a wildcard)."""
        if s is None:
            return self.terms.get(cls)
        key = (cls, id(s))
        got = self._term.get(key, self)  # `self`: not computed yet (None is a computed "no term")
        if got is not self:
            return got  # type: ignore[return-value]
        n = self.fit(cls, s)
        t = None
        if n is not None:
            subs = s[1:] if s != CONST else ()
            args = [self.term(ch, sub) for ch, sub in zip(n.children, subs)]
            if all(a is not None for a in args):
                t = self.terms.get(cls) if s == CONST else self._decode(n, args)  # type: ignore[arg-type]
        self._term[key] = t
        return t

    def _decode(self, n: Any, args: list[Term]) -> Optional[Term]:
        from fpir.types import FPIRTypeError

        try:
            return self.enc.decode_node(n.ctor, n.tname, args, n.payload, fold=False)
        except FPIRTypeError:
            return None

    def children_for(self, n: Any, s: Sketch) -> Optional[tuple[Term, ...]]:
        """The children's terms of e-node `n` following sketch `s` (rooted at n's op); None when a
        child cannot follow its sub-sketch."""
        children = n.children
        if len(s) != len(children) + 1:
            return None
        # the cheap necessary test first (most sketches of an op do not fit a given e-node): every
        # constrained operand's class must hold a node with the sub-sketch's head, exactly what
        # `fit` looks for first; failing it, `fit` would answer None too, so the answer is the same
        heads = self._heads
        for ch, need in zip(children, _needs(s)):
            if need is not None:
                h = heads.get(ch)
                if h is None:
                    h = heads[ch] = _heads_of(self.classes.get(ch, ()))
                if need not in h:
                    return None
        out = []
        terms, memo = self.terms, self._term
        for i, ch in enumerate(children):
            sub = s[i + 1]
            if sub is None:
                t = terms.get(ch)
            else:
                t = memo.get((ch, id(sub)), self)
                if t is self:
                    t = self.term(ch, sub)
            if t is None:
                return None
            out.append(t)
        return tuple(out)


def _heads_of(nodes: Any) -> frozenset[str]:
    """The heads of a class's e-nodes: CONST for a constant, an op node's op (a leaf heads nothing)."""
    out = set()
    for n in nodes:
        if n.ctor == CONST:
            out.add(CONST)
        elif n.ctor != LEAF:
            out.add(parse_ctor(n.ctor)[0])
    return frozenset(out)


#: sketch id -> (the sketch, the head each operand's class must hold, None where unconstrained); the
#: sketch is kept beside its entry, so a reused id of a dead sketch is recognised
_NEEDS: dict[int, tuple[Sketch, tuple[Optional[str], ...]]] = {}


def _needs(s: Sketch) -> tuple[Optional[str], ...]:
    got = _NEEDS.get(id(s))
    if got is None or got[0] is not s:
        got = _NEEDS[id(s)] = (s, tuple(None if sub is None else CONST if sub == CONST else sub[0] for sub in s[1:]))
    return got[1]


class _BitsView:
    """class -> bit width of its type, computed on demand (extract._node_cost reads `types[c]`)."""

    def __init__(self, classes: dict[Any, list]) -> None:
        self.classes = classes

    def __getitem__(self, c: Any) -> int:
        from pitchfork.selection.egraph.extract import _bits

        return _bits(self.classes[c][0].tname)
