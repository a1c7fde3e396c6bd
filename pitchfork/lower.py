"""Lowering: FPIR terms to target instructions, per ISA (paper section 3.3), and generic expansions.

`select_instructions(term, target, isel)` is the whole instruction selector for one expression:

* isel="pitchfork": lift (pitchfork.lift), then rewrite with the target's lowering TRS
  (rules/lower/<isa>.rules, cost = the target's cost model), then expand whatever FPIR op is left
  with the generic lowering (rules/lower/generic.rules: efficient expansions that need no wider type
  where one exists; the op's own definition as the last resort);
* isel="llvm": the "LLVM alone" baseline: no lifting and no target rules; user-written FPIR ops are
  expanded generically, and LLVM's own instruction selection decides.

Invariant: the result contains only primitive ops and target instructions, and means exactly what
the input means (every rule involved is verified, see `pitchfork verify`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from fpir.ops import OPS, expansion, make, spec
from fpir.term import Term
from pitchfork.bounds import bounds
from pitchfork.trs.pattern import Bindings, match
from pitchfork.trs.rewriter import Rewriter, RewriteStats
from pitchfork.trs.rules import NoRewrite, RuleSet, build_rhs, check_predicate

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


@lru_cache(maxsize=1)
def generic_rules() -> RuleSet:
    path = RULES_DIR / "lower" / "generic.rules"
    return RuleSet.from_files([path] if path.exists() else [])


def _expand_node(t: Term) -> Term:
    """One FPIR node to an equivalent term without that node at its root."""
    for rule, pattern in generic_rules().index.get(t.op, []):
        for b in match(pattern, t, Bindings()):
            if not check_predicate(rule, b, bounds):
                continue
            try:
                rhs = build_rhs(rule, b, bounds)
            except (NoRewrite, TypeError, ValueError):
                continue
            if rhs.type == t.type:
                return rhs
    return expansion(t)


def expand_fpir(term: Term) -> Term:
    """Replace every FPIR op by primitive ops (target instructions are kept)."""
    memo: dict[Term, Term] = {}

    def go(t: Term) -> Term:
        hit = memo.get(t)
        if hit is not None:
            return hit
        if t.args:
            args = [go(a) for a in t.args]
            s = spec(t.op)
            cur = t if all(a is b for a, b in zip(args, t.args)) else make(
                t.op, *args, type=t.type if s.explicit_type else None)
        else:
            cur = t
        if cur.args and spec(cur.op).kind == "fpir":
            cur = go(_expand_node(cur))
        memo[t] = cur
        return cur

    return go(term)


@dataclass
class Selection:
    input: Term
    fpir: Term
    lowered: Term
    final: Term
    lift_stats: Optional[RewriteStats] = None
    lower_stats: Optional[RewriteStats] = None
    seconds: float = 0.0


def select_instructions(term: Term, target: str, isel: str = "pitchfork") -> Selection:
    import time

    from pitchfork.targets import load_target

    t0 = time.perf_counter()
    if isel == "llvm":
        final = expand_fpir(term)
        return Selection(term, term, term, final, seconds=time.perf_counter() - t0)
    if isel != "pitchfork":
        raise ValueError(f"isel must be 'pitchfork' or 'llvm', not {isel!r}")
    from pitchfork.lift import lifter

    lw = lifter()
    lifted = lw.rewrite(term)
    info = load_target(target)
    rw = Rewriter(info.rules, cost=info.cost)
    lowered = rw.rewrite(lifted)
    final = expand_fpir(lowered)
    return Selection(term, lifted, lowered, final, lw.stats, rw.stats, time.perf_counter() - t0)
