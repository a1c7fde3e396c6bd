"""Interned FPIR terms.

A `Term` is an immutable node: an op name, an element type, argument terms and attributes. Terms are
hash-consed: building the same (op, type, args, attrs) twice returns the same object, so structural
equality is identity, hashing is by id, and per-term caches (bounds, cost, lowering) are dictionaries.

Leaves are `var` (attrs = (name,), or (name, "uniform") for a leaf whose value is the same in every
lane: a broadcast of a scalar, stated only by the Halide frontend; see `var`) and `const` (attrs = (value,), a Python int inside the type's range;
in vector context a constant is a broadcast). Type checking is not done here: build terms through
`fpir.ops.make` (or the helpers in `fpir.build`), which applies each op's type rule.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Iterator, Optional

from fpir.printer import to_text
from fpir.types import ScalarType


class Term:
    # No __eq__ / __hash__ of its own: object's identity comparison and id-based hash are exactly the
    # semantics of interned terms, and being C slots they cost no Python call per dictionary lookup
    # (terms are the keys of every memo table: ~400,000 lookups in a 1,000-line `lift --batch`). A
    # Term's hash was never stable across processes before either (it hashed its arguments' ids and
    # its op name, which Python salts per process), so no order of a set of terms can depend on it.
    __slots__ = ("op", "type", "args", "attrs", "__weakref__")

    op: str
    type: ScalarType
    args: tuple[Term, ...]
    attrs: tuple[Any, ...]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Term is immutable")

    def __reduce__(self) -> tuple:
        return (intern, (self.op, self.type, self.args, self.attrs))

    def __repr__(self) -> str:
        return f"Term({to_text(self)!r}: {self.type})"

    def __str__(self) -> str:
        return to_text(self)

    @property
    def is_var(self) -> bool:
        return self.op == "var"

    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def name(self) -> str:
        assert self.op == "var"
        return self.attrs[0]

    @property
    def is_uniform_leaf(self) -> bool:
        """A variable stated to hold the same value in every lane (a broadcast), or a constant."""
        return self.op == "const" or (self.op == "var" and UNIFORM in self.attrs[1:])

    @property
    def value(self) -> int:
        assert self.op == "const"
        return self.attrs[0]

    def walk(self, seen: Optional[set[int]] = None) -> Iterator[Term]:
        """Post-order traversal over distinct sub-terms (each shared node once). With `seen`, nodes
        whose id is in it are skipped with their sub-terms, and the ids of the nodes visited are added
        to it (pruning a depth-first traversal does not reorder what it still visits)."""
        if seen is None:
            return self._walk()
        return self._walk_pruned(seen)

    def _walk(self) -> Iterator[Term]:
        """`walk()` without `seen`: the same nodes in the same order. The visited set holds the terms
        themselves (hashed by identity in C, as their ids are) rather than ids, so no `id()` call per
        node; a leaf is its whole walk (about half of the walks the code generator asks for)."""
        if not self.args:
            yield self
            return
        seen: set[Term] = {self}
        stack: list[tuple[Term, bool]] = [(self, True)]
        stack.extend([(a, False) for a in reversed(self.args)])
        pop, push, mark = stack.pop, stack.append, seen.add
        while stack:
            t, expanded = pop()
            if expanded:
                yield t
                continue
            if t in seen:
                continue
            mark(t)
            args = t.args
            if not args:  # a leaf: visited now (pushing it to pop it again yields the same order)
                yield t
                continue
            push((t, True))
            for a in reversed(args):
                if a not in seen:
                    push((a, False))

    def _walk_pruned(self, seen: set[int]) -> Iterator[Term]:
        """`walk(seen)`: ids in `seen` skipped with their sub-terms, the visited ones' ids added."""
        stack: list[tuple[Term, bool]] = [(self, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                yield t
                continue
            if id(t) in seen:
                continue
            seen.add(id(t))
            stack.append((t, True))
            for a in reversed(t.args):
                if id(a) not in seen:
                    stack.append((a, False))

    def size(self) -> int:
        """Number of nodes in the tree (shared sub-terms counted once per use); bottom-up over the
        distinct sub-terms, so neither deep nor heavily shared terms are a problem."""
        sizes: dict[int, int] = {}
        for t in self.walk():
            sizes[id(t)] = 1 + sum(sizes[id(a)] for a in t.args)
        return sizes[id(self)]

    def variables(self) -> list[Term]:
        return [t for t in self.walk() if t.is_var]


_TABLE: dict[tuple, Term] = {}
_LOCK = threading.Lock()


def intern(op: str, type: ScalarType, args: tuple[Term, ...] = (), attrs: tuple[Any, ...] = ()) -> Term:
    """Return the unique Term for these fields (no type checking: see fpir.ops.make)."""
    # The type enters the key as its two fields, not as the ScalarType, whose hash is a Python call;
    # the arguments as themselves: interned terms hash and compare by identity in C (no __hash__ or
    # __eq__ of their own), so the key's tuple is the term's own argument tuple, not a new one of ids.
    if args.__class__ is not tuple:
        args = tuple(args)
    key = (op, type.signed, type.bits, args, attrs)
    t = _TABLE.get(key)
    if t is not None:
        return t
    with _LOCK:
        t = _TABLE.get(key)
        if t is not None:
            return t
        t = object.__new__(Term)
        object.__setattr__(t, "op", op)
        object.__setattr__(t, "type", type)
        object.__setattr__(t, "args", args)
        object.__setattr__(t, "attrs", tuple(attrs))
        _TABLE[key] = t
        return t


#: the attribute of a `var` leaf whose value is the same in every lane
UNIFORM = "uniform"

#: names of variables the Z3 encoding (fpir/z3enc.py) reads as broadcasts, one symbol for every lane:
#: the verifier's constant wildcards (c0, c1, ...) and computed constants (k1, ...). Here, not in
#: z3enc, so that code which only needs the names (alpha-renaming) does not import z3
BROADCAST_NAME = re.compile(r"^[ck][0-9]+$")


def var(name: str, type: ScalarType, uniform: bool = False) -> Term:
    """A variable. `uniform=True` states that every lane holds the same value (a broadcast scalar):
    only the Halide frontend states it (for its splat leaves), rules test it with `is_uniform(x)`, and
    the verifier then encodes the variable as one symbol for every lane. FPIR text has no spelling for
    it, so a user's text never claims it. A uniform and a plain variable of the same name are distinct
    terms; a term never holds both."""
    return intern("var", type, (), (name, UNIFORM) if uniform else (name,))


def const(value: int, type: ScalarType) -> Term:
    """A constant; the value must already lie in the type's range (use type.wrap to wrap)."""
    value = int(value)
    if not type.contains(value):
        from fpir.types import FPIRTypeError

        raise FPIRTypeError(f"constant {value} does not fit in {type.name}")
    return intern("const", type, (), (value,))
