"""Section 4.3 generalization beyond single constants: relations between left-side constants
(a rounding term beside its shift) and merged predicates."""

from __future__ import annotations

from fpir.text import parse
from pitchfork.trs.rules import parse_rule
from synth.generalize import constant_relations, generalize, simplify_predicates
from synth.verify import verify_rule


def test_rounding_constant_is_tied_to_its_shift() -> None:
    g = generalize(parse("u8((v0_i16 + 8) >> 4)"), parse("u8(rounding_shr(v0_i16, u16(4)))"))
    assert g is not None and g.constants == "related"
    assert "c0 == 1 << (c1 - 1)" in g.text
    rule = parse_rule(f"r: {g.text}", "<test>", 1)
    assert verify_rule(rule).status == "VALID"
    # the rule now also covers (x + 16) >> 5, which the pinned one (c0 == 8 && c1 == 4) did not
    from pitchfork.trs.rewriter import Rewriter
    from pitchfork.trs.rules import RuleSet

    out = Rewriter(RuleSet([rule])).rewrite(parse("u8((x_i16 + 16) >> 5)"))
    assert "rounding_shr" in str(out)


def test_relations_and_predicate_merging() -> None:
    consts = [parse("x_u8 + 8").args[1], parse("x_u8 >> 4").args[1]]
    assert constant_relations(consts) == [(0, "c0 == 1 << (c1 - 1)")]
    assert simplify_predicates(["c1 >= 0", "c1 <= 32767", "c0 == 1 << (c1 - 1)", "c1 <= 8"]) == [
        "c0 == 1 << (c1 - 1)", "c1 >= 0", "c1 <= 8"]
    assert simplify_predicates(["c0 >= 3", "c0 <= 3"]) == ["c0 == 3"]
