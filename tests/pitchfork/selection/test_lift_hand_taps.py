"""Hand-written rules alone (no synthesized rules) select the byte-tap forms gaussian7x7 and mul need.

Leave-one-out benchmarking compiles a benchmark without the synthesized rules learned from it, so a
form that only a synthesized rule made was lost on exactly the benchmark it came from:
- `i32(a_u8) * 20` (a four-times widening into a signed type by a tap that fits i8) is lifted by
  rules/lift/widening.rules widening_mul_of_cast_const_4x_signed to `i32(widening_mul(i8(20), a_u8))`,
  which the narrow-sum rules turn into 16-bit products summed on 16 bits (umull + add, umlal on arm64);
- `saturating_cast<i16>(rounding_shr(x_i32, y))` by a runtime amount is lowered on hvx128 by
  rules/lower/hvx.rules vasr_rnd_sat_h_var to vasr(.w, .w, Rt):rnd:sat.
Both rules are proven at every type instance by the rule-file tests; here they must fire with the
synthesized rules switched off, and the lifted terms equal their inputs on random inputs.
"""

from __future__ import annotations

import numpy as np

from fpir import parse
from fpir.interp import evaluate
from pitchfork.selection.lift import lift
from pitchfork.selection.select_batch import select_expression
from pitchfork.selection.synthesized import rules_config

ROW = "i32(a_u8) + i32(b_u8) * 6 + i32(c_u8) * 15 + i32(d_u8) * 20 + i32(e_u8) * 15 + i32(f_u8) * 6 + i32(g_u8)"


def _inputs(names: str, rng: np.random.Generator, lanes: int = 64) -> dict[str, np.ndarray]:
    return {n: rng.integers(0, 256, lanes, dtype=np.uint8) for n in names}


def test_signed_byte_taps_lift_to_widening_products_without_synthesized_rules() -> None:
    with rules_config(enabled=False):
        for tap in (20, 127, -128, -3):
            term = parse(f"i32(a_u8) * {tap}")
            lifted = lift(term)
            assert lifted.op == "cast" and lifted.args[0].op == "widening_mul", (tap, str(lifted))
            env = _inputs("a", np.random.default_rng(tap & 0xFF))
            np.testing.assert_array_equal(evaluate(lifted, env), evaluate(term, env))
        # 128 does not fit i8: not this rule's form (nothing claims a signed i8 tap of 128)
        assert "i8(128)" not in str(lift(parse("i32(a_u8) * 128")))


def test_gaussian7x7_row_is_multiply_accumulates_on_arm64_without_synthesized_rules() -> None:
    with rules_config(enabled=False):
        lifted = lift(parse(ROW))
        env = _inputs("abcdefg", np.random.default_rng(7))
        np.testing.assert_array_equal(evaluate(lifted, env), evaluate(parse(ROW), env))
        rec = select_expression(ROW, "arm64", emit="fpir")
    assert rec.error is None, rec.error
    # every tap is a u8 x u8 -> u16 product summed on 16 bits (LLVM fuses the adds into umlal), none
    # an i32 multiply
    assert rec.final is not None and all(f"arm.umull({v}_u8, {k})" in rec.final
                                         for v, k in (("b", 6), ("c", 15), ("d", 20))), rec.final


def test_runtime_rounding_narrowing_shift_is_one_vasr_on_hvx_without_synthesized_rules() -> None:
    with rules_config(enabled=False):
        rec = select_expression("saturating_cast<i16>(rounding_shr(x_i32, y_u32))", "hvx128", emit="fpir")
    assert rec.error is None, rec.error
    assert rec.final is not None and rec.final.startswith("hvx.vasr_rnd_sat_h("), rec.final
