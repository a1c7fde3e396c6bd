"""The region an output must cover, as Halide's bounds query answers it, for calls that allocate it.

Halide's `Func.realize(sizes)` does not allocate exactly `sizes`: it first calls the pipeline with
null-host output buffers (a bounds query), which may grow them (a `TailStrategy::RoundUp` split of
the output rounds its extent up to the split factor, `align_bounds` moves its min), allocates what
the query asked for, runs, and hands back a crop of the requested size. A caller of
`pitchfork.compile(...)(...)` that lets us allocate the outputs gets the same: `query(...)` answers
the bounds query in Python from the captured statement (no second kernel, no Halide JIT), and
`aot/call.py` allocates the larger array and returns the requested window of it.

What it reads: the `_halide_buffer_init(out.buffer, ..., make_struct(min, extent, stride, flags)...)`
Halide's prologue runs when `out` is a bounds query, and the prologue's `let`s it refers to. What
it evaluates: integer arithmetic with Halide's semantics (Euclidean division and modulus, division
by zero is zero), comparisons, select, min/max, integer casts; the values it knows are every buffer
argument's min/extent/stride, the outputs' requested min/extent (dense strides, as realize's
unallocated buffers have) and integer scalar parameters.

Invariant: it never changes what a call computes into the requested window, only how large the
array behind it is; when the query cannot be evaluated (a construct outside the above, a float
parameter) or asks for no more than requested, the output is allocated at the requested size, as
before, and the kernel's own assertion reports a size it cannot produce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Optional, Sequence

from pitchfork.frontend import ir as H
from pitchfork.frontend.stmt import HalideParseError, parse_expr

#: `let NAME = VALUE` at the top level of the captured statement's prologue
_LET = re.compile(r"^let (\S+) = (.*)$", re.M)


class _Unknown(Exception):
    """The query uses something this evaluator does not model: allocate the requested size."""


@dataclass(frozen=True)
class OutputQuery:
    """Per dimension (min, extent) expressions of one output's bounds-query answer, and the names of
    the values it needs (through the prologue's `let`s): a caller memoises on those values
    (aot/call.py `_grown`)."""

    output: str
    dims: tuple[tuple[H.Expr, H.Expr], ...]
    needs: tuple[str, ...]


@dataclass(frozen=True)
class Queries:
    """The bounds-query answers of a pipeline's outputs (outputs whose answer is exactly the
    requested region are left out) and the prologue's `let`s they refer to, parsed."""

    outputs: tuple[OutputQuery, ...]
    lets: tuple[tuple[str, H.Expr], ...]


def _init_call(statement: str, output: str) -> Optional[H.Call]:
    """The `_halide_buffer_init` call the bounds-query branch of `output` makes, parsed."""
    head = f"(struct halide_buffer_t *)_halide_buffer_init((struct halide_buffer_t *){output}.buffer,"
    at = statement.find(head)
    if at < 0:
        return None
    end = statement.find("\n", at)
    try:
        e = parse_expr(statement[at:end if end >= 0 else len(statement)])
    except HalideParseError:
        return None
    return e if isinstance(e, H.Call) else None


def _is_identity(output: str, d: int, mn: H.Expr, ext: H.Expr) -> bool:
    return (isinstance(mn, H.Variable) and mn.name == f"{output}.min.{d}"
            and isinstance(ext, H.Variable) and ext.name == f"{output}.extent.{d}")


