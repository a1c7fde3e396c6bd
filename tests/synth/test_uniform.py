"""Lowering left sides with a broadcast operand (x86 shifts by a count in a register) and the driver's
first pass with a small budget: the corpus records which variables stood for a uniform value, such a
left side is also searched with them uniform, and the rule found states `is_variable && is_uniform`
(Z3-verified with one symbol for every lane of the operand)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fpir.ops import make
from fpir.term import var
from fpir.text import parse
from fpir.types import parse_type
from synth.bringup import bring_up_hidden
from synth.corpus import Corpus
from synth.driver import Cache, Options, _new_left_sides, _result_side, _two_passes, lower_tasks
from synth.output import Candidate, bounded_example, select, write_rules
from synth.rulesnap import take
from synth.tasks import Task, lane0_uniform, reads_lane0, run_task
from synth.verify import verify_rule
from pitchfork.trs.rules import parse_rule

U16, I16 = parse_type("u16"), parse_type("i16")


def _shift_by_broadcast() -> object:
    """`x_i16 >> s_u16` with s a broadcast scalar (as the Halide frontend states a splat)."""
    return make("shr", var("x", I16), var("s", U16, uniform=True))


def test_corpus_records_which_variables_were_uniform() -> None:
    c = Corpus()
    c.add_expression(_shift_by_broadcast(), "a")  # type: ignore[arg-type]
    assert c.uniform["v0_i16 >> v1_u16"] == [False, True]
    c.add_expression(parse("y_i16 >> t_u16"), "b")  # a per-lane amount elsewhere: still searched uniform
    assert c.uniform["v0_i16 >> v1_u16"] == [False, True]


def test_lowering_gets_a_uniform_task_on_x86_and_arm() -> None:
    """x86 searches it for a right side reading the count at lane 0 (vpsraw), arm64 for one that
    hoists work onto it (synth/tasks.py hoists_work): the clamp of the amount, outside the loop."""
    inputs = {"a": [_shift_by_broadcast()]}
    for isa in ("x86-avx2", "arm64"):
        tasks, _ = lower_tasks(inputs, isa, Options(benchmarks=(), max_lower_lhs=0, hide=bring_up_hidden(isa)))  # type: ignore[dict-item]
        assert [(t.lhs, t.uniform) for t in tasks] == [("v0_i16 >> v1_u16", ()), ("v0_i16 >> v1_u16", (1,))]
    # with a first pass (a bring-up), arm64's uniform task gets its budget alone: no deep search
    arm, _ = lower_tasks(inputs, "arm64", Options(benchmarks=(), max_lower_lhs=0, hide=bring_up_hidden("arm64"),  # type: ignore[dict-item]
                                                  first_pass_terms=10_000))
    assert [(t.max_terms, t.topdown) for t in arm] == [(Options.max_terms, True), (10_000, False)]


def test_a_later_round_keeps_a_new_left_sides_uniform_task_beside_its_plain_one() -> None:
    """Both tasks print the same searched text (a uniform leaf prints as a plain variable): keyed by
    text alone, a later round dropped the uniform one as already searched."""
    inputs = {"a": [_shift_by_broadcast()]}
    tasks, _ = lower_tasks(inputs, "x86-avx2", Options(benchmarks=(), max_lower_lhs=0, hide=bring_up_hidden("x86-avx2")))  # type: ignore[dict-item]
    assert [t.uniform for t in _new_left_sides(tasks, set())] == [(), (1,)]
    # searched before as a plain left side only: the uniform search is still new
    plain = {_result_side({"seen": "v0_i16 >> v1_u16", "task": {"uniform": []}})}
    assert [t.uniform for t in _new_left_sides(tasks, plain)] == [(1,)]
    both = plain | {_result_side({"seen": "v0_i16 >> v1_u16", "task": {"uniform": [1]}})}
    assert _new_left_sides(tasks, both) == []


def test_uniform_task_finds_the_broadcast_count_shift_and_the_rule_verifies() -> None:
    hide = bring_up_hidden("x86-avx2")
    res = run_task(Task("lower", "x86-avx2", "v0_i16 >> v1_u16", 20_000, hide=hide, uniform=(1,)))
    assert res["status"] == "synthesized", res
    assert res["rhs"] == "x86.psra_uniform(v0_i16, v1_u16)"
    assert "is_variable(v1_u16) && is_uniform(v1_u16)" in res["rule"]
    assert verify_rule(parse_rule(f"r: {res['rule']}", "<test>", 1)).status == "VALID"
    # the plain task never names an instruction reading a per-lane variable at lane 0
    plain = run_task(Task("lower", "x86-avx2", "v0_i16 >> v1_u16", 20_000, hide=hide))
    assert plain["status"] == "synthesized" and "uniform" not in plain["rhs"], plain


def test_lane0_checks() -> None:
    from pitchfork.targets import load_target

    load_target("x86-avx2")  # the x86 instruction ops this test builds (run alone, nothing else loads them)
    s = var("s", U16, uniform=True)
    assert reads_lane0(make("x86.psra_uniform", var("x", I16), s))
    assert not reads_lane0(parse("x86.psra_uniform(x_i16, 3)"))  # a constant count: no use of uniformity
    assert lane0_uniform(parse("x86.psra_uniform(x_i16, 3)"))
    assert not lane0_uniform(parse("x86.psra_uniform(x_i16, y_u16)"))


def test_a_uniform_rule_is_kept_beside_an_equally_cheap_per_lane_one_and_written_first(tmp_path: Path) -> None:
    """The cost model charges vpsrav through wider lanes (psrav_widened) one instruction like vpsraw:
    the uniform rule is decided first and written first, so the rewriter (first of equal costs)
    takes it where the count is a broadcast."""
    from synth.driver import _stage_cost

    per_lane = Candidate("v0_i16 >> v1_u16 -> x86.psrav_widened(v0_i16, v1_u16)", "v0_i16 >> v1_u16", (1, 32, 0),
                         ("a",), 5, "monomorphic", "none", "")
    uniform = Candidate("v0_i16 >> v1_u16 -> x86.psra_uniform(v0_i16, v1_u16) if is_variable(v1_u16) && is_uniform(v1_u16)",
                        "v0_i16 >> v1_u16", (1, 32, 0), ("a",), 1, "monomorphic", "none", "",
                        "is_variable(v1_u16) && is_uniform(v1_u16)")
    ex = bounded_example(uniform)
    assert ex is not None and ex.args[1].is_uniform_leaf and ex.args[1].is_var
    from pitchfork.targets import load_target
    from synth.tasks import _without

    base = list(_without(load_target("x86-avx2").rules, bring_up_hidden("x86-avx2")).rules)
    decisions = select([per_lane, uniform], "lower_x86_avx2", base, _stage_cost("lower:x86-avx2"))
    assert [d.outcome for d in decisions] == ["written", "written"], decisions
    path = tmp_path / "lower_x86_avx2.rules"
    write_rules(path, decisions, "# test")
    rules = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    assert "psra_uniform" in rules[0] and "psrav_widened" in rules[1]


def test_first_pass_results_stand_and_over_budget_left_sides_run_again(tmp_path: Path) -> None:
    hide = bring_up_hidden("arm64")
    cheap = Task("lower", "arm64", "saturating_cast<u8>(v0_u16)", 50_000, hide=hide, topdown=False)
    deep = Task("lower", "arm64", "saturating_cast<u8>(v0_i32 >> 8)", 50_000, hide=hide, topdown=False)
    opts = Options(benchmarks=(), first_pass_terms=300, progress=False)
    origin = {cheap.key: ({"a"}, 1), deep.key: ({"a"}, 1)}
    got: list[dict] = []
    snap = take(tmp_path / "out")
    cached, run, not_run = _two_passes([cheap, deep], origin, Cache(tmp_path / "cache"), opts, "lower:arm64",
                                       got.append, None, snap)
    assert not_run == 0 and len(got) == 2
    by_lhs = {r["task"]["lhs"]: r for r in got}
    first = by_lhs[cheap.lhs]
    assert first["status"] == "synthesized" and first["task"]["max_terms"] == 300  # found in the first pass
    assert origin[first["key"]] == ({"a"}, 1)
    again = by_lhs[deep.lhs]  # over budget at 300 terms: its own budget decided it
    # with the first pass's rule beside the stage's (synth/tasks.py `_composite`)
    assert again["task"]["max_terms"] == 50_000 and again["key"] == replace(deep, prior=(first["rule"],)).key


def test_the_corpus_cache_keeps_uniform_leaves(tmp_path: Path) -> None:
    """A resumed run reads the corpus from its cache file: the broadcasts must survive the text."""
    from synth.driver import _corpus_line, _corpus_text

    t = make("add", _shift_by_broadcast(), var("y", I16))  # type: ignore[arg-type]
    line = _corpus_text(t)
    assert line.endswith("\tuniform=s")
    back = _corpus_line(line)
    assert back == t and any(v.is_uniform_leaf for v in back.variables())
    assert _corpus_line("x_i16 + y_i16") == parse("x_i16 + y_i16")


def test_a_uniform_task_is_also_posed_inside_a_narrower_range_one_place_had() -> None:
    """hvx128: mul shifts by `min(w, 15)` (in [0, 15]), depthwise_conv by an unclamped u32 Param; the
    left side's hull is all of u32, so its uniform task is posed again inside [0, 15] (where vasr takes
    the amount as Rt), as a search of its own (its side differs from the hull's)."""
    from synth.driver import narrowed_uniform_ranges

    x, w, s = var("x", parse_type("i32")), var("w", parse_type("u32"), uniform=True), var("s", parse_type("u32"), uniform=True)
    fifteen = parse("min(w_u32, 15)").args[1]
    mul = make("saturating_cast", make("rounding_shr", x, make("min", w, fifteen)), type=I16)
    dw = make("saturating_cast", make("rounding_shr", x, s), type=I16)
    tasks, _ = lower_tasks({"mul": [mul], "depthwise_conv": [dw]}, "hvx128",  # type: ignore[dict-item]
                           Options(benchmarks=(), max_lower_lhs=0, hide=bring_up_hidden("hvx128"), first_pass_terms=10_000))
    lhs = "saturating_cast<i16>(rounding_shr(v0_i32, v1_u32))"
    mine = [(t.uniform, t.ranges) for t in tasks if t.lhs == lhs]
    assert mine[0] == ((), ()) and mine[1] == ((1,), ())
    assert [(u, r[1]) for u, r in mine[2:]] == [((1,), (0, 15))]
    assert len({_result_side({"seen": lhs, "task": {"uniform": list(u), "ranges": [list(x) for x in r]}})
                for u, r in mine}) == 3
    # only narrower places, distinct, at most MAX_NARROWED_UNIFORM
    u32 = parse_type("u32")
    full = (0, 2**32 - 1)
    assert narrowed_uniform_ranges([full], [(full,)], (1,), [u32]) == []
    assert narrowed_uniform_ranges([(0, 5), full], [((0, 5), (0, 15)), ((0, 5), (0, 15)), ((0, 1), full)], (1,),
                                   [u32, u32]) == [((0, 5), (0, 15))]
    # only where an instruction's encodable test reads bounds (elsewhere the narrowed search is the same)
    from synth.tasks import bounds_encodable_isa
    assert bounds_encodable_isa("hvx128") and not bounds_encodable_isa("arm64") and not bounds_encodable_isa("x86-avx2")


def test_arm64_selection_keeps_a_right_side_with_the_same_cycles_in_fewer_instructions() -> None:
    """The search keeps a right side with as many issue cycles and fewer instructions (synth/cost.py
    bound_below); selection must measure the same way (session 30: umlal for ushll + add, both 2.00
    cycles per 16 lanes, was dropped as subsumed once `widening_shl -> ushll` was written, and
    synthesized-only sobel3x3 ran at 0.851x of hand lowering for the lack of it)."""
    from pitchfork.targets import load_target
    from pitchfork.trs.rules import RuleSet, parse_rule
    from synth.cost import lowering_cost
    from synth.driver import _stage_cost
    from synth.tasks import _without

    load_target("arm64")
    rhs = lowering_cost(parse("arm.umlal(v0_u16, v1_u8, 2)"), "arm64")
    # the form round 2 finds once `widening_shl -> ushll` is written (its left side as the rules lower it)
    umlal = Candidate("v0_T + arm.ushll(v1_A, c0_A) -> arm.umlal(v0_T, v1_A, 1 << c0) if A == narrow(T)",
                      "v0_u16 + arm.ushll(v1_u8, 1)", rhs, ("sobel3x3",), 12, "width-capped", "symbolic", "")
    ushll = parse_rule("s_ushll: widening_shl(v0_T, c0_T) -> arm.ushll(v0_T, c0) if is_unsigned(T) && bits(T) <= 16",
                       "<test>", 1)
    base = list(_without(load_target("arm64").rules, bring_up_hidden("arm64")).rules) + [ushll]
    cost = _stage_cost("lower:arm64")
    have = cost(RuleSet(base), parse(umlal.example))
    assert have[0] == rhs[0] and have[1] > rhs[1]  # a tie in cycles, more instructions
    [d] = select([umlal], "lower_arm64", base, cost)
    assert d.outcome == "written", d


def test_hoisted_leaves_are_the_clamped_amount_and_work_on_it() -> None:
    """A uniform task's top-down grammars take work on the uniform operand alone as level-0 leaves
    (hoisted out of the loop, it costs no instructions): the clamped amount and the expansion's
    amounts over it; never work on a per-lane variable."""
    from pitchfork.selection.lower import expand_fpir
    from synth.search import lhs_types
    from synth.tasks import hoisted_leaves

    lhs = make("rounding_shr", var("v0", I16), var("v1", U16, uniform=True))
    got = [str(x) for x in hoisted_leaves(lhs, expand_fpir(lhs, 64), frozenset(lhs_types(lhs)))]
    assert "min(v1_u16, 16)" in got and "min(v1_u16, 16) - 1" in got
    assert hoisted_leaves(parse("rounding_shr(v0_i16, v1_u16)"), expand_fpir(parse("rounding_shr(v0_i16, v1_u16)"), 64),
                          frozenset(lhs_types(lhs))) == ()


def test_uniform_task_finds_the_rounding_shift_by_a_broadcast_as_cheap_as_the_hand_rule() -> None:
    """x86 `rounding_shr(x_i16, y_u16)` with y a broadcast (hand rounding_shr_psra_uniform:
    `psra_uniform(x, min(y, 16)) + (psrl_uniform(x, min(y, 16) - 1) & 1)`, four instructions: the
    clamps are hoisted). The enumerator ends over budget (the form is at level 6 over the plain
    leaves); the top-down search with the hoisted leaves finds one of four, and the rule verifies
    with `is_uniform`."""
    from synth.tasks import ranged_cost

    hand = parse("x86.psra_uniform(v0_i16, min(v1_u16, 16)) + reinterpret<i16>(x86.psrl_uniform(reinterpret<u16>(v0_i16), "
                 "min(v1_u16, 16) - 1) & 1)")
    from synth.corpus import substitute

    hand = substitute(hand, {var("v1", U16): var("v1", U16, uniform=True)})
    assert ranged_cost("x86-avx2", {})(hand)[0] == 4
    res = run_task(Task("lower", "x86-avx2", "rounding_shr(v0_i16, v1_u16)", 100_000,
                        hide=bring_up_hidden("x86-avx2"), uniform=(1,)))
    assert res["status"] == "synthesized", res
    assert res["rhs_cost"][0] <= 4 and "x86.psra_uniform" in res["rhs"], res["rhs"]
    assert res["search_detail"].startswith("top-down")
    assert "is_variable(v1_u16) && is_uniform(v1_u16)" in res["rule"]
    assert verify_rule(parse_rule(f"r: {res['rule']}", "<test>", 1)).status == "VALID"
    # without the top-down search the same budget finds nothing
    plain = run_task(Task("lower", "x86-avx2", "rounding_shr(v0_i16, v1_u16)", 100_000,
                          hide=bring_up_hidden("x86-avx2"), uniform=(1,), topdown=False))
    assert plain["status"] == "budget"


def test_a_sub_goal_takes_only_the_tasks_hoisted_leaves_over_its_own_variables() -> None:
    """The task's hoisted leaves go to every sub-goal's grammar, but one over a variable the sub-goal
    lacks cannot be evaluated on its rows (the bring-up's `rounding_mul_shr(v0_i16 << v1_i16, ...)`
    uniform task ended in `KeyError: 'v1'` before)."""
    from pitchfork.selection.lower import expand_fpir
    from synth.search import lhs_types
    from synth.tasks import _with_hoisted, hoisted_leaves, lowering_grammar

    u = var("v1", U16, uniform=True)
    lhs = make("rounding_shr", var("v0", I16), u)
    hoisted = hoisted_leaves(lhs, expand_fpir(lhs, 64), frozenset(lhs_types(lhs)))
    assert hoisted
    sub = make("shr", var("v0", I16), make("add", var("v0", I16), var("v0", I16)))
    leaves = _with_hoisted(lowering_grammar(sub, "x86-avx2"), sub, hoisted).leaves
    assert not any(u in x.variables() for x in leaves)
    assert set(hoisted) <= set(_with_hoisted(lowering_grammar(lhs, "x86-avx2"), lhs, hoisted).leaves)
