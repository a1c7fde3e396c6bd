"""Left-side alternates (synth/alternates.py): a child the hand rules lower to a one-op instruction
(x86 `wmul_pmaddwd`, whose semantics is `widening_mul`) is matched in that form too, and the rule
with the `either` is verified by Z3 at every alternative."""

from __future__ import annotations

from fpir.printer import to_text
from fpir.text import parse
from pitchfork.targets import load_target
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import RuleSet, parse_rule
from synth.alternates import instruction_alternates
from synth.bringup import bring_up_hidden
from synth.tasks import Task, run_task
from synth.verify import verify_rule


def test_only_proper_sub_terms_with_a_one_op_instruction_get_an_alternate() -> None:
    alts = instruction_alternates(parse("widening_mul(v0_i16, v1_i16) + widening_mul(v2_i16, v3_i16)"), "x86-avx2",
                                  "x86.")
    assert {to_text(k): to_text(v) for k, v in alts.items()} == {
        "widening_mul(v0_i16, v1_i16)": "x86.wmul_pmaddwd(v0_i16, v1_i16)",
        "widening_mul(v2_i16, v3_i16)": "x86.wmul_pmaddwd(v2_i16, v3_i16)"}
    # the root is the rule's own left side, never an alternate; no instruction is widening_mul at u8
    assert instruction_alternates(parse("widening_mul(v0_i16, v1_i16)"), "x86-avx2", "x86.") == {}
    assert instruction_alternates(parse("widening_mul(v0_u8, v1_u8) + v2_u16"), "x86-avx2", "x86.") == {}
    # a lane-combining instruction (pmaddwd_pairs) is no alias of a lane-wise op
    got = instruction_alternates(parse("vector_reduce_add_x2(widening_mul(v0_i16, v1_i16)) + v2_i32"), "x86-avx2",
                                  "x86.")
    assert [to_text(v) for v in got.values()] == ["x86.wmul_pmaddwd(v0_i16, v1_i16)"]


def test_a_synthesized_rule_matches_the_hand_lowered_children_and_verifies() -> None:
    r = run_task(Task("lower", "x86-avx2", "widening_mul(v0_i16, v1_i16) + widening_mul(v2_i16, v3_i16)",
                      100_000, hide=bring_up_hidden("x86-avx2")))
    assert r["status"] == "synthesized", r
    assert r["rule"].startswith("either(widening_mul(v0_i16, v1_i16), x86.wmul_pmaddwd(v0_i16, v1_i16)) + either("), r
    rule = parse_rule("g: " + r["rule"])
    res = verify_rule(rule)
    assert res.status == "VALID" and len(rule.alternatives) == 4, res.summary()
    info = load_target("x86-avx2", include_synthesized=False)
    rw = Rewriter(RuleSet([rule]), cost=info.cost)
    for site in ("x86.wmul_pmaddwd(a_i16, b_i16) + x86.wmul_pmaddwd(c_i16, d_i16)",
                 "widening_mul(a_i16, b_i16) + x86.wmul_pmaddwd(c_i16, d_i16)"):
        assert to_text(rw.rewrite(parse(site))) == "x86.pmaddwd(a_i16, b_i16, c_i16, d_i16)"
