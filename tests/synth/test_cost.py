"""The synthesis lowering cost: a same-width cast is a bitcast (free, as a reinterpret), so the
search no longer "wins" by rewriting one into a different form with the same instructions."""

from __future__ import annotations

from fpir.text import parse
from pitchfork.targets import load_target, target_cost
from synth.cost import lowering_cost
from synth.search import synthesize
from synth.tasks import lowering_grammar


def test_same_width_cast_is_free_like_a_reinterpret() -> None:
    cast, rei = parse("i16(x_u16)"), parse("reinterpret<i16>(x_u16)")
    assert lowering_cost(cast) == lowering_cost(rei)
    assert target_cost(cast)[0] == 1  # the compiler's own cost is unchanged
    assert lowering_cost(parse("i8(x_u16)"))[0] == 1  # a narrowing is an instruction


def test_no_rule_that_only_removes_a_same_width_cast() -> None:
    load_target("arm64")
    # the committed synth_lower_arm64_300c11ae59 came from charging the cast: the uaba form it
    # produced has the same two instructions
    lhs = parse("i16(v0_u16 + arm.urhadd(v1_u16, v2_u16))")
    bound = (lowering_cost(lhs)[0], 0, 0)
    assert bound[0] == 2
    res = synthesize(lhs, lowering_grammar(lhs, "arm64"), bound, max_terms=60_000)
    assert res.status == "exhausted" and res.rhs is None  # nothing with fewer instructions exists
