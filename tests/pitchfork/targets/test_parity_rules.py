"""The lifting and lowering rules added for selection parity with Halide's SIMD op checks (issue 27,
benchmarks/parity): each fires on Halide's own spelling (written with Halide's facts: `nsw` on signed
32/64-bit arithmetic, `inrange` on shifts, as the Halide frontend states them), and every example is
compiled and RUN against the interpreter by the differential tester (tests/pitchfork/difftest.py): x86
in process, arm64 under qemu-aarch64, hvx128 under qemu-hexagon, at several lane counts.

Each rule is proved by Z3 where its rule file is (tests/pitchfork/targets/test_{arm,x86,hvx}.py,
test_horizontal.py for the lane-combining ones, the lifting files in tests/pitchfork/selection)."""

from __future__ import annotations

import pytest

from fpir.ops import with_halide_overflow
from fpir.term import Term
from fpir.text import parse
from pitchfork.backend.run import tools_available
from pitchfork.selection.lower import select_instructions
from tests.pitchfork.difftest import run_batch, summary

#: ISA -> rule -> Halide spellings that fire it (lifting rules under the ISA whose lowering they feed)
NEW_RULES: dict[str, dict[str, list[str]]] = {
    "x86-avx2": {
        "mul_shr_of_cast_neg_shl": ["i16((i32(a_i16) * i32(b_i16)) << -16)",
                                    "u16((u32(a_u16) * u32(b_u16)) << i32(-16))"],
        "pmulhuw_preshift": ["mul_shr(a_u16, u16(b_u8), 13)", "mul_shr(a_u16, u16(b_u8) >> 2, 10)"],
        "psadbw_cast": ["vector_reduce_add_x8(u16(absd(a_u8, b_u8)))", "vector_reduce_add_x8(i32(absd(a_u8, b_u8)))"],
        "pmaddubsw_pairs_sum_u8": ["vector_reduce_add_x2(u16(a_u8))"],
        "pmaddubsw_pairs_sum_u8_signed": ["vector_reduce_add_x2(i16(a_u8))"],
        "pmaddubsw_pairs_sum_i8": ["vector_reduce_add_x2(i16(a_i8))"],
        "pmaddwd_pairs_sum": ["vector_reduce_add_x2(i32(a_i16))"],
        "pmaddwd_pairs_u8_x4": ["vector_reduce_add_x4(u32(a_u8) * u32(b_u8))"],
        "pmaddwd_pairs_u8_x8": ["c_i32 + vector_reduce_add_x8(i32(u16(a_u8) * u16(b_u8)))"],
        "pmaddwd_pairs_u8_x16": ["vector_reduce_add_x16(u32(a_u8) * u32(b_u8))"],
    },
    "arm64": {
        "saturating_neg_of_max": ["-max(a_i8, -127)", "-max(a_i32, -2147483647)"],
        "rounding_shl_var_narrow_round": [
            "i8((i16(a_i8) + i16((i8(1) >> min(b_i8 % 8 - 4, 0)) / 2)) << i16(b_i8 % 8 - 4))",
            "u16((u32(a_u16) + u32((u16(1) >> min(b_i16 % 16 - 8, 0)) / 2)) << i32(b_i16 % 16 - 8))"],
        "rounding_shr_var_narrow_round": [
            "u8((u16(a_u8) + u16((u8(1) << max(b_i8 % 8 - 4, 0)) / 2)) >> i16(b_i8 % 8 - 4))",
            "u32((u64(a_u32) + u64((u32(1) << max(b_i32 % 32 - 16, 0)) / 2)) >> i64(b_i32 % 32 - 16))"],
        "rounding_shl_var_nsw": ["i32((a_i32 + (i32(1) >> min(b_i32 % 32 - 16, 0)) / 2) << (b_i32 % 32 - 16))"],
        "rounding_shr_var_nsw": ["i32((a_i32 + (i32(1) << max(b_i32 % 32 - 16, 0)) / 2) >> (b_i32 % 32 - 16))"],
        "uaddlp_signed": ["vector_reduce_add_x2(i16(a_u8))"],
        "uadalp_signed": ["c_i16 + vector_reduce_add_x2(i16(a_u8))", "c_i32 + vector_reduce_add_x2(i32(a_u16))"],
        "addp_x4": ["c_i8 + vector_reduce_add_x4(a_i8)", "vector_reduce_add_x4(a_u32)"],
        "uaddlp_x4": ["c_u16 + vector_reduce_add_x4(u16(a_u8))"],
        "uaddlp_x4_signed": ["c_i32 + vector_reduce_add_x4(i32(a_u16))"],
        "saddlp_x4": ["c_i16 + vector_reduce_add_x4(i16(a_i8))"],
        "uaddlp_uaddlp": ["c_u64 + vector_reduce_add_x4(u64(a_u16))", "vector_reduce_add_x4(i64(a_u16))"],
        "saddlp_saddlp": ["c_i64 + vector_reduce_add_x4(i64(a_i16))"],
        "sdot_sum": ["c_i32 + vector_reduce_add_x4(i32(a_i8))"],
        "udot_x8": ["vector_reduce_add_x8(u32(a_u8) * u32(b_u8))"],
        "udot_x16": ["c_u32 + vector_reduce_add_x16(u32(a_u8) * u32(b_u8))"],
        "sdot_x8": ["vector_reduce_add_x8(i32(a_i8) * i32(b_i8))"],
        "sdot_x16": ["vector_reduce_add_x16(i32(a_i8) * i32(b_i8))"],
        "umaxp": ["vector_reduce_max_x2(a_u8)"],
        "smaxp": ["vector_reduce_max_x2(a_i32)"],
        "uminp": ["vector_reduce_min_x2(a_u16)"],
        "sminp": ["vector_reduce_min_x2(a_i8)"],
        "umaxp_x4": ["vector_reduce_max_x4(a_u16)"],
        "smaxp_x4": ["vector_reduce_max_x4(a_i8)"],
        "uminp_x4": ["vector_reduce_min_x4(a_u32)"],
        "sminp_x4": ["vector_reduce_min_x4(a_i16)"],
    },
    "hvx128": {
        "widening_mul_of_cast_const_4x": ["u32(a_u8) * 255 + u32(b_u8) * 254 + u32(c_u8) * 253 + u32(d_u8) * 252"],
        "vrmpy_uu_x8": ["vector_reduce_add_x8(u32(a_u8) * u32(b_u8))"],
        "vrmpy_uu_x16": ["c_u32 + vector_reduce_add_x16(u32(a_u8) * u32(b_u8))"],
        "vmpy_acc_neg_tap": ["c_i16 - i16(a_u8) * -127"],
        "vrmpy_taps_first": ["i32(a_u8) * 127 + i32(b_u8) * -128 + i32(c_u8) * 126 + i32(d_u8) * -127"],
        "vrmpy_taps_first_acc": ["q_i32 + i32(a_u8) * 2 + i32(b_u8) * -3 + i32(c_u8) * -4 + i32(d_u8) * 5"],
        "vmpa_h": ["i32(a_i16) * 2 + 3 * i32(b_i16)", "5 * (i32(a_i16) + 7 * i32(b_i16))"],
        "vmpa_acc_sum": ["2 * (i16(a_u8) + i16(b_u8)) + c_i16", "c_i16 + (i16(a_u8) * 127 + i16(b_u8) * -128)"],
        "vmpa_of_shifted_sum": ["2 * (i16(a_u8) + i16(b_u8))"],
        "vmpa_of_scaled_taps": ["3 * (4 * i16(a_u8) + i16(b_u8))"],
        "vmpa_scaled": ["3 * (i16(a_u8) * -2 + i16(b_u8) * 4)"],
        "vmpa_mixed_taps": ["i16(a_u8) * 127 + i16(b_u8) * -128"],
        "vmpa_acc_h": ["2 * i32(a_i16) + 3 * i32(b_i16) + c_i32"],
        "vmpyo_sacc_shr": ["i32((i64(a_i32) * 2147483646) / 4294967296)", "i32((i64(a_i32) * 1000) >> 40)"],
        "vsat_h_of_saturating_shl": ["saturating_cast<i16>(i32(a_i16) << 2)", "saturating_cast<i16>(i32(a_i16) * 64)"],
        "vadd_sat_of_saturating_shl1": ["saturating_cast<i16>(i32(a_i16) << 1)", "saturating_cast<i8>(i16(a_i8) * 2)"],
        "vasr_acc": ["a_i32 + b_i32 / 16", "a_i32 + (b_i32 >> 31)"],
        "vrmpy_vv": ["u32(a_u8) * u32(a_u8) + u32(b_u8) * u32(b_u8) + u32(c_u8) * u32(c_u8) + u32(d_u8) * u32(d_u8)",
                     "i32(a_i8) * i32(e_i8) + i32(b_i8) * i32(f_i8) + i32(c_i8) * i32(g_i8) + i32(d_i8) * i32(h_i8)"],
        "vrmpy_vv_acc": ["q_u32 + u32(a_u8) * u32(e_u8) + u32(b_u8) * u32(f_u8) + u32(c_u8) * u32(g_u8) + u32(d_u8) * u32(h_u8)",
                         "q_i32 + i32(a_i8) * i32(a_i8) + i32(b_i8) * i32(b_i8) + i32(c_i8) * i32(c_i8) + i32(d_i8) * i32(d_i8)"],
        # session 11
        "vmpyi_acc_neg_tap": ["a_i16 - b_i16 * -127", "c_i16 - a_i16 * -3"],
        "vmpa_signed_tap": ["3 * (4 * i16(a_u8) - i16(b_u8))", "4 * i16(a_u8) - i16(b_u8)"],
        "vmpa_of_shifted_diff": ["2 * (i16(a_u8) - i16(b_u8))", "(i16(a_u8) - i16(b_u8)) * 64"],
        "vmpa_h_diff": ["i32(a_i16) - 7 * i32(b_i16)", "i32(a_i16) - i32(b_i16) * 128"],
        "vmpa_h_scaled": ["5 * (i32(a_i16) - 7 * i32(b_i16))", "-3 * (i32(a_i16) - 2 * i32(b_i16))"],
        "vmpa_acc_of_taps": ["2 * i16(a_u8) + 3 * i16(b_u8) + a_i16", "c_i16 + (i16(a_u8) * 127 + i16(b_u8) * 126)"],
        "vmpa_acc_of_product": ["i16(a_u8) * 4 + (i16(b_u8) * 4 + i16(c_u8) * 6)",
                                "(i16(b_u8) * 200 + i16(c_u8) * 6) + i16(a_u8) * 255"],
        "vmpa_h_shifted": ["2 * (i32(a_i16) - 60 * i32(b_i16))", "(i32(a_i16) - 3 * i32(b_i16)) << 2"],
    },
}


