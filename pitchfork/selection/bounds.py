"""Interval (bounds) analysis over FPIR terms, with a cache.

`bounds(t)` returns (lo, hi) such that every lane of every evaluation of t lies in [lo, hi]. Leaves
give their type's range (or the constant); primitive ops use the op table's interval rules; FPIR and
target ops use their own rule when the op table has one (absd) and otherwise the interval of their
definition evaluated over the argument intervals. Terms are interned, so the cache is keyed by term.
Optional `assume` maps variable names to known ranges (e.g. from a loop's data); `leaf_ranges(...)`
assumes ranges for a block of code (synthesis: a task's variables at the ranges the corpus saw them
in, synth/tasks.py `ranged`; the compiler never sets it). A flagged node
(`add.nsw`) uses its flag's interval rule: under the no-overflow fact the exact range, clipped to the
type, instead of the whole type when the exact range could wrap.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Mapping, Optional

from fpir.ops import template
from fpir.opspec import spec
from fpir.term import Term
from fpir.types import ScalarType

Interval = tuple[int, int]
_CACHE: dict[Term, Interval] = {}
#: variable name -> range assumed inside a `leaf_ranges` block (empty: every leaf at its type's range)
_LEAF_RANGES: ContextVar[Mapping[str, Interval]] = ContextVar("leaf_ranges", default={})


@contextmanager
def leaf_ranges(ranges: Mapping[str, Interval]) -> Iterator[None]:
    """Within the block, `bounds` takes the named variables' ranges from `ranges` (as `assume` does),
    so whatever asks bounds there (an instruction's `encodable`, a bounds predicate) sees them. Such
    answers are not cached: the same interned term has its type's bounds outside the block."""
    token = _LEAF_RANGES.set(dict(ranges))
    try:
        yield
    finally:
        _LEAF_RANGES.reset(token)


def bounds(term: Term, assume: Optional[Mapping[str, Interval]] = None) -> Interval:
    ranged = _LEAF_RANGES.get()
    if ranged:
        assume = {**ranged, **(assume or {})}
    if assume:
        return _analyse(term, dict(assume), {})
    return _analyse(term, {}, _CACHE)


def _analyse(term: Term, env: dict[str, Interval], cache: dict[Term, Interval]) -> Interval:
    """Post-order over the sub-terms not in the cache yet (a cached sub-term is not entered), so asking
    about every node of a chain costs linear time in total, not quadratic."""
    hit = cache.get(term)
    if hit is not None:
        return hit
    stack: list[tuple[Term, bool]] = [(term, False)]
    while stack:
        t, ready = stack.pop()
        if t in cache:
            continue
        if ready:
            cache[t] = _node(t, [cache[a] for a in t.args], env)
            continue
        stack.append((t, True))
        stack.extend((a, False) for a in reversed(t.args) if a not in cache)
    return cache[term]


def _node(t: Term, ivs: list[Interval], env: Mapping[str, Interval]) -> Interval:
    if t.op == "var":
        return env.get(t.name, (t.type.min, t.type.max))
    if t.op == "const":
        return (t.value, t.value)
    s = spec(t.op)
    types = [a.type for a in t.args]
    if s.reduce is not None:
        # Lane-combining: fold the combining op's interval over the f lanes of a group.
        combine, f = s.reduce
        lo, hi = ivs[0]
        for _ in range(f - 1):
            lo, hi = _node_of(combine, [(lo, hi), ivs[0]], t.type)
    elif t.attrs and any(s.flags[f].interval is not None for f in t.attrs):
        lo, hi = t.type.min, t.type.max
        for f in t.attrs:
            rule = s.flags[f].interval
            if rule is not None:
                flo, fhi = rule(ivs, types, t.type)
                lo, hi = max(lo, flo), min(hi, fhi)
    elif s.interval is not None:
        lo, hi = s.interval(ivs, types, t.type)
    else:
        body, names = template(t.op, tuple(types), t.type)
        lo, hi = _analyse(body, dict(zip(names, ivs)), {})
    return (max(lo, t.type.min), min(hi, t.type.max))


def _node_of(op: str, ivs: list[Interval], t: ScalarType) -> Interval:
    s = spec(op)
    types = [t] * len(ivs)
    if s.interval is not None:
        lo, hi = s.interval(ivs, types, t)
    else:
        body, names = template(op, tuple(types), t)
        lo, hi = _analyse(body, dict(zip(names, ivs)), {})
    return (max(lo, t.min), min(hi, t.max))


def clear_cache() -> None:
    _CACHE.clear()
