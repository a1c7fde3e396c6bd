"""Work done on uniform operands only: computed once outside the loop, not once per vector.

A uniform leaf (`var(..., uniform=True)`: the frontend's splat of a scalar, a Param or a value the
inner loop does not change) holds the same value for every vector the loop computes, and so does every
node whose leaves are all uniform or constant: LLVM hoists that work out of the loop (conv3x3a16's
`cast<i16>(w) * 128` bias of the hand rule smlal_mixed_bias, the clamp `min(y, 32)` of a shift by a
Param). Charged per vector, such work made forms that move work onto the uniform operand look dearer
than they run (smlal_mixed_bias: 5 against the widened multiply's 4, 3 against 3 with it free).

`hoisted(t)` says whether node `t` (with operands) is such work: every leaf under it constant or
uniform, one uniform at least (a node over constants alone keeps its cost, as before: LLVM folds it,
and the rules' ties between such forms stay as they were). The lowering costs charge it no
instructions (`pitchfork.targets._target_node_cost`, synth/cost.py); an FPIR op there keeps its
cost, so the lowering still replaces it (with what the target has, hoisted too).
"""

from __future__ import annotations

from fpir.term import Term

#: per interned term with operands: VARYING, CONSTANT (constant leaves only) or UNIFORM (constant and
#: uniform leaves, one uniform at least); filled bottom-up, cleared past HOISTED_MEMO_LIMIT
VARYING, CONSTANT, UNIFORM = 0, 1, 2
_KIND: dict[Term, int] = {}
HOISTED_MEMO_LIMIT = 200_000


def _leaf_kind(t: Term) -> int:
    if t.is_var:
        return UNIFORM if t.is_uniform_leaf else VARYING
    return CONSTANT if t.is_const else VARYING


def _combine(kinds: "list[int]") -> int:
    return VARYING if VARYING in kinds else (UNIFORM if UNIFORM in kinds else CONSTANT)


def hoisted(term: Term) -> bool:
    """`term` has operands, every leaf under it is a constant or a uniform leaf, one uniform at least
    (iterative: a 10,000-deep term does not recurse)."""
    if not term.args:
        return False
    hit = _KIND.get(term)
    if hit is not None:
        return hit == UNIFORM
    if len(_KIND) > HOISTED_MEMO_LIMIT:
        _KIND.clear()
    stack: list[tuple[Term, bool]] = [(term, False)]
    while stack:  # post-order over the sub-terms with operands not known yet
        t, ready = stack.pop()
        if t in _KIND:
            continue
        if ready:
            _KIND[t] = _combine([_KIND[a] if a.args else _leaf_kind(a) for a in t.args])
            continue
        stack.append((t, True))
        stack.extend((a, False) for a in t.args if a.args and a not in _KIND)
    return _KIND[term] == UNIFORM