def _term(text: str) -> Term:
    """Halide's facts on element-wise terms (the differential tester draws inputs where they hold; it
    does so lane-wise, so the reductions, whose rules need no facts, are taken as written)."""
    term = parse(text)
    if any(t.op.startswith("vector_reduce_") for t in term.walk()):
        return term
    return with_halide_overflow(term, shifts=True, overflow=True)


def _isa(isa: str):  # type: ignore[no-untyped-def]
    if isa == "x86-avx2":
        return pytest.param(isa, id=isa)
    return pytest.param(isa, id=isa, marks=[pytest.mark.qemu,
                                            pytest.mark.skipif(not tools_available(isa), reason="no qemu")])


@pytest.mark.parametrize("isa", sorted(NEW_RULES))
def test_new_rules_fire_on_halide_spellings(isa: str) -> None:
    missing = []
    for rule, examples in NEW_RULES[isa].items():
        for text in examples:
            sel = select_instructions(_term(text), isa, "pitchfork")
            fired = set(sel.lift_stats.fired if sel.lift_stats else ()) | set(sel.lower_stats.fired if sel.lower_stats else ())
            if rule not in fired:
                missing.append(f"{rule}: {text} -> {sel.final}")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("isa", [_isa(i) for i in sorted(NEW_RULES)])
