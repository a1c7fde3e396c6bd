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

When the whole query runs out between two terms that both multiply, the proof goes to the rule
verifier's multiplier fallbacks (`synth/verify_fallback.py`: products as uninterpreted functions, then
exact integer arithmetic), as the search's own proof does (`synth.search.prove_equal`): bit-blasting
two differently built 32-bit multipliers does not finish (HVX `rounding_mul_shr(x_i32, y_i32, 31)`
against `vmpyo_rnd_sacc(vmpye(x, y), x, y)`: UNKNOWN at 20M units), so without it a judge could not
prove a rule the search had found and verified. Both fallbacks are sound (an over-approximation and an
exact encoding), so they add proofs, never a wrong one.

Invariant: VALID only when every query of the decomposition (or the whole query, or one of its
multiplier fallbacks) is unsat.
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
    the rlimit, else step-wise, else directly at the full rlimit, else (when that runs out between two
    products) by the multiplier fallbacks. `memo` keeps verdicts of pairs."""
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
        whole = equivalent(t, s, rlimit=rlimit).status
        # an INVALID verdict is a real counterexample: only a query that ran out goes to the fallbacks
        ok = whole == "VALID" or (whole == "UNKNOWN" and _by_products(t, s, rlimit))
    memo[key] = ok
    return ok


def _by_products(t: Term, s: Term, rlimit: int) -> bool:
    """Whether the multiplier fallbacks (module doc) prove `t == s`; tried only when both multiply and
    neither combines lanes (the fallbacks encode one lane; `fpir.z3enc.equivalent` proves lane-combining
    terms lane by lane), with the same rlimit as the whole query."""
    from fpir.z3enc import has_lane_ops
    from synth.verify_fallback import fallback, multiplies

    if has_lane_ops(t) or has_lane_ops(s) or not (multiplies(t) and multiplies(s)):
        return False
    v = fallback(t, s, (), rlimit)
    return v is not None and v.status == "VALID"
