"""The compiled matcher (pitchfork/trs/compiled.py) against the interpreted one it replaces in the
rewriter: on random terms (termgen) and every sub-term of them, for every rule set the compiler uses
(lifting, each ISA's lowering, the generic expansions), the compiled pattern yields exactly the bindings
`pattern.match` yields, in the same order; the compiled predicate agrees with `check_predicate`; the
(op, type) index and the rewriter's (op, type, operand ops) rows leave out only patterns that cannot
match; and a whole rewrite gives the same term as
the unindexed, interpreted rewriter (the one before compilation, kept here as the reference)."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from hypothesis import HealthCheck, given, settings

from fpir import parse
from fpir.term import Term
from fpir.types import FPIRTypeError
from pitchfork.selection.bounds import bounds
from pitchfork.selection.lift import lift_rules, normalize_shift_constants
from pitchfork.selection.lower import generic_rules
from pitchfork.targets import load_target
from pitchfork.trs.compiled import compile_pattern, compile_predicate
from pitchfork.trs.pattern import Bindings, match
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import NoRewrite, Rule, RuleSet, build_rhs, check_predicate

from trs.termgen import fpir_terms, integer_terms


@lru_cache(maxsize=1)
def rule_sets() -> list[RuleSet]:
    return [lift_rules(), generic_rules()] + [load_target(isa).rules for isa in ("x86-avx2", "arm64", "hvx128")]


class InterpretedRewriter(Rewriter):
    """The rewriter's rule loop as it was before compilation: every rule under the node's op, matched by
    the generator matcher, predicates interpreted."""

    def _best(self, t: Term) -> Optional[Term]:
        candidates = self.rules.index.get(t.op)
        if not candidates:
            return None
        here = self.cost(t)
        best: Optional[tuple[tuple, Term, Rule]] = None
        for rule, pattern in candidates:
            for b in match(pattern, t, Bindings()):
                if not check_predicate(rule, b, self.bounds, self.streams):
                    continue
                try:
                    rhs = build_rhs(rule, b, self.bounds, t.type)
                except (NoRewrite, FPIRTypeError):
                    continue
                if rhs.type != t.type:
                    continue
                c = self.cost(rhs)
                if c >= here:
                    continue
                if best is None or c < best[0]:
                    best = (c, rhs, rule)
        if best is None:
            return None
        self.stats.rewrites += 1
        self.stats.fired[best[2].name] += 1
        return best[1]


def check_node(rs: RuleSet, t: Term) -> int:
    """Compiled == interpreted at node t for every rule of rs indexed under t's op; returns matches seen."""
    seen = 0
    rows = rs.compiled().candidates(t.op, t.type)
    listed = {(r.name, p) for r, p, _m, _f in rows}
    # what the rewriter tries at t: the (op, type) rows whose operand ops fit t's, in the same order
    tried = rs.compiled().candidates_for(t)
    kept = {(r.name, p) for r, p, _m, _f in tried}
    assert tried == [row for row in rows if (row[0].name, row[1]) in kept]
    for rule, pattern in rs.index.get(t.op, []):
        want = [(b.terms, b.types) for b in match(pattern, t, Bindings())]
        if (rule.name, pattern) not in listed:
            assert want == [], f"{rule.name} left out of the index for {t.op}:{t.type} but matches {t}"
            continue
        if (rule.name, pattern) not in kept:
            assert want == [], f"{rule.name} left out for the operand ops of {t} but matches it"
        got = compile_pattern(pattern)(t, {}, {})
        assert got == want, f"{rule.name} on {t}"
        for r, p, m, _f in rows:  # the generated matcher the rewriter runs (pitchfork/trs/matchgen.py)
            if r is rule and p is pattern:
                assert m(t, {}, {}) == want, f"generated matcher of {rule.name} on {t}"
        pred = compile_predicate(rule.pred_raw)
        for terms, types in got:
            seen += 1
            ref = check_predicate(rule, Bindings(terms, types), bounds)
            if pred is not None:
                assert pred(terms, types, bounds, None) == ref, f"predicate of {rule.name} on {t}"
    return seen


