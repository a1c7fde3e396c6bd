"""The goal-directed search (synth/topdown.py): right sides of 2-3 instructions the enumerator's levels
cannot reach within the budget, found from the root down with the hand lowering rules hidden, each
rule verified by Z3 at every type instance."""

from __future__ import annotations

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.printer import to_text
from fpir.text import parse
from pitchfork.selection.lower import expand_fpir
from pitchfork.trs.rules import parse_rule
from synth.bringup import bring_up_hidden
from synth.cost import instructions
from synth.search import base_examples, lane_names, prove_equal
from synth.tasks import Task, lowering_grammar, run_task
from synth.topdown import decompositions, instruction_goals, residuals, sub_goals
from synth.verify import verify_rule


def _examples(isa: str, text: str):  # type: ignore[no-untyped-def]
    """The left side, its lowering grammar, the search's example rows, their environment and the
    left side's values on them."""
    lhs = parse(text)
    g = lowering_grammar(lhs, isa)
    vars_ = sorted(set(lhs.variables()), key=lambda v: v.name)
    rows = base_examples(lane_names(vars_, {}))
    env = {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}
    target = np.broadcast_to(np.asarray(evaluate(lhs, env)).astype(lhs.type.np_dtype), (len(rows),))
    return lhs, g, rows, env, target


def _decompose(isa: str, text: str, instructions: bool = False) -> list[tuple[str, list[str]]]:
    lhs, g, rows, env, target = _examples(isa, text)
    goals = sub_goals(lhs, g, expand_fpir(lhs, 64), env, len(rows), instructions=instructions)
    found, tried = decompositions(lhs, g, goals, target)
    assert tried > 0
    return [(op, [to_text(x) for x in specs]) for op, specs in found]


def test_a_saturating_narrowing_decomposes_through_a_type_the_left_side_lacks() -> None:
    """sat<u8>(x_i32 >> 8) = sqxtun(sat<i16>(x_i32 >> 8)): the operand is the left side moved to i16."""
    assert ("arm.sqxtun", ["saturating_cast<i16>(v0_i32 >> 8)"]) in _decompose("arm64", "saturating_cast<u8>(v0_i32 >> 8)")


def test_a_sub_goal_comes_from_the_generic_expansion() -> None:
    """rounding_mul_shr(x_u16, y_u16, 16) holds no product; its expansion does (u32(x) * u32(y)), under a
    rounding narrowing shift by an immediate of a type the left side lacks (u32)."""
    assert ("arm.uqrshrn", ["u32(v0_u16) * u32(v1_u16)", "u32(16)"]) in _decompose(
        "arm64", "rounding_mul_shr(v0_u16, v1_u16, 16)")


def test_an_instruction_over_the_variables_is_a_sub_goal_at_the_root() -> None:
    """HVX Q31 `rounding_mul_shr(x_i32, y_i32, 31)` is `vmpyo_rnd_sacc(vmpye(x, y), x, y)` (hand rule
    vmpyo_rnd_sacc): vmpye(x, y) is no sub-term of the left side or of its expansion, so only the
    root's instruction sub-goals give the decomposition (before: none on the examples)."""
    lhs = parse("rounding_mul_shr(v0_i32, v1_i32, 31)")
    assert "hvx.vmpye(v0_i32, v1_i32)" in {to_text(t) for t in instruction_goals(lhs, lowering_grammar(lhs, "hvx128"), {lhs.type})}
    want = ("hvx.vmpyo_rnd_sacc", ["hvx.vmpye(v0_i32, v1_i32)", "v0_i32", "v1_i32"])
    assert want in _decompose("hvx128", to_text(lhs), instructions=True)
    assert want not in _decompose("hvx128", to_text(lhs))


