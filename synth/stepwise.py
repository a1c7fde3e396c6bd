"""Step-wise equivalence proofs of a lowered expression, for the rediscovery judges (synth/bringup.py).

A judge proves the synthesized code `s` of a lifted sub-term `t` equal to `t` with Z3. On large
sub-terms one query over the whole of both runs out of its rlimit (arm64 `uabd` over a sum of
widened products), although every rule and expansion involved is verified. `prove_lowered` splits
the proof the way the rewriter built `s`: every proper sub-term `u` of `t` whose lowering `lower(u)`
occurs in `s` is abstracted, in both, by one fresh variable; the small root query (`t` and `s` with
those variables) and the queries `u == lower(u)` (recursively, the same way) together prove
`t == s`: substituting `u` back for each variable turns the abstracted `t` into `t` and the
abstracted `s` into `s` up to the proven `u == lower(u)`. That is sound for any choice of sub-terms;
it is incomplete where the root's equality needs a fact about a child (a range the child's value
keeps), and then the whole query is tried as before. Every query is bounded by the rlimit (a count),
never by a clock, so a verdict does not depend on machine load.

Invariant: VALID only when every query of the decomposition (or the whole query) is unsat.
"""

from __future__ import annotations

from typing import Callable

from fpir.term import Term, var
from synth.corpus import rebuild


def _replace(t: Term, subst: dict[Term, Term]) -> Term:
    """`t` with every maximal sub-term that is a key of `subst` replaced (top-down)."""
    hit = subst.get(t)
    if hit is not None:
        return hit
    if not t.args:
        return t
    return rebuild(t, [_replace(a, subst) for a in t.args])


def prove_lowered(
    t: Term, s: Term, lower: Callable[[Term], Term], rlimit: int, memo: dict[tuple[Term, Term], bool] | None = None
) -> bool:
    """Whether Z3 proves `t == s`, where `s` is `lower(t)` (see module doc): directly at a tenth of
    the rlimit, else step-wise, else directly at the full rlimit. `memo` keeps verdicts of pairs."""
    from fpir.z3enc import equivalent

    memo = {} if memo is None else memo
    key = (t, s)
    if key in memo:
        return memo[key]
    if t == s or equivalent(t, s, rlimit=max(1, rlimit // 10)).status == "VALID":
        memo[key] = True
        return True
    inside = set(s.walk())
    subst_t: dict[Term, Term] = {}
    subst_s: dict[Term, Term] = {}
    parts: list[tuple[Term, Term]] = []
    for u in t.walk():
        if u is t or not u.args or u in subst_t:
            continue
        try:
            low = lower(u)
        except Exception:  # noqa: BLE001 - a sub-term the rules cannot take alone is just not abstracted
            continue
        if low.type != u.type or low not in inside:
            continue
        x = subst_s.get(low)
        if x is None:
            x = var(f"_step{len(subst_s)}", u.type)
            subst_s[low] = x
        subst_t[u] = x
        parts.append((u, low))
    ok = False
    if parts:
        try:
            root = equivalent(_replace(t, subst_t), _replace(s, subst_s), rlimit=rlimit).status == "VALID"
        except Exception:  # noqa: BLE001 - e.g. lane structure the abstraction breaks: fall back
            root = False
        ok = root and all(prove_lowered(u, low, lower, rlimit, memo) for u, low in parts)
    if not ok:
        ok = equivalent(t, s, rlimit=rlimit).status == "VALID"
    memo[key] = ok
    return ok