def check_term(term: Term) -> None:
    for rs in rule_sets():
        for t in term.walk():
            check_node(rs, t)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(integer_terms())
def test_compiled_matches_interpreted_on_integer_terms(term: Term) -> None:
    check_term(term)
    lifted = Rewriter(lift_rules()).rewrite(normalize_shift_constants(term))
    assert lifted is InterpretedRewriter(lift_rules()).rewrite(normalize_shift_constants(term))
    check_term(lifted)  # FPIR ops: what the lowering rules see
    for isa in ("x86-avx2", "arm64", "hvx128"):
        info = load_target(isa)
        assert Rewriter(info.rules, cost=info.cost).rewrite(lifted) is \
            InterpretedRewriter(info.rules, cost=info.cost).rewrite(lifted)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fpir_terms())
def test_compiled_matches_interpreted_on_fpir_terms(term: Term) -> None:
    check_term(term)
    for isa in ("x86-avx2", "arm64", "hvx128"):
        info = load_target(isa)
        assert Rewriter(info.rules, cost=info.cost).rewrite(term) is \
            InterpretedRewriter(info.rules, cost=info.cost).rewrite(term)


def test_every_rule_matches_somewhere_through_the_compiled_path() -> None:
    """Not vacuous: the idioms of the lifting corpus fire rules, and the compiled path sees the matches."""
    from benchmarks.micro_lift import CORPUS, SOBEL

    seen = 0
    for text in [SOBEL, *CORPUS]:
        term = normalize_shift_constants(parse(text))
        for t in term.walk():
            seen += check_node(lift_rules(), t)
        assert Rewriter(lift_rules()).rewrite(term) is InterpretedRewriter(lift_rules()).rewrite(term)
    assert seen > 50


def test_rule_set_pickles_without_its_compiled_form() -> None:
    import pickle

    rs = RuleSet(list(lift_rules().rules))
    rs.compiled().candidates("add", parse("a_u16 + b_u16").type)
    again = pickle.loads(pickle.dumps(rs))
    assert [r.name for r in again.rules] == [r.name for r in rs.rules]
    t = parse("u8((u16(a_u8) + u16(b_u8) + 1) >> 1)")
    assert Rewriter(again).rewrite(t) is Rewriter(rs).rewrite(t)


def test_every_predicate_compiles() -> None:
    """The interpreter fallback is for forms the rule files do not use: every shipped predicate compiles."""
    missing = [r.name for rs in rule_sets() for r in rs.rules if compile_predicate(r.pred_raw) is None]
    assert missing == []


def test_generated_matchers_are_made_once_per_pattern(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """pitchfork/trs/matchgen.py generates each distinct pattern's matcher once per process: a new rule set
    of rules seen before generates nothing, one rule more generates that rule's pattern only (synth
    builds many such rule sets). Counted, not timed."""
    from pitchfork.trs import matchgen
    from pitchfork.trs.rules import parse_rule

    generated: list[int] = []
    real = matchgen.generate_matchers

    def counting(patterns, fallbacks, name="rules"):  # type: ignore[no-untyped-def]
        generated.append(len(patterns))
        return real(patterns, fallbacks, name)

    monkeypatch.setattr(matchgen, "generate_matchers", counting)
    rules = list(lift_rules().rules)
    t = normalize_shift_constants(parse("u8(min(u16(a_u8) + u16(b_u8), 255))"))
    want = Rewriter(RuleSet(list(rules))).rewrite(t)
    before = sum(generated)
    assert Rewriter(RuleSet(list(rules))).rewrite(t) is want
    assert sum(generated) == before
    probe = parse_rule("zz_probe_never: min(x_u8, 201) -> x_u8 if 1 == 2")
    assert Rewriter(RuleSet(rules + [probe])).rewrite(t) is want
    assert sum(generated) == before + 1
