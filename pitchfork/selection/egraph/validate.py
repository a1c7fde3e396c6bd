"""Translation validation of the e-graph engine's results: a proof that the result equals the input,
by exhaustion or by Z3 (fpir.z3enc.equivalent, under a resource limit, never a wall-clock timeout).

The proofs are tried cheapest first; any one of them accepts the result:

0. exhaustion: when the input's variables span at most 2^EXHAUSTIVE_BITS points (two 8-bit inputs,
   one 16-bit input) and no op combines lanes, both terms are evaluated by the reference interpreter
   (fpir.interp, the semantics every rule is verified against) on every point: equal everywhere is a
   proof. Unequal somewhere rejects the result, unless the input states flag facts (a difference may
   lie where they do not hold; then Z3 decides, assuming them);
1. `result == greedy` with the sub-terms the two share abstracted (`abstract_shared`): every maximal
   sub-term present in both is replaced, on both sides, by one fresh variable of its type. A proof for
   every value of those variables is a proof for the values the sub-terms take, so this is sound; it
   fails (INVALID or UNKNOWN) only where the equality needs what the shared sub-terms compute (their
   range), and then proof 2 decides. The e-graph's result and greedy's differ in a few places of a large
   expression, so this formula is small. `greedy` is the greedy TRS's lifting of the input, equal to it
   by the verified lifting rules (the guarantee every greedy result carries); its flag facts follow from
   the input's (a rule's right-side facts are proved from its left side's) and are assumed.
2. `result == input` (the whole expressions), assuming the input's flag facts; before it, a seeded
   random sample (edge values included) evaluated by the interpreter rejects a result that differs
   from a flag-free input without spending Z3's resource limit on it.

Invariant: `validate_result` returns '' only after an exhaustive evaluation found the terms equal on
every input or Z3 answered VALID to one of its queries.
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


#: input points evaluated for a proof by exhaustion: 2^18 (two 8-bit inputs and a 2-bit one, one 16-bit input)
EXHAUSTIVE_BITS = 18
#: random points (besides the edge values) of the refutation before a full Z3 proof
SAMPLE = 4096


def _evaluable(*terms: Term) -> bool:
    from fpir.opspec import has_lane_ops  # not fpir.z3enc's: asking must not import Z3

    return not any(has_lane_ops(t) for t in terms)


def _differ(a: Term, b: Term, env: dict) -> Optional[str]:
    """The first input (as 'x = 3, y = -1') where a and b differ on `env`'s points, or None."""
    import numpy as np

    from fpir.interp import evaluate

    va, vb = np.broadcast_arrays(np.asarray(evaluate(a, env)), np.asarray(evaluate(b, env)))
    bad = np.flatnonzero(va != vb)
    if not bad.size:
        return None
    i = int(bad[0])
    return ", ".join(f"{k} = {int(np.broadcast_to(v, va.shape).ravel()[i])}" for k, v in sorted(env.items()))


def _variables(*terms: Term) -> list[Term]:
    return sorted({v.name: v for t in terms for v in t.variables()}.values(), key=lambda v: v.name)


def exhaustive(original: Term, result: Term) -> Optional[str]:
    """'' if result == original on every input, the first differing input if not, None if the inputs
    span more than 2^EXHAUSTIVE_BITS points or an op combines lanes."""
    import numpy as np

    vs = _variables(original, result)
    if sum(v.type.bits for v in vs) > EXHAUSTIVE_BITS or not _evaluable(original, result):
        return None
    grids = np.meshgrid(*[np.arange(v.type.min, v.type.max + 1) for v in vs], indexing="ij") if vs else []
    env = {v.name: g.ravel().astype(v.type.np_dtype) for v, g in zip(vs, grids)}
    return _differ(original, result, env) or ""


def sampled_difference(original: Term, result: Term, seed: int = 28) -> Optional[str]:
    """An input where result != original among edge values and SAMPLE seeded random points, or None."""
    import numpy as np

    if not _evaluable(original, result):
        return None
    rng = np.random.default_rng(seed)
    env = {}
    for v in _variables(original, result):
        edges = [e for e in (v.type.min, v.type.min + 1, -1, 0, 1, 2, v.type.max - 1, v.type.max)
                 if v.type.min <= e <= v.type.max]
        rand = rng.integers(v.type.min, v.type.max, size=SAMPLE, endpoint=True, dtype=v.type.np_dtype)
        env[v.name] = np.concatenate([np.array(edges, dtype=object).astype(v.type.np_dtype), rand])
    return _differ(original, result, env)


def validate_result(original: Term, result: Term, greedy: Optional[Term], rlimit: int) -> tuple[str, str]:
    """(reason, how): reason '' when one of the module docstring's proofs holds (`how` says which:
    "exhaustive", "shared" or "full"), else why not."""
    from fpir.flags import has_flags  # not fpir.z3enc's: an exhaustive proof needs no Z3

    flagged = has_flags(original)
    try:
        cex = exhaustive(original, result)
    except (ValueError, ArithmeticError, KeyError, TypeError):  # the interpreter could not run it: Z3 decides
        cex = None
    if cex == "":
        return "", "exhaustive"
    if cex is not None and not flagged:
        return f"translation validation INVALID by exhaustion ({cex})", ""
    if greedy is not None and greedy is not result:
        ga, ra = abstract_shared(greedy, result)
        if (ga, ra) != (greedy, result) and not prove_equal(ga, ra, rlimit):
            return "", "shared"
    if cex is None and not flagged:
        try:
            diff = sampled_difference(original, result)
        except (ValueError, ArithmeticError, KeyError, TypeError):
            diff = None
        if diff is not None:
            return f"translation validation INVALID on a sample ({diff})", ""
    why = prove_equal(original, result, rlimit)
    return why, "" if why else "full"