@lru_cache(maxsize=64)
def queries(statement: str, outputs: tuple[tuple[str, int], ...]) -> Queries:
    """The bounds-query answers for `outputs` ((name, dimensions) pairs) in a captured statement."""
    first_if = statement.find("\nif (")
    prologue = statement[:first_if if first_if >= 0 else len(statement)]
    let_text = {m.group(1): m.group(2) for m in _LET.finditer(prologue) if "_halide_buffer_get_" not in m.group(2)}
    lets: dict[str, H.Expr] = {}
    found: list[OutputQuery] = []
    for name, ndims in outputs:
        call = _init_call(statement, name)
        if call is None or len(call.args) < 9:
            continue
        shape = call.args[8]
        if not (isinstance(shape, H.Call) and shape.name == "make_struct" and len(shape.args) == 4 * ndims):
            continue
        dims = tuple((shape.args[4 * d], shape.args[4 * d + 1]) for d in range(ndims))
        if all(_is_identity(name, d, mn, ext) for d, (mn, ext) in enumerate(dims)):
            continue
        needs: set[str] = set()
        todo = [e for pair in dims for e in pair]
        bound = {n.name for e in todo for n in H.walk(e) if isinstance(n, H.Let)}
        while todo:
            for node in H.walk(todo.pop()):
                if isinstance(node, H.Variable) and node.name not in needs and node.name not in lets \
                        and node.name not in bound:
                    text = let_text.get(node.name)
                    if text is None:
                        needs.add(node.name)
                        continue
                    try:
                        lets[node.name] = parse_expr(text)
                    except HalideParseError:
                        needs.add(node.name)  # unknown at call time: no answer
                        continue
                    todo.append(lets[node.name])
        found.append(OutputQuery(name, dims, tuple(sorted(needs))))
    return Queries(tuple(found), tuple(lets.items()))


class _Evaluator:
    """Integer values of the prologue's expressions (see the module docstring for what it models)."""

    def __init__(self, known: Mapping[str, int], lets: Sequence[tuple[str, H.Expr]]) -> None:
        self.known = dict(known)
        self.lets = dict(lets)
        self.busy: set[str] = set()

    def name(self, n: str) -> int:
        if n in self.known:
            return self.known[n]
        e = self.lets.get(n)
        if e is None or n in self.busy:
            raise _Unknown(n)
        self.busy.add(n)
        v = self.known[n] = self.value(e)
        return v

    def value(self, e: H.Expr) -> int:
        t = e.type
        if t.lanes != 1 or t.code not in ("int", "uint"):
            raise _Unknown(str(t))
        if isinstance(e, H.IntImm):
            return e.value
        if isinstance(e, H.Variable):
            return self.name(e.name)
        if isinstance(e, H.Cast):
            return _wrap(self.value(e.value), t.code, t.bits)
        if isinstance(e, H.Not):
            return int(not self.value(e.a))
        if isinstance(e, H.Select):
            return self.value(e.true_value) if self.value(e.cond) else self.value(e.false_value)
        if isinstance(e, H.Let):
            self.known[e.name] = self.value(e.value)
            return self.value(e.body)
        if isinstance(e, H.BinOp):
            a, b = self.value(e.a), self.value(e.b)
            r = _binop(e.op, a, b)
            return r if e.op in H.CMP_OPS or e.op in H.LOGIC_OPS else _wrap(r, t.code, t.bits)
        raise _Unknown(type(e).__name__)


def _binop(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "%"):
        if b == 0:
            return 0  # Halide: x / 0 == 0 and x % 0 == 0
        q = a // b if b > 0 else -(a // -b)  # Euclidean: the remainder is never negative
        return q if op == "/" else a - b * q
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    cmp = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
           "&&": bool(a) and bool(b), "||": bool(a) or bool(b)}
    return int(cmp[op])


def _wrap(v: int, code: str, bits: int) -> int:
    if bits == 1:
        return int(v != 0)
    v &= (1 << bits) - 1
    return v - (1 << bits) if code == "int" and v >> (bits - 1) else v


def required_region(q: Queries, output: str, known: Mapping[str, int]) -> Optional[list[tuple[int, int]]]:
    """(min, extent) per dimension the bounds query asks of `output` given the `known` values (at
    least the query's `needs`), or None when it cannot be evaluated."""
    for oq in q.outputs:
        if oq.output == output:
            if not all(n in known for n in oq.needs):
                return None
            return answer(q, oq, tuple(known[n] for n in oq.needs))
    return None


def answer(q: Queries, oq: OutputQuery, values: tuple[int, ...]) -> Optional[list[tuple[int, int]]]:
    """`oq`'s (min, extent) per dimension for `values` of its `needs` (in order), or None when it
    cannot be evaluated."""
    ev = _Evaluator(dict(zip(oq.needs, values)), q.lets)
    try:
        return [(ev.value(mn), ev.value(ext)) for mn, ext in oq.dims]
    except (_Unknown, KeyError):
        return None


__all__ = ["OutputQuery", "Queries", "answer", "queries", "required_region"]