def test_new_rules_run_bit_exactly(isa: str) -> None:
    terms = [_term(text) for examples in NEW_RULES[isa].values() for text in examples]
    res = run_batch(terms, isa, "pitchfork", seed=27)
    assert not res.skipped, res.skipped
    assert not res.mismatches and not res.errors, summary(res) + "\n" + "\n".join(
        [str(m) for m in res.mismatches[:5]] + res.errors[:5])
    assert res.ran == len(terms), summary(res)


#: hvx128 emitter choices (no rule: the same instruction count either way) checked against Halide's
#: expected form, with the forms they must leave alone (Halide's own checks expect both).
HVX_FORMS = [("c_i16 + i16(a_u8) * 127", r"\.h \+= vmpy\(v\d+\.ub,r\d+\.b\)"),
             ("c_i16 + 3 * i16(a_u8)", r"\.h \+= vmpy\(v\d+\.ub,r\d+\.b\)"),
             ("c_u16 + u16(a_u8) * 127", r"\.uh \+= vmpy\(v\d+\.ub,r\d+\.ub\)"),
             ("c_i16 + i16(a_u8) * 200", r"\.uh \+= vmpy\(v\d+\.ub,r\d+\.ub\)")]


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
def test_hvx_i16_sums_of_u8_products_by_small_taps_take_the_signed_tap_form() -> None:
    """vmpybus.acc (v.h += vmpy(v.ub, r.b)) onto a signed accumulator when the u8 tap is <= 127, as Halide;
    vmpyub.acc otherwise; both run bit-exactly."""
    import re

    from pitchfork.selection.select_batch import select_expression

    for text, form in HVX_FORMS:
        rec = select_expression(text, "hvx128", 128, emit="asm", no_overflow=True, shifts_in_range=True)
        assert rec.error is None and re.search(form, rec.asm or ""), (text, rec.error, rec.final)
    terms = [_term(text) for text, _ in HVX_FORMS]
    res = run_batch(terms, "hvx128", "pitchfork", seed=27)
    assert not res.mismatches and not res.errors and res.ran == len(terms), summary(res)
