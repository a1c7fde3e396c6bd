"""Reductions wider than the banks' lane factor searched as a fold of folds
(synth/reduction_split.py): l2norm's sum of 32 squares, hand rule pmaddwd_pairs_x32's left side, was
"lane structure not searched" and is now lowered through pmaddwd_pairs, verified by Z3."""

from __future__ import annotations

from typing import Optional

from fpir.printer import to_text
from fpir.term import Term
from fpir.text import parse
from pitchfork.trs.rules import parse_rule
from synth.bringup import bring_up_hidden
from synth.reduction_split import split_reduction, too_wide
from synth.search import MAX_LANE_FACTOR
from synth.tasks import Task, run_task
from synth.verify import verify_rule


def test_only_associative_reductions_above_the_lane_factor_are_split() -> None:
    assert too_wide(parse("vector_reduce_add_x32(v0_i32)"), MAX_LANE_FACTOR)
    assert too_wide(parse("vector_reduce_max_x16(v0_i32)"), MAX_LANE_FACTOR)
    assert not too_wide(parse("vector_reduce_add_x8(v0_i32)"), MAX_LANE_FACTOR)
    assert not too_wide(parse("vector_reduce_saturating_add_x16(v0_i16)"), MAX_LANE_FACTOR)
    assert not too_wide(parse("v0_i32 + v1_i32"), MAX_LANE_FACTOR)


def test_the_first_inner_factor_with_a_right_side_is_taken() -> None:
    asked: list[str] = []

    def inner(t: Term) -> Optional[Term]:  # no right side by 2, the inner term itself by 4
        asked.append(to_text(t))
        return t if "_x4(" in to_text(t) else None

    got = split_reduction(parse("vector_reduce_add_x32(v0_i32)"), inner)
    assert asked == ["vector_reduce_add_x2(v0_i32)", "vector_reduce_add_x4(v0_i32)"]
    assert got is not None and to_text(got[1]) == "vector_reduce_add_x8(vector_reduce_add_x4(v0_i32))"
    assert split_reduction(parse("vector_reduce_add_x32(v0_i32)"), lambda t: None) is None


def test_a_sum_of_32_squares_is_lowered_through_pmaddwd_pairs() -> None:
    r = run_task(Task("lower", "x86-avx2", "vector_reduce_add_x32(widening_mul(v0_i16, v0_i16))", 100_000,
                      hide=bring_up_hidden("x86-avx2")))
    assert r["status"] == "synthesized", r
    assert r["rhs"] == "vector_reduce_add_x16(x86.pmaddwd_pairs(v0_i16, v0_i16))", r
    res = verify_rule(parse_rule("g: " + r["rule"]))
    assert res.status == "VALID", res.summary()
