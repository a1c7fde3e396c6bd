"""Issue 11's lifting families on real Halide code: each spelling below is a tiny Halide Func written the
way users write the idiom; Halide's simplifier rewrites it first (clamps whose bounds it can prove
vanish, `>> k` becomes `/ 2^k`, constants fold), and the captured expression must still lift to the
FPIR op of its family, lower to the instruction each ISA has for it, and run bit-exactly against
Halide's own realize() (x86 JIT; AArch64 and Hexagon under qemu for a few).

Families: mul_shr / rounding_mul_shr from saturating, clamped and (bounds permitting) truncating
narrowings; saturating_add / saturating_sub from saturating or clamped narrowings of widening sums;
multiply-accumulate from constant multipliers of widening sums; widen-right ops from narrow values
accumulated into wide ones (either signedness, 2x or 4x wider).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from fpir.term import Term
from pitchfork.backend.machine import main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as hir
from pitchfork.api import CompiledPipeline, PitchforkFallbackWarning
from pitchfork.codegen.loop_nest import LoopNestCodegen

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
x = hl.Var("x")
I8, U8, I16, U16, I32, U32 = hl.Int(8), hl.UInt(8), hl.Int(16), hl.UInt(16), hl.Int(32), hl.UInt(32)
SIZE = 256
LANES = {"x86-avx2": 16, "arm64": 16, "hvx128": 128}

Body = Callable[..., Any]


@dataclass(frozen=True)
class Spelling:
    types: tuple[Any, ...]  # element types of the 1-D inputs a, b, (c)
    body: Body  # (a, b, c) -> Halide Expr
    fpir: str  # the FPIR op the captured expression must lift to (in the selected FPIR)
    #: per target, a regex the steady-state loop must contain (the instruction the op lowers to)
    insn: dict[str, str] = field(default_factory=dict)


def _clamp16(e: Any) -> Any:
    return hl.clamp(e, -32768, 32767)


SPELLINGS: dict[str, Spelling] = {
    # ---- mul_shr / rounding_mul_shr ----
    "q15_clamp_shr": Spelling((I16, I16), lambda a, b, c: hl.i16(_clamp16((hl.i32(a) * hl.i32(b)) >> 15)),
                              "mul_shr", {"arm64": r"sqdmulh"}),
    "q15_clamp_div_rounding": Spelling(
        (I16, I16), lambda a, b, c: hl.i16(hl.max(hl.min((hl.i32(a) * hl.i32(b) + 16384) / 32768, 32767), -32768)),
        "rounding_mul_shr", {"x86-avx2": r"vpmulhrsw", "arm64": r"sqrdmulh"}),
    "q15_saturating_cast_rounding": Spelling(
        (I16, I16), lambda a, b, c: hl.saturating_cast(I16, (hl.i32(a) * hl.i32(b) + (1 << 14)) >> 15),
        "rounding_mul_shr", {"x86-avx2": r"vpmulhrsw", "arm64": r"sqrdmulh"}),
    # the clamp is provably redundant for a constant below 2^15: Halide drops it, the narrow truncates
    "q15_const_truncating": Spelling((I16, I16), lambda a, b, c: hl.i16(_clamp16((hl.i32(a) * 23170) >> 15)),
                                     "mul_shr", {"arm64": r"sqdmulh"}),
    "q15_const_truncating_rounding": Spelling(
        (I16, I16), lambda a, b, c: hl.i16((hl.i32(a) * -20000 + 16384) >> 15),
        "rounding_mul_shr", {"x86-avx2": r"vpmulhrsw", "arm64": r"sqrdmulh"}),
    "q15_bounded_truncating": Spelling((I16, I16), lambda a, b, c: hl.i16((hl.i32(a) * hl.i32(b / 2)) >> 15),
                                       "mul_shr", {"arm64": r"sqdmulh"}),
    "q15_bounded_truncating_rounding": Spelling(
        (I16, I16), lambda a, b, c: hl.i16((hl.i32(b >> 1) * hl.i32(a) + 16384) >> 15),
        "rounding_mul_shr", {"x86-avx2": r"vpmulhrsw", "arm64": r"sqrdmulh"}),
    "high_half_resigned": Spelling((U16, U16), lambda a, b, c: hl.i16((hl.u32(a) * hl.u32(b)) >> 16),
                                   "mul_shr", {"x86-avx2": r"vpmulhuw"}),
    "q31_shift_at_i64": Spelling(
        (I32, I32), lambda a, b, c: hl.saturating_cast(I32, (hl.i64(a) * hl.i64(b) + (hl.i64(1) << 30)) >> hl.i64(31)),
        "rounding_mul_shr", {"arm64": r"sqrdmulh"}),
    # i32 with a bounded factor (b / 2 fits in [1 - 2^31, 2^31]): Halide keeps the truncating narrow of
    # the i64 product; Q31 instructions (HVX vmpye + vmpyo:<<1:sat, Neon sqdmulh / sqrdmulh)
    "q31_bounded_truncating": Spelling(
        (I32, I32), lambda a, b, c: hl.i32((hl.i64(a) * hl.i64(b / 2)) >> 31),
        "mul_shr", {"arm64": r"sqdmulh", "hvx128": r"vmpyo\(v\d+\.w,v\d+\.h\):<<1:sat"}),
    "q31_bounded_truncating_rounding": Spelling(
        (I32, I32), lambda a, b, c: hl.i32((hl.i64(b >> 1) * hl.i64(a) + (hl.i64(1) << 30)) >> 31),
        "rounding_mul_shr", {"arm64": r"sqrdmulh", "hvx128": r"vmpyo\(v\d+\.w,v\d+\.h\):<<1:rnd:sat"}),
    "u8_rounding_const": Spelling((U8, U8), lambda a, b, c: hl.u8((hl.u16(a) * 77 + 128) >> 8),
                                  "rounding_mul_shr", {"arm64": r"uqrshrn|rshrn"}),
    # ---- saturating_add / saturating_sub ----
    "sat_add_signed_sum": Spelling((U8, U8), lambda a, b, c: hl.u8(hl.clamp(hl.i16(a) + hl.i16(b), 0, 255)),
                                   "saturating_add", {"x86-avx2": r"vpaddusb", "arm64": r"uqadd"}),
    "sat_add_u16_in_i32": Spelling((U16, U16), lambda a, b, c: hl.u16(hl.min(hl.i32(a) + hl.i32(b), 65535)),
                                   "saturating_add", {"x86-avx2": r"vpaddusw", "arm64": r"uqadd"}),
    "sat_add_i8_in_i32": Spelling((I8, I8), lambda a, b, c: hl.i8(hl.clamp(hl.i32(a) + hl.i32(b), -128, 127)),
                                  "saturating_add", {"x86-avx2": r"vpaddsb", "arm64": r"sqadd"}),
    "sat_add_i32_in_i64": Spelling(
        (I32, I32), lambda a, b, c: hl.i32(hl.clamp(hl.i64(a) + hl.i64(b), -2**31, 2**31 - 1)),
        "saturating_add", {"arm64": r"sqadd"}),
    "sat_add_const": Spelling((U8, U8), lambda a, b, c: hl.u8(hl.min(hl.u16(a) + 10, 255)),
                              "saturating_add", {"x86-avx2": r"vpaddusb", "arm64": r"uqadd"}),
    "sat_sub_reversed_const": Spelling((U8, U8), lambda a, b, c: hl.u8(hl.clamp(200 - hl.i16(a), 0, 255)),
                                       "saturating_sub", {"x86-avx2": r"vpsubusb", "arm64": r"uqsub"}),
    "sat_sub_i16_in_i32": Spelling(
        (I16, I16), lambda a, b, c: hl.i16(hl.clamp(hl.i32(a) - hl.i32(b), -32768, 32767)),
        "saturating_sub", {"x86-avx2": r"vpsubsw", "arm64": r"sqsub"}),
    "sat_sub_saturating_cast": Spelling((U8, U8), lambda a, b, c: hl.saturating_cast(U8, hl.i16(a) - hl.i16(b)),
                                        "saturating_sub", {"x86-avx2": r"vpsubusb", "arm64": r"uqsub"}),
    # ---- multiply-accumulate ----
    "mac_u8": Spelling((U8, U8), lambda a, b, c: (hl.u16(a) * 3 + hl.u16(b)) * 5,
                       "widening_mul", {"x86-avx2": r"vpmaddubsw", "arm64": r"umlal", "hvx128": r"vmpa"}),
    "mac_i8": Spelling((I8, I8), lambda a, b, c: (hl.i16(a) * 3 + hl.i16(b)) * 7, "widening_mul", {"arm64": r"smlal"}),
    "mac_shift": Spelling((U8, U8), lambda a, b, c: (hl.u16(a) * 3 + hl.u16(b)) << 2,
                          "widening_mul", {"arm64": r"umlal|umull"}),
    "mac_two_shifts": Spelling((U8, U8), lambda a, b, c: ((hl.u16(a) << 2) + (hl.u16(b) << 1)) * 7,
                               "widening_mul", {"arm64": r"umlal|umull"}),
    "mac_resigned": Spelling((U8, U8), lambda a, b, c: (hl.i16(a) * 3 + hl.i16(b)) * 5,
                             "widening_mul", {"arm64": r"umlal|umull"}),
    # ---- rounding shifts of widened narrow values; rounding averages ----
    "rshr_var_u8": Spelling(
        (U8, U8), lambda a, b, c: hl.u8((hl.u16(a) + ((hl.u16(1) << hl.min(hl.u16(b), 8)) >> 1)) >> hl.min(hl.u16(b), 8)),
        "rounding_shr", {"arm64": r"urshl"}),
    "rshr_var_i8_clamped": Spelling(
        (I8, I8), lambda a, b, c: (hl.i16(a) + (hl.i16(1) << (hl.clamp(hl.i16(b), 0, 8) - 1))) >> hl.clamp(hl.i16(b), 0, 8),
        "rounding_shr", {"arm64": r"srshl"}),
    # Halide's rounding_shift_left(x, n) written on the widened value (the left-shift twin), narrowed back
    "rshl_var_i16_clamped": Spelling(
        (I16, I8), lambda a, b, c: hl.i16((hl.i32(a) + ((hl.i32(1) >> hl.clamp(hl.i32(b), -16, 15)) >> 1))
                                          << hl.clamp(hl.i32(b), -16, 15)),
        "rounding_shl", {"x86-avx2": r"vpsravd", "arm64": r"srshl"}),
    "rshl_var_u8_clamped": Spelling(
        (U8, I8), lambda a, b, c: hl.u8((hl.u16(a) + ((hl.u16(1) >> hl.clamp(hl.i16(b), -8, 7)) >> 1))
                                        << hl.clamp(hl.i16(b), -8, 7)),
        "rounding_shl", {"x86-avx2": r"vpsrlvd", "arm64": r"urshl"}),
    "rshl_var_u16_folded": Spelling(
        (U16, I8), lambda a, b, c: hl.u16((hl.u32(a) + (hl.u32(1) >> (hl.clamp(hl.i32(b), -31, 15) + 1)))
                                          << hl.clamp(hl.i32(b), -31, 15)),
        "rounding_shl", {"x86-avx2": r"vpsrlvd", "arm64": r"urshl"}),
    # the rounding term's n + 1 of a widened narrow amount (lifted to widening_add / extending_add first),
    # unclamped (unsigned wide type) or clamped before the widening
    "rshl_var_u16_unclamped_folded": Spelling(
        (U16, I8), lambda a, b, c: hl.u16((hl.u32(a) + (hl.u32(1) >> (hl.i32(b) + 1))) << hl.i32(b)),
        "rounding_shl", {"x86-avx2": r"vpsrlvd", "arm64": r"urshl"}),
    "rshl_var_i8_clamped_narrow_folded": Spelling(
        (I8, I8), lambda a, b, c: hl.i8((hl.i16(a) + (hl.i16(1) >> (hl.i16(hl.clamp(b, -8, 7)) + 1)))
                                        << hl.i16(hl.clamp(b, -8, 7))),
        "rounding_shl", {"arm64": r"srshl"}),
    # a signed amount clamped to [0, bits] before the widening: Halide shifts right by the unsigned u16(...)
    "rshr_var_i8_clamped_narrow": Spelling(
        (I8, I8), lambda a, b, c: hl.i8((hl.i16(a) + (hl.i16(1) << (hl.i16(hl.clamp(b, 0, 8)) - 1)))
                                        >> hl.i16(hl.clamp(b, 0, 8))),
        "rounding_shr", {"arm64": r"srshl"}),
    "rshr_var_i16_clamped_wide_halved": Spelling(
        (I16, I8), lambda a, b, c: hl.i16((hl.i32(a) + ((hl.i32(1) << hl.clamp(hl.i32(b), 0, 16)) >> 1))
                                          >> hl.clamp(hl.i32(b), 0, 16)),
        "rounding_shr", {"arm64": r"srshl"}),
    # clamps with Python int bounds: hl.min/hl.max widen the amount, and so the whole sum, to 32 bits
    "rshr_var_i8_int_bounds": Spelling(
        (I8, I8), lambda a, b, c: hl.i8((hl.i16(a) + ((hl.i16(1) << hl.min(hl.max(hl.i16(b), 0), 8)) >> 1))
                                        >> hl.min(hl.max(hl.i16(b), 0), 8)),
        "rounding_shr", {"arm64": r"srshl"}),
    "rshl_var_u8_int_bounds": Spelling(
        (U8, I8), lambda a, b, c: hl.u8((hl.u16(a) + ((hl.u16(1) >> hl.min(hl.max(hl.i16(b), -8), 7)) >> 1))
                                        << hl.min(hl.max(hl.i16(b), -8), 7)),
        "rounding_shl", {"arm64": r"urshl"}),
    # an unclamped narrow amount in an unsigned sum, both shifts by unsigned amounts
    "rshr_var_u16_unsigned_amount": Spelling(
        (U16, I8), lambda a, b, c: hl.u16((hl.u32(a) + (hl.u32(1) << hl.u32(hl.i32(b) - 1))) >> hl.u32(b)),
        "rounding_shr", {"x86-avx2": r"vpunpcklwd", "arm64": r"urshl"}),
    "rshr_const_resigned": Spelling((U8, U8), lambda a, b, c: hl.u8((hl.i16(a) + 8) / 16), "rounding_shr",
                                    {"arm64": r"urshr|rshrn"}),
    "rhadd_one_first": Spelling((U8, U8), lambda a, b, c: hl.u8((1 + hl.u16(a) + hl.u16(b)) / 2),
                                "rounding_halving_add", {"x86-avx2": r"vpavgb", "arm64": r"urhadd"}),
    # ---- widen-right ops ----
    "acc_signed_of_u8": Spelling((I16, U8), lambda a, b, c: a + hl.i16(b), "extending_add",
                                 {"arm64": r"uaddw", "hvx128": r"\+= *vmpy"}),
    "acc_sub_signed_of_u8": Spelling((I16, U8), lambda a, b, c: a - hl.i16(b), "extending_sub",
                                     {"arm64": r"usubw"}),
    "acc_i32_of_u8": Spelling((I32, U8), lambda a, b, c: a + hl.i32(b), "extending_add", {"arm64": r"uaddw"}),
    "acc_i32_sub_i8": Spelling((I32, I8), lambda a, b, c: a - hl.i32(b), "extending_sub", {"arm64": r"ssubw"}),
    "acc_u32_of_two_u8": Spelling((U32, U8, U8), lambda a, b, c: a + hl.u32(b) + hl.u32(c), "widening_add",
                                  {"arm64": r"uaddl"}),
}

#: spellings also compiled for and run on AArch64 / Hexagon (qemu) in the default run
ARM_RUN = ("q15_bounded_truncating_rounding", "q15_const_truncating", "sat_add_signed_sum", "mac_u8",
           "acc_signed_of_u8", "acc_i32_of_u8", "high_half_resigned", "rshr_var_u8", "rshr_var_i8_clamped",
           "rshl_var_i16_clamped", "rshl_var_u8_clamped", "q31_bounded_truncating", "rshl_var_u16_unclamped_folded",
           "rshr_var_i8_clamped_narrow", "rshl_var_u8_int_bounds", "rshr_var_u16_unsigned_amount")
HVX_RUN = ("mac_u8", "acc_signed_of_u8", "q31_bounded_truncating", "q31_bounded_truncating_rounding",
           "rshl_var_u16_unclamped_folded", "rshr_var_i8_clamped_narrow")


def _build(name: str, sp: Spelling, lanes: int) -> tuple[hl.Func, list[Any]]:
    params = [hl.ImageParam(t, 1, p) for t, p in zip(sp.types, "abc")]
    f = hl.Func(name)
    vals = [p[x] for p in params] + [None] * (3 - len(params))
    f[x] = sp.body(*vals)
    f.vectorize(x, lanes)
    return f, params


def _inputs(sp: Spelling, seed: int) -> list[np.ndarray]:
    """Random full-range inputs with every pair of type extremes in the first lanes."""
    rng = np.random.default_rng(seed)
    out = []
    for i, t in enumerate(sp.types):
        dt = np.dtype(f"{'int' if t.is_int() else 'uint'}{t.bits()}")
        info = np.iinfo(dt)
        v = rng.integers(info.min, int(info.max) + 1, SIZE, dtype=dt)
        ext = np.array([info.min, info.max, 0, -1 if info.min < 0 else 1], dtype=dt)
        v[:16] = np.repeat(ext, 4) if i % 2 == 0 else np.tile(ext, 4)
        out.append(v)
    return out


def _halide(name: str, sp: Spelling, inputs: list[np.ndarray]) -> np.ndarray:
    f, params = _build(name, sp, 16)
    bufs = [hl.Buffer(v) for v in inputs]
    for p, b in zip(params, bufs):
        p.set(b)
    return np.asarray(f.realize([SIZE], X86)).copy()


def _compile(name: str, sp: Spelling, target: str) -> CompiledPipeline:
    f, params = _build(name, sp, LANES[target])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        return pitchfork.compile(f, params, target=target, name=name)


def _lifted_ops(prog: CompiledPipeline) -> set[str]:
    cap = prog.captured
    assert cap is not None
    cg = LoopNestCodegen(cap, cap.parse(), prog.target, "pitchfork", prog.name)
    cg.build()
    ops: set[str] = set()
    for node, sel in cg.selections:
        if isinstance(node, hir.Store):
            ops |= {t.op for t in _walk(sel.fpir)}
    return ops


def _walk(t: Term) -> list[Term]:
    return list(t.walk())


def _check(name: str, target: str) -> None:
    sp = SPELLINGS[name]
    prog = _compile(name, sp, target)
    assert sp.fpir in _lifted_ops(prog), f"{name}: {sp.fpir} not lifted"
    if target in sp.insn:
        loop = main_vector_loop(prog.assembly(), name, target=target)
        text = "\n".join(loop.instructions)
        assert re.search(sp.insn[target], text), f"{name} on {target}: no {sp.insn[target]} in\n{text}"
    inputs = _inputs(sp, 1)
    got = prog(*inputs, size=[SIZE])
    want = _halide(name, sp, inputs)
    assert got.dtype == want.dtype and np.array_equal(got, want), name


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_spelling_lifts_lowers_and_runs_x86(name: str) -> None:
    _check(name, "x86-avx2")


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64"), reason="no qemu-aarch64 toolchain")
@pytest.mark.parametrize("name", ARM_RUN)
def test_spelling_lifts_lowers_and_runs_arm64(name: str) -> None:
    _check(name, "arm64")


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon toolchain")
@pytest.mark.parametrize("name", HVX_RUN)
def test_spelling_lifts_lowers_and_runs_hvx(name: str) -> None:
    _check(name, "hvx128")


@pytest.mark.parametrize("name", sorted(n for n, s in SPELLINGS.items() if "arm64" in s.insn and n not in ARM_RUN))
def test_spelling_lowers_on_arm64(name: str) -> None:
    """The remaining spellings: compiled for AArch64 (no run) and checked for their instruction."""
    sp = SPELLINGS[name]
    prog = _compile(name, sp, "arm64")
    text = "\n".join(main_vector_loop(prog.assembly(), name, target="arm64").instructions)
    assert re.search(sp.insn["arm64"], text), f"{name}: no {sp.insn['arm64']} in\n{text}"


def test_truncating_q15_without_bounds_is_not_mul_shr() -> None:
    """i16((i32(a) * i32(b)) >> 15) wraps for -32768 * -32768: it must stay a truncation (and match Halide)."""
    name = "q15_truncating_unbounded"
    sp = Spelling((I16, I16), lambda a, b, c: hl.i16((hl.i32(a) * hl.i32(b)) >> 15), "widening_mul")
    prog = _compile(name, sp, "x86-avx2")
    assert not _lifted_ops(prog) & {"mul_shr", "rounding_mul_shr"}
    inputs = _inputs(sp, 3)
    assert inputs[0][0] == -32768 and inputs[1][0] == -32768  # the lane where the two differ
    assert np.array_equal(prog(*inputs, size=[SIZE]), _halide(name, sp, inputs))
