"""Every lifting rule strictly lowers the cost, on concrete sample instances.

The rewriter silently refuses a rewrite that does not lower pitchfork.selection.cost, so a rule whose right
side is not cheaper would be dead without anyone noticing. For each rule, each type instance and each
alternative of its left side, Z3 picks values for the constant wildcards (and for the inputs) that
satisfy the rule's predicate; the left side is built with those constants, the inputs' bounds are
pinned to the chosen values (so bounds predicates hold), and the rewriter must fire the rule at the
root with a strictly cheaper result. Every rule must fire on at least one instance.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import z3

from fpir.term import Term, const
from fpir.text import FPIRSyntaxError, Raw
from fpir.types import USER_TYPES, FPIRTypeError, ScalarType
from pitchfork.selection.bounds import bounds
from pitchfork.selection.cost import cost
from pitchfork.selection.lift import lift_rules
from pitchfork.trs.pattern import _CWILD_RE, split_wildcard
from pitchfork.trs.predicate import PredicateError, Z3Domain, evaluate
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import Rule, RuleSet
from synth.verify import _Instance, type_variables

MAX_INSTANCES = 12  # instances fired per rule: enough to see every shape, keeps the test fast


class _Concrete(_Instance):
    """The left side with constant wildcards replaced by chosen values."""

    def __init__(self, tvars: dict[str, ScalarType], values: dict[str, int]) -> None:
        super().__init__(tvars, {})
        self.values = values

    def constant(self, node: Raw, expected: ScalarType | None) -> Term | None:
        if node.kind == "name" and _CWILD_RE.match(split_wildcard(node.text)[0]):
            name, texpr = split_wildcard(node.text)
            t = texpr.eval(self.tvars) if texpr is not None else expected
            assert t is not None
            return const(t.wrap(self.values[name]), t)
        return super().constant(node, expected)


def sample_instances(rule: Rule) -> Iterator[tuple[str, Term, dict[str, tuple[int, int]]]]:
    """(description, concrete left side, pinned input ranges) for instances where the rule can fire."""
    tv = type_variables(rule)
    for combo in itertools.product(USER_TYPES, repeat=len(tv)):
        tvars = dict(zip(tv, combo))
        for alt in rule.alternatives:
            symbols: dict[str, tuple[z3.BitVecRef, ScalarType]] = {}
            try:
                _Instance(tvars, symbols).elab(alt, None)
                dom = Z3Domain(symbols, tvars)
                pred = evaluate(rule.pred_raw, dom) if rule.pred_raw is not None else z3.BoolVal(True)
                builder = _Instance(tvars, symbols, dom)
                lhs_type = _Instance(tvars, {}).elab(alt, None).type
                builder.elab(rule.rhs_raw, lhs_type)  # type: ignore[arg-type]
            except (FPIRTypeError, FPIRSyntaxError, PredicateError):
                continue
            s = z3.Solver()
            s.set("rlimit", 20_000_000)  # deterministic, unlike a timeout
            s.add(z3.BoolVal(pred) if isinstance(pred, bool) else pred, *dom.side, *builder.assumptions)
            if s.check() != z3.sat:
                continue
            m = s.model()
            values = {n: t.wrap(m.eval(sym, model_completion=True).as_long()) for n, (sym, t) in symbols.items()}
            try:
                lhs = _Concrete(tvars, values).elab(alt, None)
            except (FPIRTypeError, FPIRSyntaxError):
                continue  # e.g. the chosen constants fold the left side away
            pinned = {n: (v, v) for n, v in values.items() if not _CWILD_RE.match(n)}
            yield (f"{tvars}", lhs, pinned)


RULES = lift_rules().rules


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule_lowers_cost_on_samples(rule: Rule) -> None:
    fired = 0
    for desc, lhs, pinned in sample_instances(rule):
        rw = Rewriter(RuleSet([rule]), bounds=lambda t, p=pinned: bounds(t, p))
        result = rw._best(lhs)
        assert not rw.stats.not_decreasing, f"{rule.name} at {desc}: {lhs} does not get cheaper"
        assert not rw.stats.rhs_errors, f"{rule.name} at {desc}: right side fails on {lhs}"
        if result is None:
            continue  # building the sample simplified the shape (an identity cast vanished)
        assert cost(result) < cost(lhs)
        assert result.type == lhs.type
        fired += 1
        if fired >= MAX_INSTANCES:
            break
    assert fired, f"{rule.name} never fired on a sample instance"
