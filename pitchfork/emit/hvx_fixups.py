"""Rewrites of optimised LLVM IR that LLVM 22's Hexagon backend cannot select (HVX only).

`select <N x i1> %c, <N x i1> %a, <N x i1> %b` -- a choice between two *predicate* vectors -- aborts
instruction selection with "Cannot select: vN i1 = vselect" when N spans several HVX predicate
registers (the predicates of i32 compares concatenated to steer an i8 select). Our emitters never
write such a select, but InstCombine creates one from `select(c, x, y) > z` when one arm of the
compare folds (a saturating clamp compared with a bound). The rewrite is the same boolean function
in and/xor/or, which the backend handles on predicate registers:

    select(c, a, b) == (c & a) | ((c ^ true) & b)

It runs after the optimisation pipeline (nothing folds it back; code generation does not re-form
a predicate select from the logic ops) and changes nothing else: the module is returned as is when
no such select occurs. Invariant: the rewritten module computes the same values lane for lane.
"""

from __future__ import annotations

import re

_OPERAND = r"(%[\w.$-]+|zeroinitializer|poison|undef|splat \(i1 (?:true|false)\)|<[^<>]*>)"
_PRED_SELECT = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = select (?P<ty><\d+ x i1>) " + _OPERAND.replace("(", "(?P<c>", 1)
    + r", (?P=ty) " + _OPERAND.replace("(", "(?P<a>", 1) + r", (?P=ty) " + _OPERAND.replace("(", "(?P<b>", 1)
    + r"\s*$",
    re.M,
)


def has_predicate_select(ir_text: str) -> bool:
    return _PRED_SELECT.search(ir_text) is not None


def rewrite_predicate_selects(ir_text: str) -> str:
    """Every `select` between two `<N x i1>` vectors rewritten as and/xor/or (see the module doc)."""
    counter = iter(range(1 << 30))

    def expand(m: re.Match[str]) -> str:
        ind, dst, ty, c, a, b = m.group("ind", "dst", "ty", "c", "a", "b")
        k = next(counter)
        t, n, f = f"%pfx.selt.{k}", f"%pfx.seln.{k}", f"%pfx.self.{k}"
        return (f"{ind}{t} = and {ty} {c}, {a}\n"
                f"{ind}{n} = xor {ty} {c}, splat (i1 true)\n"
                f"{ind}{f} = and {ty} {n}, {b}\n"
                f"{ind}{dst} = or {ty} {t}, {f}")

    return _PRED_SELECT.sub(expand, ir_text)
