"""pitchfork/backend/hvx_fixups.py: predicate selects that LLVM 22's Hexagon backend cannot select.

The repro is the difftest case (seed 777, hvx128, isel=pitchfork) that aborted with "Cannot select:
v128i1 = vselect": an i8 select steered by an i32 compare of a saturating clamp, which InstCombine
turns into a select between predicate vectors. It must compile and run bit-exactly at every lane
count.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpir.text import parse
from fpir.types import parse_type
from pitchfork.backend.hvx_fixups import has_predicate_select, rewrite_predicate_selects
from pitchfork.backend.run import tools_available
from pitchfork.selection.lower import select_instructions

IR = """define <64 x i1> @f(<64 x i1> %c, <64 x i1> %a, <64 x i1> %b) {
  %r = select <64 x i1> %c, <64 x i1> %a, <64 x i1> %b
  %s = select <64 x i1> %r, <64 x i1> zeroinitializer, <64 x i1> splat (i1 true)
  %t = select <64 x i1> %s, <64 x i32> zeroinitializer, <64 x i32> zeroinitializer
  ret <64 x i1> %s
}
"""


def test_rewrite_replaces_only_predicate_selects() -> None:
    assert has_predicate_select(IR)
    out = rewrite_predicate_selects(IR)
    assert not has_predicate_select(out)
    assert out.count(" = select ") == 1  # the i32 select stays
    assert "%r = or <64 x i1> %pfx.selt.0, %pfx.self.0" in out
    assert "%pfx.selt.1 = and <64 x i1> %r, zeroinitializer" in out
    assert "%pfx.self.1 = and <64 x i1> %pfx.seln.1, splat (i1 true)" in out


def test_rewrite_is_the_same_boolean_function() -> None:
    """JIT both versions (x86: the rewrite is target-independent) and compare on all 8 (c, a, b)."""
    import ctypes

    import llvmlite.binding as llvm

    from pitchfork.backend.machine import target_machine

    src = ("define i8 @g(i8 %cc, i8 %aa, i8 %bb) {\n"
           "  %c = trunc i8 %cc to i1\n  %a = trunc i8 %aa to i1\n  %b = trunc i8 %bb to i1\n"
           "  %cv = insertelement <2 x i1> poison, i1 %c, i32 0\n  %av = insertelement <2 x i1> poison, i1 %a, i32 0\n"
           "  %bv = insertelement <2 x i1> poison, i1 %b, i32 0\n"
           "  %r = select <2 x i1> %cv, <2 x i1> %av, <2 x i1> %bv\n"
           "  %e = extractelement <2 x i1> %r, i32 0\n  %z = zext i1 %e to i8\n  ret i8 %z\n}\n")
    rewritten = rewrite_predicate_selects(src)
    assert " select " not in rewritten
    results = []
    for text in (src, rewritten):
        mod = llvm.parse_assembly(text)
        mod.verify()
        ee = llvm.create_mcjit_compiler(mod, target_machine("x86-avx2", jit=True))
        ee.finalize_object()
        fn = ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint8)(
            ee.get_function_address("g"))
        results.append([fn(c, a, b) for c in (0, 1) for a in (0, 1) for b in (0, 1)])
    assert results[0] == results[1] == [b if not c else a for c in (0, 1) for a in (0, 1) for b in (0, 1)]


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
def test_select_of_i8_by_i32_compare_compiles_and_runs() -> None:
    from tests.pitchfork.targets.hvx_difftest import Case, run_cases

    env = {"a": parse_type("i32"), "c": parse_type("i32"), "d": parse_type("u32"), "b": parse_type("i16"),
           "x": parse_type("i8"), "y": parse_type("i8"), "u": parse_type("u8")}
    exprs = ["select(rounding_mul_shr(c, a, d) > widening_shr(b, u16(3)), x, y)",
             "rounding_mul_shr(halving_sub(select(rounding_mul_shr(c, a, d) > widening_shr(b, u16(3)), x, "
             "rounding_shl(y, u8(6))), y), reinterpret<i8>(u), 18)"]
    cases = [Case(e, select_instructions(parse(e, env=env), "hvx128", isel).final, lanes)
             for e in exprs for isel in ("pitchfork", "llvm") for lanes in (16, 32, 64, 128, 256)]
    failures = run_cases(cases, np.random.default_rng(777), isolate=True)
    assert not failures, "\n".join(f[:300] for f in failures)


# ---- multi-register predicate extensions (SelectQ2V) ------------------------------------------------
EXT_IR = """define <64 x i32> @g(<64 x i32> %x) {
  %c = icmp sgt <64 x i32> %x, splat (i32 -1)
  %z = zext <64 x i1> %c to <64 x i32>
  %r = shl <64 x i32> %z, splat (i32 31)
  %n = icmp eq <32 x i32> zeroinitializer, zeroinitializer
  %one = zext <32 x i1> %n to <32 x i32>
  ret <64 x i32> %r
}
"""


def test_wide_predicate_extension_is_split_per_register() -> None:
    from pitchfork.backend.hvx_fixups import has_wide_predicate_ext, rewrite_wide_predicate_exts

    assert has_wide_predicate_ext(EXT_IR)
    out = rewrite_wide_predicate_exts(EXT_IR)
    assert not has_wide_predicate_ext(out)
    assert out.count("zext <32 x i1>") == 3  # two halves + the one-register extension left alone
    assert "%z = shufflevector <32 x i32> %pfx.qe.0.0, <32 x i32> %pfx.qe.0.1" in out


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu toolchain for hvx128")
def test_sign_fixup_shift_over_a_register_pair_compiles_and_runs() -> None:
    """`rounding_mul_shr(x, y, s) << 31` at 64 i32 lanes (the reduction difftest's seed-205 case):
    LLVM 22 aborted in HexagonISelDAGToDAG::SelectQ2V before the split; now bit-exact."""
    from tests.pitchfork.difftest import run_batch

    terms = [parse("rounding_mul_shr(x_i32, y_i32, s_u32) << 31"),
             parse("vector_reduce_min_x4(rounding_mul_shr(extending_sub(x_i32, u16(65535)), ~x_i32, s_u32) << 31)")]
    r = run_batch(terms, "hvx128", "pitchfork", seed=1, lanes_choice=lambda rng, nat: 64)
    assert not r.errors and not r.mismatches and r.ran == 2, (r.errors, [m.report() for m in r.mismatches])


# ---- trunc to i1 of 16/32-bit lanes (tests every byte in LLVM 22's lowering) -------------------------
TRUNC_IR = """define <32 x i32> @h(<32 x i32> %x, <32 x i32> %z, <128 x i8> %b) {
  %t = trunc <32 x i32> %x to <32 x i1>
  %m = select <32 x i1> %t, <32 x i32> %z, <32 x i32> zeroinitializer
  %u = trunc <128 x i8> %b to <128 x i1>
  ret <32 x i32> %m
}
"""


def test_trunc_to_predicate_of_wide_lanes_is_spelled_out() -> None:
    from pitchfork.backend.hvx_fixups import has_wide_lane_predicate_trunc, rewrite_wide_lane_predicate_truncs

    assert has_wide_lane_predicate_trunc(TRUNC_IR)
    out = rewrite_wide_lane_predicate_truncs(TRUNC_IR)
    assert not has_wide_lane_predicate_trunc(out)
    assert "%pfx.tb.0 = and <32 x i32> %x, splat (i32 1)" in out
    assert "%t = icmp ne <32 x i32> %pfx.tb.0, zeroinitializer" in out
    assert "%u = trunc <128 x i8> %b to <128 x i1>" in out  # byte lanes: LLVM's vand is right


@pytest.mark.skipif(not tools_available("hvx128"), reason="needs the Hexagon toolchain and qemu-hexagon")
def test_odd_test_of_wide_lanes_runs_bit_exactly() -> None:
    """difftest hvx128 seed 13: `(x & 1) * z` at u32 (InstCombine: select(trunc x to i1, z, 0)) gave z
    for x = 256 before the rewrite, at every lane count; likewise at u16/i16."""
    from tests.pitchfork.targets.hvx_difftest import Case, run_cases

    cases = []
    for t in ("u32", "i32", "u16", "i16"):
        env = {"x": parse_type(t), "z": parse_type(t), "y": parse_type("u16")}
        exprs = ["(x & 1) * z", "x % 2 * z"] + (["x % 2 * widening_shl(y, i16(3))"] if t == "u32" else [])
        cases += [Case(f"{t}: {e}", select_instructions(parse(e, env=env), "hvx128", isel).final, lanes)
                  for e in exprs for isel in ("pitchfork", "llvm") for lanes in (32, 64, 128)]
    failures = run_cases(cases, np.random.default_rng(13))
    assert not failures, "\n".join(f[:300] for f in failures)
