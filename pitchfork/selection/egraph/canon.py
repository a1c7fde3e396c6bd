"""Alpha-renaming of lifting inputs, so that one saturation and one proof serve every expression of the
same shape: a pipeline's vector body, its tails and its unrolled copies differ only in the names of
their loads (gaussian3x3's four row expressions are one shape over load0..load35).

`canonical(t)` renames the variables of `t` in first-visit order (post-order walk) to `_v0, _v1, ...`
keeping each one's type and uniform attribute, and returns the renamed term with the map back.
Variables named like the Z3 encoding's broadcast constants (fpir.term.BROADCAST_NAME: c0, k1, ...)
keep their names, since the encoding reads a meaning into them.

Invariant: `rename(canonical(t)[0], back) is t`; renaming is a bijection on variables of equal type
and attributes, so lifting, costs and Z3 verdicts carry over between a term and its canonical form.
"""

from __future__ import annotations

from fpir.term import BROADCAST_NAME, Term, intern


def _is_fixed(name: str) -> bool:
    return bool(BROADCAST_NAME.match(name))


def canonical(term: Term) -> tuple[Term, dict[Term, Term]]:
    """(renamed term, map from canonical variables back to the originals)."""
    # one post-order walk names the variables and rebuilds the term (what `rename(term, forward)`
    # after a naming walk gives: each node's arguments come before it, variables in first-visit order)
    forward: dict[Term, Term] = {}
    memo: dict[Term, Term] = {}
    n = 0
    for t in term.walk():  # distinct nodes
        if t.op == "var":
            if _is_fixed(t.name):
                forward[t] = t
            else:
                forward[t] = intern("var", t.type, (), (f"_v{n}",) + tuple(t.attrs[1:]))
                n += 1
            memo[t] = forward[t]
        elif not t.args:
            memo[t] = t
        else:
            args = tuple(memo[a] for a in t.args)
            memo[t] = t if all(x is y for x, y in zip(args, t.args)) else intern(t.op, t.type, args, t.attrs)
    back = {v: k for k, v in forward.items()}
    return memo[term], back


def rename(term: Term, mapping: dict[Term, Term]) -> Term:
    """`term` with its variables replaced per `mapping` (flags, types and attributes kept as they are)."""
    return rename_all([term], mapping)[0]


def rename_all(terms: list[Term], mapping: dict[Term, Term]) -> list[Term]:
    """`rename` of each of `terms`, sharing one memo (the sub-terms of one expression overlap)."""
    memo: dict[Term, Term] = {}
    out = []
    for root in terms:
        for t in root.walk():
            if t in memo:
                continue
            if t.op == "var":
                memo[t] = mapping.get(t, t)
            elif not t.args:
                memo[t] = t
            else:
                args = tuple(memo[a] for a in t.args)
                memo[t] = t if all(x is y for x, y in zip(args, t.args)) else intern(t.op, t.type, args, t.attrs)
        out.append(memo[root])
    return out
