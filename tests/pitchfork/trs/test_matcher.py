"""Matcher unit tests: commutative matching, non-linear wildcards, alternates, polymorphic type
binding, constant wildcards, literals, predicates (in the matcher's Python domain)."""

from __future__ import annotations

import pytest

from fpir import parse
from fpir.term import Term
from fpir.types import i16, u8, u16
from pitchfork.selection.bounds import bounds
from pitchfork.trs.pattern import Bindings, match
from pitchfork.trs.rules import Rule, build_rhs, check_predicate, parse_rule


def rule(text: str) -> Rule:
    return parse_rule(text)


def first_match(r: Rule, term: Term) -> Bindings | None:
    for p in r.patterns:
        for b in match(p, term, Bindings()):
            if check_predicate(r, b, bounds):
                return b
    return None


def apply(r: Rule, text: str) -> str | None:
    t = parse(text)
    b = first_match(r, t)
    return None if b is None else str(build_rhs(r, b, bounds))


def test_typed_wildcard_matches_only_its_type() -> None:
    r = rule("r: x_u8 + y_u8 -> y_u8 + x_u8")
    assert first_match(r, parse("a_u8 + b_u8")) is not None
    assert first_match(r, parse("a_i8 + b_i8")) is None


def test_polymorphic_type_binding_is_consistent() -> None:
    r = rule("r: cast<W>(x_T) + y_W -> extending_add(y_W, x_T) if W == wide(T)")
    b = first_match(r, parse("u16(a_u8) + b_u16"))
    assert b is not None and b.types == {"W": u16, "T": u8}
    assert first_match(r, parse("i16(a_u8) + b_i16")) is None  # W = i16 is not wide(u8) = u16
    assert first_match(r, parse("u32(a_u8) + b_u32")) is None  # predicate: W must be wide(T)


def test_commutative_matching_both_orders() -> None:
    r = rule("r: cast<W>(x_T) + y_W -> extending_add(y_W, x_T) if W == wide(T)")
    assert apply(r, "u16(a_u8) + b_u16") == "extending_add(b_u16, a_u8)"
    assert apply(r, "b_u16 + u16(a_u8)") == "extending_add(b_u16, a_u8)"
    sub = rule("r: cast<W>(x_T) - y_W -> extending_sub(y_W, x_T) if W == wide(T)")
    assert apply(sub, "b_u16 - u16(a_u8)") is None  # sub is not commutative


def test_commutative_matching_backtracks_into_nested_choices() -> None:
    # The first order binds x to the wrong operand; the matcher must try the other one.
    r = rule("r: min(x_T, c0) + x_T -> x_T if is_unsigned(T)")
    assert apply(r, "a_u8 + min(a_u8, 3)") == "a_u8"
    assert apply(r, "min(3, a_u8) + a_u8") == "a_u8"


def test_non_linear_wildcards_require_the_same_term() -> None:
    r = rule("r: max(x_T, y_T) - y_T -> saturating_sub(x_T, y_T) if is_unsigned(T)")
    assert apply(r, "max(a_u8, b_u8) - b_u8") == "saturating_sub(a_u8, b_u8)"
    assert apply(r, "max(b_u8, a_u8) - b_u8") == "saturating_sub(a_u8, b_u8)"
    assert apply(r, "max(a_u8, b_u8) - c_u8") is None
    # identity of interned sub-terms, not just of leaves
    assert apply(r, "max(a_u8 + 1, b_u8 * c_u8) - b_u8 * c_u8") == "saturating_sub(a_u8 + 1, b_u8 * c_u8)"


def test_alternates_match_any_shape() -> None:
    r = rule("r: cast<N>(either(min(max(x_T, c0), c1), max(min(x_T, c1), c0))) -> saturating_cast<N>(x_T) "
             "if c0 == tmin(N) && c1 == tmax(N)")
    assert len(r.patterns) == 2
    for text in ("u8(min(max(a_i16, 0), 255))", "u8(max(min(a_i16, 255), 0))", "u8(min(255, max(0, a_i16)))"):
        assert apply(r, text) == "saturating_cast<u8>(a_i16)", text
    assert apply(r, "u8(min(max(a_i16, 1), 255))") is None


def test_constant_wildcards_match_constants_only() -> None:
    r = rule("r: cast<W>(x_T) * c0 -> widening_shl(x_T, log2(c0)) if W == wide(T) && is_pow2(c0)")
    assert apply(r, "u16(a_u8) * 8") == "widening_shl(a_u8, 3)"
    assert apply(r, "u16(a_u8) * 6") is None
    assert apply(r, "u16(a_u8) * b_u16") is None


def test_repeated_constant_wildcard_must_have_equal_values() -> None:
    r = rule("r: (x_T + c0) - c0 -> x_T")
    assert apply(r, "(a_u8 + 3) - 3") == "a_u8"
    assert apply(r, "(a_u8 + 3) - 4") is None


def test_literal_matches_any_type_with_that_value() -> None:
    r = rule("r: widening_add(x_T, y_T) >> 1 -> cast<wide(T)>(halving_add(x_T, y_T))")
    assert apply(r, "widening_add(a_u8, b_u8) >> 1") == "u16(halving_add(a_u8, b_u8))"
    assert apply(r, "widening_add(a_i16, b_i16) >> 1") == "i32(halving_add(a_i16, b_i16))"
    assert apply(r, "widening_add(a_u8, b_u8) >> 2") is None


def test_typed_constant_wildcard() -> None:
    r = rule("r: x_T + c0_T -> x_T - (0 - c0) if is_signed(T) && c0 < 0")
    assert apply(r, "a_i16 + -5") == "a_i16 - 5"
    assert apply(r, "a_i16 + 5") is None