def test_two_multipliers_are_proven_equal_by_the_verifiers_fallback_not_left_unknown() -> None:
    """Bit-blasting the Q31 product against vmpye/vmpyo runs out of any search rlimit; the search's
    proof then asks the rule verifier's multiplier fallbacks (uninterpreted products, then integer
    arithmetic): VALID for the right operand order, a real counterexample for a wrong one."""
    lhs = parse("rounding_mul_shr(v0_i32, v1_i32, 31)")
    assert prove_equal(lhs, parse("hvx.vmpyo_rnd_sacc(hvx.vmpye(v0_i32, v1_i32), v0_i32, v1_i32)"), 1_000_000)[0] == "VALID"
    wrong = parse("hvx.vmpyo_sacc(hvx.vmpye(v0_i32, v1_i32), v0_i32, v1_i32)")  # no rounding
    verdict, cex = prove_equal(lhs, wrong, 1_000_000)
    assert verdict == "INVALID"
    env = {k: np.array([v], dtype=np.int32) for k, v in cex.items()}
    assert evaluate(lhs, env)[0] != evaluate(wrong, env)[0]


def test_a_primitive_root_over_an_instruction_and_its_residual() -> None:
    """x86 `rounding_mul_shr(x_u16, y_u16, 16)` (hand rule pmulhuw_round16: `pmulhuw(x, y) + ((x * y) >>
    15)`): no instruction at the root decomposes it on the examples (the rounding bit is no sub-goal),
    but `add(pmulhuw(x, y), lhs - pmulhuw(x, y))` does, and its residual (0 or 1) is the one with the
    fewest values; the search then implements the residual and finds a right side as cheap as the hand
    rule's (four instructions), which verifies at every type instance. Before the residual roots the
    deep search ended over budget with no decomposition (session 19)."""
    isa, text = "x86-avx2", "rounding_mul_shr(v0_u16, v1_u16, 16)"
    assert _decompose(isa, text, instructions=True) == []
    lhs, g, rows, env, target = _examples(isa, text)
    expanded = expand_fpir(lhs, 64)
    rest = residuals(lhs, expanded, sub_goals(lhs, g, expanded, env, len(rows), instructions=True), target)
    assert [op for op, _ in rest] == ["add", "sub"]
    op, (a, r) = rest[0]
    assert to_text(a) == "x86.pmulhuw(v0_u16, v1_u16)"
    with np.errstate(all="ignore"):
        rv = np.asarray(evaluate(r, env)).astype(lhs.type.np_dtype)
        assert set(np.unique(rv).tolist()) == {0, 1}  # the rounding bit
        assert np.array_equal((np.asarray(evaluate(a, env)) + rv).astype(lhs.type.np_dtype), target)
    res = run_task(Task("lower", isa, text, 100_000, hide=bring_up_hidden(isa)))
    assert res["status"] == "synthesized", res.get("reason")
    assert res["search_detail"] == "top-down: add over 2 sub-goals"
    assert res["rhs_cost"][0] == 4
    rhs = parse(res["rhs"])
    assert rhs.op == "add" and "x86.pmulhuw(v0_u16, v1_u16)" in {to_text(x) for x in rhs.args}
    assert verify_rule(parse_rule(f"t: {res['rule']}", "<test>", 1)).status == "VALID"


@pytest.mark.parametrize("isa,lhs,ops,cost", [
    # hand sqshrn_sqxtun: sqxtun(sqshrn(x, 8)); found: that, or shrn(sqxtun(x), 8) (also two)
    ("arm64", "saturating_cast<u8>(v0_i32 >> 8)", {"arm.sqxtun"}, 2),
    # hand rounding_mul_shr_uh, exactly (vmpy writes a register pair: cost 2)
    ("hvx128", "rounding_mul_shr(v0_u16, v1_u16, 16)", {"hvx.vasr_rnd_sat_uh", "hvx.vmpy"}, 3),
])
def test_over_budget_left_sides_get_a_two_instruction_right_side(isa: str, lhs: str, ops: set[str], cost: int) -> None:
    """With the hand rules hidden the enumerator runs over its budget on these; the top-down search
    finds a right side of two instructions, as cheap as the hand rule's, and the generalized rule
    verifies at every type instance."""
    r = run_task(Task("lower", isa, lhs, 100_000, hide=bring_up_hidden(isa)))
    assert r["status"] == "synthesized", r.get("reason")
    assert instructions(tuple(r["rhs_cost"])) == cost
    assert ops <= {t.op for t in parse(r["rhs"]).walk()}
    assert r["search_detail"].startswith("top-down")
    rule = parse_rule(f"t: {r['rule']}", "<test>", 1)
    assert verify_rule(rule).status == "VALID"


