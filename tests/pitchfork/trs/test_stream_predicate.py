"""The structural `stream(x, y, z)` predicate: at match time it reads the rewriter's stream facts (which
leaves read one stream of memory at consecutive element offsets); for the verifier it adds no fact, so
a rule it guards is proved for every operand."""

from __future__ import annotations

import pytest

from fpir import parse
from pitchfork.trs.predicate import is_stream
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import RuleFileError, RuleSet, parse_rules
from synth.verify import verify_rule

RULE = "tap3: widening_add(x_u8, z_u8) + widening_shl(y_u8, 1) -> u16(y_u8) if stream(x_u8, y_u8, z_u8)\n"
TERM = "widening_add(a_u8, c_u8) + widening_shl(b_u8, 1)"


@pytest.mark.parametrize(("streams", "fires"), [
    ({"a": ("s", 4), "b": ("s", 5), "c": ("s", 6)}, True),
    ({"c": ("s", 4), "b": ("s", 5), "a": ("s", 6)}, True),   # widening_add commutes: x = c, z = a
    ({"a": ("s", 4), "b": ("s", 6), "c": ("s", 5)}, False),  # the middle tap is not one element on
    ({"a": ("s", 4), "b": ("t", 5), "c": ("s", 6)}, False),  # another stream
    ({"a": ("s", 4), "b": ("s", 5)}, False),                 # no fact about c
    ({}, False),
])
def test_stream_rule_fires_only_on_consecutive_offsets_of_one_stream(streams: dict, fires: bool) -> None:
    rw = Rewriter(RuleSet(parse_rules(RULE)), streams=streams)
    out = rw.rewrite(parse(TERM))
    assert (rw.stats.fired["tap3"] == 1) == fires, str(out)


def test_stream_of_non_variables_is_false() -> None:
    assert not is_stream([parse("a_u8 + b_u8"), parse("b_u8"), parse("c_u8")], {"b": ("s", 1), "c": ("s", 2)})


def test_stream_is_structural_for_the_verifier() -> None:
    # Proved for every operand: a guarded rule is VALID exactly when the unguarded one is.
    (good,) = parse_rules("r: x_u8 + y_u8 + z_u8 -> z_u8 + (y_u8 + x_u8) if stream(x_u8, y_u8, z_u8)")
    (bad,) = parse_rules("r: x_u8 + y_u8 - z_u8 -> z_u8 + y_u8 - x_u8 if stream(x_u8, y_u8, z_u8)")
    assert verify_rule(good).status == "VALID"
    assert verify_rule(bad).status == "INVALID"


def test_stream_takes_three_term_wildcards() -> None:
    with pytest.raises(RuleFileError, match="stream takes 3 argument"):
        parse_rules("r: x_u8 + y_u8 -> y_u8 + x_u8 if stream(x_u8, y_u8)", "f.rules")


def test_is_varying_is_the_selection_negation_of_is_uniform_and_structural_for_the_verifier() -> None:
    """`is_varying(x)` (not provably the same in every lane) fires on a per-lane operand only, and adds no
    fact for the verifier: a rule it guards is VALID exactly when the unguarded one is."""
    from fpir.ops import make
    from fpir.term import var
    from fpir.types import parse_type

    import pitchfork.targets.x86  # noqa: F401  (declares x86.psrlv_widened)

    (rule,) = parse_rules("r: x_u16 >> y_u16 -> x86.psrlv_widened(x_u16, y_u16) if is_varying(y_u16)")
    x = var("x", parse_type("u16"))
    for y, fires in ((var("n", parse_type("u16")), True), (var("n", parse_type("u16"), uniform=True), False)):
        rw = Rewriter(RuleSet([rule]), cost=lambda t: (0,) if t.op.startswith("x86.") else (1,))
        rw.rewrite(make("shr", x, y))
        assert (rw.stats.fired["r"] == 1) == fires
    assert verify_rule(rule).status == "VALID"
    (bad,) = parse_rules("r: x_u16 << y_u16 -> x86.psrlv_widened(x_u16, y_u16) if is_varying(y_u16)")
    assert verify_rule(bad).status == "INVALID"
