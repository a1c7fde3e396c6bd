"""x86 AVX2 rounding shifts by a per-lane signed amount (32/64-bit lanes), the emulated vpsravq,
vpmulhrsw under the narrowings Halide writes around it, and the Q31 high multiplies through vpmuldq.

The rules themselves are verified and run on edge values in test_x86.py (test_rule_verifies,
test_rules_fire_and_run, test_every_fpir_op_lowers_at_every_type). Checked here:
* the unsound near misses of the new compound forms are INVALID (negative tests);
* rounding_shr_widened_negated is VALID without its `!lower_bounded` guard (the guard only steers
  a non-negative amount to the shorter one-sided forms);
* Halide pipelines using rounding_shift_left / rounding_shift_right with a per-lane Int(32) amount get
  the or'ed vpsllvd / vpsravd form (no blend), a shorter loop than LLVM alone, and the same values as
  Halide's realize() (amounts in range) and as isel=llvm (every amount);
* a Halide pipeline narrowing a Q15 product in the ways quantized code does (truncating, saturating to
  8 and 16 bits, through Halide's rounding_shift_right and its unsigned amount) gets vpmulhrsw and no
  32-bit product, bit-exact against realize();
* Halide's Q31 requantize multiplies get vpmuldq on both lane halves (x86.pmuldq_q31*);
* lifting Halide's widened 32-bit rounding_shift_left spelling does not lose on x86.
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.asm import main_vector_loop
from pitchfork.trs.rules import parse_rule
from synth.verify import verify_rule
from tests.pitchfork.targets.test_x86 import TARGET, pytestmark  # noqa: F401  (AVX2 host skip)

HALIDE_TARGET = hl.Target("x86-64-linux-avx-avx2-fma-sse41")

# Each is a plausible slip in the forms of x86_avx2.rules; the counterexample says why it is wrong.
UNSOUND = {
    # -y instead of ~y: rounds by one bit more
    "negated_amount": "rounding_shl(x_i32, y_i32) -> x86.psllv(x_i32, y_i32) | "
                      "(x86.psrav(x_i32, 0 - y_i32) - (x86.psrav(x_i32, 0 - y_i32) >> 1))",
    # the right half by k instead of k - 1, without the rounding halving: truncates
    "floor_shift": "rounding_shl(x_i32, y_i32) -> x86.psllv(x_i32, y_i32) | x86.psrav(x_i32, 0 - y_i32)",
    # (a + 1) >> 1 for the rounding halving: wraps at a = tmax (k = 1, x = tmax)
    "add_one_halving": "rounding_shl(x_i32, y_i32) -> x86.psllv(x_i32, y_i32) | "
                       "((x86.psrav(x_i32, ~y_i32) + 1) >> 1)",
    # the logical shift of a signed value loses the sign fill
    "psrav_q_logical": "x_i64 >> y_u64 -> reinterpret<i64>(x86.psrlv(reinterpret<u64>(x_i64), y_u64))",
    # rounding_shr by y as rounding_shl by ~y (= -y - 1): one bit too far (rounding_shr_widened_negated)
    "negated_by_not": "rounding_shr(x_T, y_S) -> x86.rounding_shl_widened(x_T, ~y_S) "
                      "if bits(T) <= 16 && is_signed(S) && bits(S) == bits(T)",
    # x86.rounding_shr_widened by a 16-bit amount of the other signedness cast to a signed value: i16(n_u16)
    # of an n >= 2^15 is a negative amount (a left shift), where the instruction reads it as unsigned
    "rounding_shr_widened_same_width_unsigned": "rounding_shr(x_i16, cast<i16>(y_u16)) -> "
                                                "x86.rounding_shr_widened(x_i16, cast<u16>(y_u16))",
    # clamping the negatives alone turns the overflowing product (32768) into 0
    "pmulhrsw_u16_max": "saturating_cast<u16>(rounding_shr(widening_mul(x_i16, y_i16), 15)) -> "
                        "reinterpret<u16>(max(x86.pmulhrsw(x_i16, y_i16), 0))",
    # the signed fix-up saturates that product to 32767
    "pmulhrsw_u16_fixup": "saturating_cast<u16>(rounding_shr(widening_mul(x_i16, y_i16), 15)) -> reinterpret<u16>("
                          "max(x86.pmulhrsw(x_i16, y_i16) ^ (0 - i16(x86.pmulhrsw(x_i16, y_i16) == -32768)), 0))",
}


@pytest.mark.parametrize("name", sorted(UNSOUND))
def test_unsound_variants_are_invalid(name: str) -> None:
    result = verify_rule(parse_rule(f"{name}: {UNSOUND[name]}", "<test>", 1))
    assert result.status == "INVALID", result.summary()


def test_negated_rounding_shr_guard_is_cost_only() -> None:
    """rounding_shr_widened_negated's `!lower_bounded(y_S, 0)` only steers selection to the shorter
    one-sided forms for a non-negative amount (the verifier reads it as an assumption, y < 0): the rule
    without it is VALID at every type instance, so it is sound for every amount."""
    from pitchfork.targets import load_target

    rule = next(r for r in load_target(TARGET).rules.rules if r.name == "rounding_shr_widened_negated")
    guard = " && !lower_bounded(y_S, 0)"
    assert rule.predicate is not None and rule.predicate.endswith(guard), rule.predicate
    unguarded = rule.text().removesuffix(guard)
    result = verify_rule(parse_rule(unguarded, "<test>", 1), rlimit=300_000_000)
    assert result.status == "VALID" and len(result.instances) == 4, result.summary()


def _loop(prog: pitchfork.CompiledPipeline, name: str) -> list[str]:
    return [i.split()[0] for i in main_vector_loop(prog.assembly(), name, target=TARGET).instructions]


def _compile_both(f: hl.Func, args: list, name: str) -> tuple:
    ours = pitchfork.compile(f, args, target=TARGET, name=name)
    llvm = pitchfork.compile(f, args, target=TARGET, isel="llvm", name=name + "_llvm")
    return ours, llvm, _loop(ours, name), _loop(llvm, name + "_llvm")


def test_halide_rounding_shifts_by_signed_lane_amounts() -> None:
    a = hl.ImageParam(hl.Int(32), 1, "a")
    b = hl.ImageParam(hl.UInt(32), 1, "b")
    s = hl.ImageParam(hl.Int(32), 1, "s")
    x = hl.Var("x")
    f = hl.Func("rshift32")
    f[x] = (hl.rounding_shift_left(a[x], s[x]) ^ hl.rounding_shift_right(a[x], s[x])
            ^ hl.i32(hl.rounding_shift_left(b[x], s[x]) + hl.rounding_shift_right(b[x], s[x])))
    f.vectorize(x, 8)
    ours, llvm, mine, theirs = _compile_both(f, [a, b, s], "rshift32")
    for rule in ("rounding_shl_psllv_psrav", "rounding_shr_psllv_psrav", "rounding_shl_psllv_psrlv",
                 "rounding_shr_psllv_psrlv"):
        assert ours.stats.rules_fired.get(rule), (rule, ours.stats.rules_fired)
    assert not any(m.startswith(("vblendv", "vpcmp", "vpminud")) for m in mine), mine
    assert len(mine) < len(theirs), (mine, theirs)
    rng = np.random.default_rng(32)
    n = 2048
    da = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    db = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ds = rng.integers(-40, 41, n).astype(np.int32)
    da[:8] = [-2**31, 2**31 - 1, -1, 0, 1, -3, 3, 2**30]
    db[:8] = [2**32 - 1, 2**31, 0, 1, 3, 2**31 - 1, 7, 5]
    ds[:24] = np.resize([0, 1, -1, 31, -31, 32, -32, -33], 24)
    ds[24:32] = [-2**31, 2**31 - 1, 33, -64, 64, 1000, -1000, 2]
    got = np.asarray(ours(da, db, ds))
    assert np.array_equal(got, np.asarray(llvm(da, db, ds)))
    # Halide leaves shifts past the width unspecified: its realize() is the reference for |s| < 32.
    a.set(hl.Buffer(da))
    b.set(hl.Buffer(db))
    s.set(hl.Buffer(ds))
    want = np.asarray(f.realize([n], HALIDE_TARGET))
    inside = np.abs(ds.astype(np.int64)) < 32
    assert np.array_equal(got[inside], want[inside])


def test_halide_q15_narrowings_use_pmulhrsw() -> None:
    a = hl.ImageParam(hl.Int(16), 1, "a")
    b = hl.ImageParam(hl.Int(16), 1, "b")
    x = hl.Var("x")
    p = hl.i32(a[x]) * hl.i32(b[x])
    rsr = hl.rounding_shift_right(p, 15)  # Halide's unsigned amount
    q15 = (p + 16384) >> 15
    f = hl.Func("q15_narrow")
    f[x] = (hl.i32(hl.i16(rsr)) + hl.i32(hl.saturating_cast(hl.UInt(16), q15))
            + hl.i32(hl.saturating_cast(hl.UInt(16), rsr)) + hl.i32(hl.u8_sat(rsr)) + hl.i32(hl.i8_sat(rsr)))
    f.vectorize(x, 16)
    ours, llvm, mine, theirs = _compile_both(f, [a, b], "q15_narrow")
    assert "vpmulhrsw" in mine and "vpmaddwd" not in mine, mine
    assert len(mine) < len(theirs), (mine, theirs)
    rng = np.random.default_rng(15)
    da = rng.integers(-32768, 32768, 4096).astype(np.int16)
    db = rng.integers(-32768, 32768, 4096).astype(np.int16)
    da[:8] = [-32768, -32768, 32767, -1, 0, 1, -32768, 16384]
    db[:8] = [-32768, 32767, 32767, -1, 5, -32768, -32767, 2]
    a.set(hl.Buffer(da))
    b.set(hl.Buffer(db))
    assert np.array_equal(np.asarray(ours(da, db)), np.asarray(f.realize([4096], HALIDE_TARGET)))


def test_rounding_shl_32bit_lifting_never_loses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Halide's widened rounding_shift_left at 32 bits (i64 arithmetic), lifted to rounding_shl, is a
    shorter loop than left unlifted (scripts/lift_vs_unlifted.py prints the same comparison)."""
    import pitchfork.selection.lift as lift_mod
    from pitchfork.selection.select_batch import select_expression
    from pitchfork.trs.rewriter import Rewriter
    from pitchfork.trs.rules import RuleSet

    spellings = ["i32((i64(a_i32) + ((i64(1) >> max(min(n_i64, 31), -32)) >> 1)) << max(min(n_i64, 31), -32))",
                 "u32((u64(a_u32) + ((u64(1) >> max(min(n_i64, 31), -32)) >> 1)) << max(min(n_i64, 31), -32))"]

    def loop(text: str) -> tuple[int, str]:
        rec = select_expression(text, TARGET, emit="asm")
        assert rec.error is None and rec.asm is not None, rec.error
        return len(main_vector_loop(rec.asm, target=TARGET).instructions), str(rec.fpir)

    lifted = {s: loop(s) for s in spellings}
    kept = RuleSet([r for r in lift_mod.lift_rules().rules if not r.name.startswith("rounding_shl_var_")])
    monkeypatch.setattr(lift_mod, "lifter", lambda rules=None, trace=False: Rewriter(kept, trace=trace))
    for s in spellings:
        n_unlifted, fpir = loop(s)
        assert lifted[s][1].startswith("rounding_shl(") and "rounding_shl" not in fpir, (lifted[s][1], fpir)
        assert lifted[s][0] < n_unlifted, (s, lifted[s][0], n_unlifted)


