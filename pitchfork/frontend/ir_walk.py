"""Structural rewriting helpers over the Halide IR dataclasses, shared by the frontend passes
(dot_products, hvx_windows, stream_taps, strided_stores).

Invariant: every helper returns the very same object when nothing in it changed, so unchanged
subtrees stay shared (the passes memoise on object identity and test `new is old` to skip work).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, TypeVar

from pitchfork.frontend import ir as H

N = TypeVar("N")


#: node class -> its dataclass fields' names, in order (looked up once per class, not per node)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def map_children(node: N, kind: type, fn: Callable[[Any], Any]) -> N:
    """`node` with `fn` applied to each child of class `kind` (single fields and tuples of them);
    the same object when nothing changed, so unchanged subtrees stay shared."""
    changes = {}
    names = _FIELD_NAMES.get(type(node))
    if names is None:
        names = _FIELD_NAMES[type(node)] = tuple(f.name for f in dataclasses.fields(node))  # type: ignore[arg-type]
    for name in names:
        v = getattr(node, name)
        if isinstance(v, kind):
            nv = fn(v)
            if nv is not v:
                changes[name] = nv
        elif isinstance(v, tuple) and v and all(isinstance(x, kind) for x in v):
            nt = tuple(fn(x) for x in v)
            if any(a is not b for a, b in zip(nt, v)):
                changes[name] = nt
    return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]


def rewrite_values(s: H.Stmt, fn: Callable[[H.Expr], H.Expr]) -> H.Stmt:
    """`s` with `fn` applied to the stored value of every store in it."""
    if isinstance(s, H.Store):
        v = fn(s.value)
        return s if v is s.value else dataclasses.replace(s, value=v)
    return map_children(s, H.Stmt, lambda x: rewrite_values(x, fn))


def split_const(e: H.Expr) -> tuple[H.Expr, int]:
    """`e` as (symbolic part, constant addend), looking through `(x + c) + c'`."""
    c = 0
    while isinstance(e, H.BinOp) and e.op in ("+", "-") and isinstance(e.b, H.IntImm):
        c += e.b.value if e.op == "+" else -e.b.value
        e = e.a
    return e, c