def test_without_top_down_the_same_budget_finds_nothing() -> None:
    """The enumerator alone, same budget: over budget (the reason the top-down search exists)."""
    r = run_task(Task("lower", "arm64", "saturating_cast<u8>(v0_i32 >> 8)", 100_000,
                      hide=bring_up_hidden("arm64"), topdown=False))
    assert r["status"] == "budget"


def test_the_enumerators_counterexamples_filter_the_decompositions() -> None:
    """x86 `rounding_mul_shr(x_i16, y_i16, 15)`: on the base examples its saturation never acts (no row
    has x = y = -32768), so the wrapping `i16(x * y >> 15)` passes for the saturating one in
    `padds(i16(x * y >> 15), rounding bit)`, a decomposition that then fails in Z3. The enumerator
    learned that row as a counterexample (`SearchResult.learned`); handed to the top-down search, it
    leaves only the saturating form as the specification."""
    from synth.cost import lowering_cost
    from synth.search import synthesize

    lhs, g, rows, env, target = _examples("x86-avx2", "rounding_mul_shr(v0_i16, v1_i16, 15)")
    res = synthesize(lhs, g, (lowering_cost(expand_fpir(lhs, 64), "x86-avx2")[0], 0, 0), max_terms=10_000)
    assert res.status == "budget" and (-32768, -32768) in res.learned
    wrapping = "i16(i32(v0_i16) * i32(v1_i16) >> u32(15))"

    def specs(rows: list[tuple[int, ...]]) -> set[str]:
        e = {v: np.array([r[i] for r in rows], dtype=np.int16) for i, v in enumerate(("v0", "v1"))}
        t = np.asarray(evaluate(lhs, e)).astype(np.int16)
        found, _ = decompositions(lhs, g, sub_goals(lhs, g, expand_fpir(lhs, 64), e, len(rows), instructions=True), t)
        return {to_text(x) for _, sp in found for x in sp}

    assert wrapping in specs(list(rows))
    learned = specs(list(rows) + [r for r in res.learned if r not in rows])
    assert wrapping not in learned and "saturating_cast<i16>(i32(v0_i16) * i32(v1_i16) >> u32(15))" in learned


def test_no_decomposition_or_residual_merely_restates_the_left_side() -> None:
    """x86 `rounding_shr(x_i32, y_u32)`: its generic expansion is a sub-goal with the left side's own
    values, so every decomposition was `op(expansion, 0)` and the residual root took it as `a` (residual
    0, the fewest distinct values), which restates the problem. Now both skip it: the residual is
    taken on `x >> y` (implemented as psrav), leaving the rounding bit as the residual."""
    lhs, g, rows, env, target = _examples("x86-avx2", "rounding_shr(v0_i32, v1_u32)")
    expanded = expand_fpir(lhs, 64)
    goals = sub_goals(lhs, g, expanded, env, len(rows), instructions=True)
    assert any(np.array_equal(v, target) for a, v in goals[lhs.type] if a.args)  # the expansion is a goal
    found, _ = decompositions(lhs, g, goals, target)
    values = {a: v for a, v in goals[lhs.type]}
    assert all(not (x in values and np.array_equal(values[x], target)) for _, sp in found for x in sp)
    assert [(op, to_text(a)) for op, (a, _r) in residuals(lhs, expanded, goals, target)] == [
        ("add", "v0_i32 >> v1_u32"), ("sub", "v0_i32 >> v1_u32")]