def test_halide_q31_requantize_uses_pmuldq_on_both_halves() -> None:
    """Halide's rounding_mul_shift_right / mul_shift_right of i32 by 31 (the requantize multiply):
    vpmuldq on the even and odd lanes, no widening of the operands (vpmovsxdq) or narrowing of the
    products (vpermpd), bit-exact against realize() including MIN * MIN."""
    a = hl.ImageParam(hl.Int(32), 1, "a")
    b = hl.ImageParam(hl.Int(32), 1, "b")
    x = hl.Var("x")
    f = hl.Func("q31")
    f[x] = hl.rounding_mul_shift_right(a[x], b[x], 31) ^ hl.mul_shift_right(a[x], b[x] >> 1, 31)
    f.vectorize(x, 8)
    ours, llvm, mine, theirs = _compile_both(f, [a, b], "q31")
    assert mine.count("vpmuldq") == 4 and not {"vpmovsxdq", "vpermpd", "vpermq"} & set(mine), mine
    assert len(mine) < len(theirs), (mine, theirs)
    rng = np.random.default_rng(31)
    da = rng.integers(-2**31, 2**31, 4096, dtype=np.int64).astype(np.int32)
    db = rng.integers(-2**31, 2**31, 4096, dtype=np.int64).astype(np.int32)
    da[:8] = [-2**31, -2**31, 2**31 - 1, -1, 0, 1, -2**31, 2**30]
    db[:8] = [-2**31, 2**31 - 1, 2**31 - 1, -1, 5, -2**31, -2**31 + 1, 2]
    a.set(hl.Buffer(da))
    b.set(hl.Buffer(db))
    assert np.array_equal(np.asarray(ours(da, db)), np.asarray(f.realize([4096], HALIDE_TARGET)))
