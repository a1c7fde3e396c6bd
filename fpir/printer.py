"""FPIR terms as text, in the syntax fpir.text parses: `to_text(t)` (also `str(t)`).

A post-order walk (no recursion on the expression's depth). Constants are written bare where the
op's `arg_hint` gives them their type back, else with their type (`u16(5)`); flags as a call
(`add.nsw(a, b)`); infix operators with C precedence and only the parentheses it needs.

Invariant: `fpir.text.parse(to_text(t)) is t` for every term. This module sits below fpir.term (which
prints through it) and above fpir.opspec; it names `Term` in annotations only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from fpir.opspec import spec
from fpir.types import ScalarType, i32

if TYPE_CHECKING:
    from fpir.term import Term


_PREC = {"or": 3, "xor": 4, "and": 5, "eq": 6, "ne": 6, "lt": 7, "le": 7, "gt": 7, "ge": 7, "shl": 8, "shr": 8,
         "add": 9, "sub": 9, "mul": 10, "div": 10, "mod": 10}
_UNARY_PREC = 11
_ATOM_PREC = 12


def _const_text(t: Term, hinted: Optional[ScalarType]) -> tuple[str, int]:
    if hinted == t.type:
        return (str(t.value), _UNARY_PREC if t.value < 0 else _ATOM_PREC)
    return (f"{t.type.name}({t.value})", _ATOM_PREC)


def _fmt(t: Term, memo: dict[int, tuple[str, int]]) -> tuple[str, int]:
    if t.op == "var":
        return (f"{t.name}_{t.type.name}", _ATOM_PREC)
    if t.op == "const":
        return _const_text(t, i32)
    s = spec(t.op)
    known = [None if a.is_const else a.type for a in t.args]
    parts: list[tuple[str, int]] = []
    for i, a in enumerate(t.args):
        if a.is_const:
            h = s.arg_hint(i, known, None) if s.arg_hint else None
            parts.append(_const_text(a, h))
        else:
            parts.append(memo[id(a)])
    if t.args and t.attrs:  # flags: a call spelling, `add.nsw(a, b)`
        return (f"{t.op}.{'.'.join(t.attrs)}({', '.join(p[0] for p in parts)})", _ATOM_PREC)
    if t.op == "not":
        text, p = parts[0]
        return ("~" + (text if p >= _UNARY_PREC else f"({text})"), _UNARY_PREC)
    if t.op in _PREC:
        prec = _PREC[t.op]
        (lt, lp), (rt, rp) = parts
        left = lt if lp >= prec else f"({lt})"
        right = rt if rp > prec else f"({rt})"
        return (f"{left} {s.symbol} {right}", prec)
    inner = ", ".join(p[0] for p in parts)
    if t.op == "cast":
        return (f"{t.type.name}({inner})", _ATOM_PREC)
    if s.explicit_type:
        return (f"{t.op}<{t.type.name}>({inner})", _ATOM_PREC)
    return (f"{t.op}({inner})", _ATOM_PREC)


def to_text(term: Term) -> str:
    memo: dict[int, tuple[str, int]] = {}
    for t in term.walk():
        memo[id(t)] = _fmt(t, memo)
    return memo[id(term)][0]
