"""Translation validation of the e-graph engine's results: a Z3 proof (fpir.z3enc.equivalent, under a
resource limit, never a wall-clock timeout) that the result equals the input.

Two proofs are tried, the cheap one first; either one VALID accepts the result:

1. `result == greedy` with the sub-terms the two share abstracted (`abstract_shared`): every maximal
   sub-term present in both is replaced, on both sides, by one fresh variable of its type. A proof for
   every value of those variables is a proof for the values the sub-terms take, so this is sound; it
   fails (INVALID or UNKNOWN) only where the equality needs what the shared sub-terms compute (their
   range), and then proof 2 decides. The e-graph's result and greedy's differ in a few places of a large
   expression, so this formula is small. `greedy` is the greedy TRS's lifting of the input, equal to it
   by the verified lifting rules (the guarantee every greedy result carries); its flag facts follow from
   the input's (a rule's right-side facts are proved from its left side's) and are assumed.
2. `result == input` (the whole expressions), assuming the input's flag facts.

Invariant: `validate_result` returns '' only after Z3 answered VALID to one of these queries.
"""

from __future__ import annotations

from typing import Optional

from fpir.term import Term, intern, var
from fpir.types import FPIRTypeError


def abstract_shared(a: Term, b: Term) -> tuple[Term, Term]:
    """`a` and `b` with every maximal non-leaf sub-term they share replaced by one fresh variable
    (`_shared<i>`, its type; the same variable on both sides). Terms are interned, so sharing is
    identity."""
    common = {t for t in a.walk() if t.args} & {t for t in b.walk() if t.args}
    if not common:
        return a, b
    taken = {v.name for v in a.variables()} | {v.name for v in b.variables()}
    fresh: dict[Term, Term] = {}

    def leaf(t: Term) -> Term:
        got = fresh.get(t)
        if got is None:
            i = len(fresh)
            while f"_shared{i}" in taken:
                i += 1
            taken.add(f"_shared{i}")
            got = fresh[t] = var(f"_shared{i}", t.type)
        return got

    def rebuild(root: Term) -> Term:
        if root in common:
            return leaf(root)
        memo: dict[Term, Term] = {}
        stack: list[tuple[Term, bool]] = [(root, False)]
        while stack:  # post-order without recursion, not descending into shared sub-terms
            t, done = stack.pop()
            if t in memo:
                continue
            if t in common:
                memo[t] = leaf(t)
                continue
            if not done:
                stack.append((t, True))
                stack.extend((x, False) for x in t.args if x not in memo)
                continue
            args = tuple(memo[x] for x in t.args)
            memo[t] = t if all(x is y for x, y in zip(args, t.args)) else intern(t.op, t.type, args, t.attrs)
        return memo[root]

    return rebuild(a), rebuild(b)


def prove_equal(original: Term, result: Term, rlimit: int) -> str:
    """'' if Z3 proves result == original (under the original's flag facts) within `rlimit`, else the
    reason."""
    from fpir.z3enc import equivalent, flag_facts

    try:
        facts = flag_facts(original)
        v = equivalent(original, result, assume=facts, rlimit=rlimit)
    except (ValueError, FPIRTypeError) as e:
        return f"translation validation failed: {e}"
    if v.status == "VALID":
        return ""
    return f"translation validation {v.status}: {v}"


def validate_result(original: Term, result: Term, greedy: Optional[Term], rlimit: int) -> tuple[str, str]:
    """(reason, how): reason '' when one of the module docstring's proofs is VALID (`how` says which:
    "shared" or "full"), else the full proof's reason."""
    if greedy is not None and greedy is not result:
        ga, ra = abstract_shared(greedy, result)
        if (ga, ra) != (greedy, result) and not prove_equal(ga, ra, rlimit):
            return "", "shared"
    why = prove_equal(original, result, rlimit)
    return why, "" if why else "full"
