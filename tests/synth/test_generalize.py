"""Section 4.3 generalization beyond single constants: relations between left-side constants
(a rounding term beside its shift) and merged predicates."""

from __future__ import annotations

import pytest

from fpir.term import Term
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


def test_range_search_steps_out_from_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """The range of a constant: each whole side in one query when it holds, else steps 1, 2, 4, ...
    away from the value, then bisection; a constant valid only at its value costs two per side."""
    import synth.generalize as g

    calls: list[str] = []
    real = g._verify

    def counted(text: str, rlimit: int = g.VERIFY_RLIMIT) -> tuple[bool, int, str]:
        calls.append(text)
        return real(text, rlimit)

    monkeypatch.setattr(g, "_verify", counted)
    lhs, rhs = "v0_u8 >> c0_u8", "v0_u8 >> c0"  # valid for every c0: the bounds reach the type's ends
    assert g._range(lhs, rhs, [], 0, _u8(3), []) == (0, 255)
    n_wide = len(calls)
    calls.clear()
    # valid at 4 only: x >> c0 == x >> 4
    assert g._range(lhs, "v0_u8 >> 4", [], 0, _u8(4), []) == (4, 4)
    assert len(calls) == 5 and n_wide == 3  # (3, 3), then each whole side: 0..3, 3..255


def _u8(v: int) -> Term:
    from fpir.term import const
    from fpir.types import parse_type

    return const(v, parse_type("u8"))
