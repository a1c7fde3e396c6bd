"""Reductions wider than the search's lane factor, searched as a fold of folds.

The term banks evaluate a lane-combining op over lane groups of at most `search.MAX_LANE_FACTOR`
lanes (every bank block holds rows x factor values per variable), so a left side such as l2norm's
`vector_reduce_add_x32(widening_mul(x_i16, x_i16))` was never searched ("lane structure not searched")
and hand rule pmaddwd_pairs_x32 (`-> vector_reduce_add_x16(x86.pmaddwd_pairs(x, y))`) could not be
rediscovered. For an associative combine (wrapping add, min, max) a reduction by K is the reduction by
K / f of the reduction by f, for any f dividing K. `split_reduction` searches the inner reduction by f
(f = 2, 4, 8, the first that gives a right side), as its own left side, and wraps what it finds in the
outer reduction left to the generic expansion; the caller keeps the whole only if it is cheaper than
the left side's current lowering and then generalizes and verifies it at the full factor (Z3, as every
rule).

Invariant: the whole returned is `reduce_{K/f}(R)` with R proven equal to `reduce_f(E)` by the inner
search, hence equal to `reduce_K(E)` by associativity; it is verified again as a rule before it is kept.
"""

from __future__ import annotations

from typing import Callable, Optional

from fpir.opspec import reduce_op, spec
from fpir.term import Term

#: lane-wise combines whose reduction may be split (a saturating add is not associative)
SPLITTABLE = frozenset({"add", "min", "max"})
#: inner factors tried, smallest first (the hardware's pair and quad instructions)
INNER_FACTORS = (2, 4, 8)


def too_wide(t: Term, max_factor: int) -> bool:
    """`t` is a splittable reduction whose factor is above `max_factor`."""
    s = spec(t.op) if t.args else None
    return s is not None and s.reduce is not None and s.reduce[0] in SPLITTABLE and s.reduce[1] > max_factor


def split_reduction(t: Term, inner_search: Callable[[Term], Optional[Term]]) -> Optional[tuple[Term, Term]]:
    """(inner left side, whole right side) for the first inner factor whose reduction `inner_search`
    lowers (it returns a right side equal to its argument, or None), or None."""
    from fpir.ops import make

    combine, k = spec(t.op).reduce  # type: ignore[misc]
    for f in INNER_FACTORS:
        if k % f or k // f < 2:
            continue
        inner = make(reduce_op(combine, f), t.args[0])
        rhs = inner_search(inner)
        if rhs is not None:
            return inner, make(reduce_op(combine, k // f), rhs)
    return None
