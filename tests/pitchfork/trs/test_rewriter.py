"""The greedy bottom-up rewriter: cost-decreasing steps only, lowest cost wins, fixed point, no loops."""

from __future__ import annotations

from fpir import parse
from pitchfork.selection.cost import cost
from pitchfork.selection.lift import lift, lift_rules
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import RuleSet, parse_rules


def rewriter(text: str, trace: bool = False) -> Rewriter:
    return Rewriter(RuleSet(parse_rules(text)), trace=trace)


def test_non_decreasing_rule_is_reported_and_never_applied() -> None:
    rw = rewriter("swap: x_T + y_T -> y_T + x_T\n")
    t = parse("(a_u8 + b_u8) + c_u8")
    assert rw.rewrite(t) is t
    assert rw.stats.rewrites == 0
    assert rw.stats.not_decreasing["swap"] >= 2


def test_cost_increasing_rule_is_refused() -> None:
    rw = rewriter("expand: x_T * 2 -> (x_T + x_T) * 1 + x_T - x_T\n")
    t = parse("a_u16 * 2")
    assert rw.rewrite(t) is t and rw.stats.not_decreasing["expand"] == 1


def test_mutually_inverse_rules_terminate() -> None:
    # Only the cheaper direction can ever fire, so the pair cannot loop.
    rw = rewriter("to_add: x_T * 2 -> x_T + x_T\nto_mul: x_T + x_T -> x_T * 2\n")
    out = rw.rewrite(parse("(a_u8 * 2) * 2 + b_u8 * 2"))
    assert str(out) == "a_u8 + a_u8 + (a_u8 + a_u8) + (b_u8 + b_u8)"
    assert rw.stats.fired["to_mul"] == 0 and rw.stats.not_decreasing["to_mul"] > 0


def test_lowest_cost_result_wins() -> None:
    rw = rewriter("ext: cast<W>(x_T) + y_W -> extending_add(y_W, x_T) if W == wide(T)\n"
                  "wadd: cast<W>(x_T) + cast<W>(y_T) -> widening_add(x_T, y_T) if W == wide(T)\n")
    assert str(rw.rewrite(parse("u16(a_u8) + u16(b_u8)"))) == "widening_add(a_u8, b_u8)"
    assert rw.stats.fired == {"wadd": 1}


def test_rewrites_to_a_fixed_point_and_reprocesses_results() -> None:
    t = parse("u8((u16(a_u8) + u16(b_u8) + 1) / 2)")
    once = lift(t)
    assert str(once) == "rounding_halving_add(a_u8, b_u8)"
    assert lift(once) is once


def test_every_applied_step_lowers_cost() -> None:
    rw = Rewriter(lift_rules(), trace=True)
    rw.rewrite(parse("u8(min(absd(u16(a_u8) + u16(b_u8) * 2 + u16(c_u8), u16(d_u8) + u16(e_u8) * 2 + u16(f_u8)) "
                     "+ absd(u16(g_u8) + u16(h_u8) * 2 + u16(i_u8), u16(j_u8) + u16(k_u8) * 2 + u16(l_u8)), 255))"))
    assert rw.stats.trace
    for name, before, after in rw.stats.trace:
        assert cost(parse(after)) < cost(parse(before)), name


def test_shared_subterms_rewritten_once() -> None:
    rw = rewriter("wadd: cast<W>(x_T) + cast<W>(y_T) -> widening_add(x_T, y_T) if W == wide(T)\n")
    s = "(u16(a_u8) + u16(b_u8))"
    out = rw.rewrite(parse(f"{s} * {s} - {s}"))
    assert str(out) == "widening_add(a_u8, b_u8) * widening_add(a_u8, b_u8) - widening_add(a_u8, b_u8)"
    assert rw.stats.rewrites == 1


def test_rule_whose_right_side_cannot_be_built_is_skipped() -> None:
    # The computed constant c0 + 1000 does not fit u8: the rule matches but cannot fire.
    rw = rewriter("r: x_u8 * c0 -> x_u8 << (c0 + 1000)\n")
    t = parse("a_u8 * 3")
    assert rw.rewrite(t) is t and rw.stats.rhs_errors["r"] == 1