def test_predicates_over_constants_and_types() -> None:
    r = rule("r: (x_T + c0) >> c1 -> rounding_shr(x_T, c1) "
             "if c1 > 0 && c1 < bits(T) && c0 == 1 << (c1 - 1) && upper_bounded(x_T, tmax(T) - c0)")
    assert apply(r, "((a_u8 >> 1) + 8) >> 4") == "rounding_shr(a_u8 >> 1, 4)"
    assert apply(r, "((a_u8 >> 1) + 7) >> 4") is None  # wrong rounding constant
    assert apply(r, "(a_u8 + 8) >> 4") is None  # may overflow: bounds do not prove it


def test_bounds_predicates_lower_and_fits() -> None:
    lo = rule("r: cast<N>(min(x_T, c0)) -> saturating_cast<N>(x_T) if c0 == tmax(N) && lower_bounded(x_T, tmin(N))")
    assert apply(lo, "u8(min(a_u16, 255))") == "saturating_cast<u8>(a_u16)"
    assert apply(lo, "u8(min(a_i16, 255))") is None
    assert apply(lo, "u8(min(i16(a_u8) * 3, 255))") == "saturating_cast<u8>(i16(a_u8) * 3)"
    fits = rule("r: cast<N>(x_T) -> saturating_cast<N>(x_T) if fits(x_T, N)")
    assert apply(fits, "u8(a_u16 >> 8)") == "saturating_cast<u8>(a_u16 >> 8)"
    assert apply(fits, "u8(a_u16 >> 7)") is None


def test_sum_fits_predicate() -> None:
    # the interval sum of the wildcards' bounds must lie in the type: 20 * 255 + 6 * 255 fits i16,
    # two full-range u8 products (255 * 255 each) do not
    r = rule("r: widening_add(x_T, y_T) -> cast<wide(T)>(x_T + y_T) if sum_fits(x_T, y_T, T)")
    assert apply(r, "widening_add(widening_mul(a_u8, 20), widening_mul(b_u8, 6))") \
        == "u32(widening_mul(a_u8, 20) + widening_mul(b_u8, 6))"
    assert apply(r, "widening_add(widening_mul(a_u8, b_u8), widening_mul(c_u8, d_u8))") is None
    three = rule("r: x_T + (y_T + z_T) -> z_T if sum_fits(x_T, y_T, z_T, T)")
    assert apply(three, "u16(a_u8) + (u16(b_u8) + u16(c_u8))") == "u16(c_u8)"
    assert apply(three, "(a_u16 >> 1) + ((b_u16 >> 1) + (c_u16 >> 1))") is None


def test_represents_predicate() -> None:
    r = rule("r: cast<W>(x_T) < cast<W>(y_T) -> x_T < y_T if represents(W, T)")
    assert apply(r, "u16(a_u8) < u16(b_u8)") == "a_u8 < b_u8"
    assert apply(r, "i16(a_u8) < i16(b_u8)") == "a_u8 < b_u8"
    assert apply(r, "u16(a_i8) < u16(b_i8)") is None  # sign extension into an unsigned type reorders


def test_type_functions_in_right_side() -> None:
    r = rule("r: abs(widening_sub(x_T, y_T)) -> cast<unsigned(wide(T))>(absd(x_T, y_T))")
    assert apply(r, "abs(widening_sub(a_i8, b_i8))") == "u16(absd(a_i8, b_i8))"
    t = parse("abs(widening_sub(a_i8, b_i8))")
    assert t.type == u16


def test_reinterpret_pattern_binds_its_type() -> None:
    r = rule("r: reinterpret<W>(widening_add(x_T, y_T)) >> 1 -> cast<W>(halving_add(x_T, y_T)) if is_unsigned(T)")
    b = first_match(r, parse("reinterpret<i16>(widening_add(a_u8, b_u8)) >> 1"))
    assert b is not None and b.types["W"] == i16


def test_negation_pattern() -> None:
    r = rule("r: select(x_T < 0, -x_T, x_T) -> reinterpret<T>(abs(x_T)) if is_signed(T)")
    assert apply(r, "select(a_i16 < 0, 0 - a_i16, a_i16)") == "reinterpret<i16>(abs(a_i16))"
    assert apply(r, "select(a_i16 < 0, -a_i16, b_i16)") is None


@pytest.mark.parametrize("text", ["u16(a_u8) * 3", "a_u16 + b_u16"])
def test_rule_set_indexes_by_root_op(text: str) -> None:
    from pitchfork.selection.lift import lift_rules

    rs = lift_rules()
    t = parse(text)
    assert all(p.op == t.op for _, p in rs.index.get(t.op, []))
    assert sum(len(v) for v in rs.index.values()) == sum(len(r.patterns) for r in rs.rules)


@pytest.mark.parametrize("text", ["T", "u8", "i32", "wide(T)", "narrow(T)", "signed(T)", "unsigned(T)",
                                  "wide(unsigned(T))", "narrow(u16)"])
def test_type_expr_evaluator_and_matcher_agree_with_eval_and_match(text: str) -> None:
    """TypeExpr.evaluator() / matcher() (what the compiled matchers call) give exactly eval / match, for
    every form, every type, with the variable bound to each type or unbound; match's input is not mutated."""
    from pitchfork.trs.pattern import parse_type_expr
    from fpir.types import USER_TYPES

    te = parse_type_expr(text)
    evaluate, matcher = te.evaluator(), te.matcher()
    bindings = [{}] + [{"T": t} for t in USER_TYPES]
    for tvars in bindings:
        assert evaluate(dict(tvars)) == te.eval(dict(tvars))
        for t in USER_TYPES:
            before = dict(tvars)
            assert matcher(t, tvars) == te.match(t, dict(tvars))
            assert tvars == before
