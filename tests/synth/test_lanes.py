"""Lane-combining ops in the search: banks evaluate reductions and the lane-grouped instructions
(udot, vrmpy, pmaddwd pairs, pairwise adds) over lane groups, so left sides with `vector_reduce_*`
are searched and the dot-product lowering rules are found again (hand rules hidden) and verified."""

from __future__ import annotations

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from pitchfork.targets import load_target
from pitchfork.trs.rules import parse_rule
from synth.bank import lane_apply
from synth.search import lane_factors, synthesize
from synth.tasks import Task, lowering_grammar, run_task
from synth.verify import verify_rule


def test_lane_apply_matches_the_interpreter() -> None:
    load_target("arm64")
    from fpir.types import parse_type

    u8, u32 = parse_type("u8"), parse_type("u32")
    rng = np.random.default_rng(1)
    rows, m = 5, 3
    acc = rng.integers(0, 2**32, size=(m, rows), dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 256, size=(m, rows * 4)).astype(np.uint8)
    z = rng.integers(0, 256, size=(m, rows * 4)).astype(np.uint8)
    got = lane_apply("arm.udot", [acc, y, z], [u32, u8, u8], u32, (1, 4, 4), 1, rows)
    term = parse("arm.udot(a_u32, y_u8, z_u8)")
    for i in range(m):
        want = evaluate(term, {"a": acc[i].reshape(rows, 1), "y": y[i].reshape(rows, 4), "z": z[i].reshape(rows, 4)})
        assert np.array_equal(got[i], np.asarray(want).reshape(-1))


def test_lane_factors() -> None:
    assert lane_factors(parse("x_u32 + vector_reduce_add_x4(u32(y_u8))")) == {"x": 1, "y": 4}
    assert lane_factors(parse("x_u32 + u32(y_u8)")) == {}
    lhs = parse("vector_reduce_add_x16(u32(y_u8))")
    res = synthesize(lhs, lowering_grammar(lhs, "arm64"), (900, 9, 0, 0), max_terms=1000)  # (cycles, instructions)
    assert res.status == "budget" and "lane factor 16" in res.detail


@pytest.mark.parametrize(
    "isa, lhs, hide, instruction",
    [
        ("arm64", "v0_u32 + vector_reduce_add_x4(u32(widening_mul(v1_u8, v2_u8)))",
         ("udot_u32", "udot_i32", "udot_fold"), "arm.udot(v0_u32, v1_u8, v2_u8)"),
        ("arm64", "v0_i32 + vector_reduce_add_x4(i32(widening_mul(v1_i8, v2_i8)))", ("sdot", "sdot_fold"),
         "arm.sdot(v0_i32, v1_i8, v2_i8)"),
        ("hvx128", "vector_reduce_add_x4(u32(widening_mul(v0_u8, v1_u8)))", ("vrmpy_uu",), "hvx.vrmpy("),
        ("hvx128", "vector_reduce_add_x4(i32(widening_mul(v0_i8, v1_i8)))", ("vrmpy_ss",),
         "hvx.vrmpy(0, v0_i8, v1_i8)"),
        ("hvx128", "vector_reduce_add_x4(i32(widening_mul(v0_u8, v1_i8)))", ("vrmpy_us",),
         "hvx.vrmpy(0, v0_u8, v1_i8)"),
        # the accumulating form, as bottom-up lowering meets it once the reduction is a vrmpy into 0
        ("hvx128", "v0_i32 + hvx.vrmpy(0, v1_u8, v2_i8)", ("vrmpy_fold",), "hvx.vrmpy(v0_i32, v1_u8, v2_i8)"),
        ("x86-avx2", "vector_reduce_add_x2(widening_mul(v0_i16, v1_i16))", ("pmaddwd_pairs",),
         "x86.pmaddwd_pairs(v0_T, v1_T)"),
        ("arm64", "vector_reduce_add_x2(u32(v0_u16))", ("uaddlp",), "arm.uaddlp("),
    ],
)
def test_dot_product_rules_are_found_and_verified(isa: str, lhs: str, hide: tuple[str, ...], instruction: str) -> None:
    r = run_task(Task("lower", isa, lhs, 100_000, hide=hide))
    assert r["status"] == "synthesized", r
    assert instruction in r["rule"]
    rule = parse_rule(f"found: {r['rule']}", "<test>", 1)
    assert verify_rule(rule).status == "VALID"