def test_a_runtime_shift_amount_clamped_to_the_width_is_a_sub_goal() -> None:
    """ARM's shifts read their amount in one signed byte, so `rounding_shr(x_i32, y_u32)` is srshl by
    `-min(y, 32)` (hand rule srshr_clamped: softmax, depthwise_conv); no sub-term or expansion states
    the clamp, and before it was a sub-goal the arm64 bring-up ran over budget here (session 27)."""
    from synth.topdown import clamped_amounts

    assert [to_text(c) for c in clamped_amounts(parse("rounding_shr(v0_i32, v1_i32) + (v2_i32 << 3)"))] == [
        "min(v1_i32, 32)", "max(min(v1_i32, 32), -32)"]
    assert ("arm.srshl", ["v0_i32", "0 - reinterpret<i32>(min(v1_u32, 32))"]) in _decompose(
        "arm64", "rounding_shr(v0_i32, v1_u32)")


def test_a_shift_by_a_signed_runtime_amount_is_one_instruction_on_a_clamped_amount() -> None:
    r = run_task(Task("lower", "arm64", "v0_i16 << v1_i16", 100_000, hide=bring_up_hidden("arm64")))
    assert r["status"] == "synthesized", r.get("reason")
    assert r["rhs"] == "arm.sshl(v0_i16, max(min(v1_i16, 16), -16))" and r["search_detail"].startswith("top-down")
    assert verify_rule(parse_rule(f"t: {r['rule']}", "<test>", 1)).status == "VALID"


def test_a_residual_that_is_a_function_of_its_sub_goal_at_one_point() -> None:
    """x86 `rounding_mul_shr(x_i16, y_i16, 15)` (hand pmulhrsw_fixup, five instructions: `pmulhrsw(x, y) ^
    (0 - i16(pmulhrsw(x, y) == -32768))`): with the enumerator's counterexample x = y = -32768 among the
    rows, the residual of `add` over the sub-goal with pmulhrsw's values is -1 exactly where that
    sub-goal is -32768 and 0 elsewhere: `exceptions` states it over a fresh variable as a select, and
    the search finds `pmulhrsw(x, y) + select(pmulhrsw(x, y) == -32768, -1, 0)` (four), which Z3 proves
    (before, the top-down search ended with packssdw over the generic expansion, nine)."""
    from synth.topdown import exceptions

    lhs, g, rows, _, _ = _examples("x86-avx2", "rounding_mul_shr(v0_i16, v1_i16, 15)")
    rows = list(rows) + [(-32768, -32768)]
    env = {v: np.array([r[i] for r in rows], dtype=np.int16) for i, v in enumerate(("v0", "v1"))}
    target = np.asarray(evaluate(lhs, env)).astype(np.int16)
    goals = sub_goals(lhs, g, expand_fpir(lhs, 64), env, len(rows), instructions=True)
    got = {(op, to_text(f)) for op, _, f, _ in exceptions(lhs, goals, target, "v2")}
    assert got == {("add", "select(v2_i16 == -32768, i16(-1), i16(0))"),
                   ("sub", "select(v2_i16 == -32768, i16(1), i16(0))")}
    # on the base rows alone pmulhrsw's values are the left side's: no exception to state
    lhs, g, rows, env, target = _examples("x86-avx2", "rounding_mul_shr(v0_i16, v1_i16, 15)")
    assert exceptions(lhs, sub_goals(lhs, g, expand_fpir(lhs, 64), env, len(rows), instructions=True), target, "v2") == []
    res = run_task(Task("lower", "x86-avx2", "rounding_mul_shr(v0_i16, v1_i16, 15)", 100_000,
                        hide=bring_up_hidden("x86-avx2")))
    assert res["status"] == "synthesized", res.get("reason")
    assert res["rhs_cost"][0] <= 5 and "x86.pmulhrsw(v0_i16, v1_i16)" in res["rhs"], res["rhs"]
    assert verify_rule(parse_rule(f"t: {res['rule']}", "<test>", 1)).status == "VALID"
