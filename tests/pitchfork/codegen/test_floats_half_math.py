"""float16 math calls (pow too), `%`, `round`, is_nan / is_inf / is_finite, hl.strict_float's strict_*
operations, scalar float16 parameters and x86 target strings without f16c (pitchfork/codegen/floats_half.py),
bit-exact against Halide's realize on this machine (x86: Halide computes math calls in float32 and converts
back with its own bit-level code, which makes a NaN an infinity; `round` with its own lowering, whose
round(-0.25) is +0.0). NaN, infinities, signed zeros and subnormals are inputs wherever Halide's code
defines the result (no fast-math flag on the instruction that meets them: conversions, sqrt, rounding, the
predicates, strict ops, everything on a strict_float target); elsewhere the flags make them poison, so
those inputs stay finite. float64 -> float16 on x86 is rounded once, without the compiler-rt helper LLVM would
call, and what stays refused names itself. arm_fp16, where Halide computes some of these on
half: test_floats_half_arm.py."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.targets.target_strings import parse_target
from tests.pitchfork.codegen.test_floats_half import _compile  # no fallback, a name per target

x = hl.Var("x")
F16 = hl.Float(16)
N = 203  # a vector body and a tail
X86 = ["x86-avx2", "x86-64-linux-avx2-fma"]  # the second without f16c: Halide's haswell has it anyway


def _h(v: float) -> hl.Expr:
    return hl.cast(F16, hl.f32(v))


def _values(lo: float, hi: float, seed: int) -> np.ndarray:
    """N float16 values in [lo, hi]: random, plus every tie k + 0.5 and the quarter steps near zero."""
    ties = np.arange(-20.5, 21, 1.0)
    quarters = np.arange(-2, 2.01, 0.25)
    rnd = np.random.default_rng(seed).uniform(lo, hi, N)
    v = np.concatenate([ties, quarters, rnd])[:N]
    return np.clip(v, lo, hi).astype(np.float16)


#: (name, expression of b (and c), b's range, c's range): ranges inside each call's domain (the fast-math
#: flags make NaN and infinities poison) and below 32768 (round's int16)
CALLS: list[tuple[str, Callable[[hl.Expr, hl.Expr], hl.Expr], tuple[float, float], tuple[float, float]]] = [
    ("round", lambda b, c: hl.round(b), (-3000.0, 3000.0), (1.0, 2.0)),
    ("mod", lambda b, c: b % c, (-300.0, 300.0), (0.25, 7.0)),
    # (by a constant Halide multiplies by its reciprocal, in float32 here: -154 % 7 is 7)
    ("mod_const", lambda b, c: b % _h(7.0) + b % _h(0.3), (-300.0, 300.0), (1.0, 2.0)),
    ("sqrt", lambda b, c: hl.sqrt(b), (0.0, 60000.0), (1.0, 2.0)),
    ("exp", lambda b, c: hl.exp(b), (-9.0, 10.0), (1.0, 2.0)),
    ("log", lambda b, c: hl.log(b), (0.001, 60000.0), (1.0, 2.0)),
    ("sin_cos", lambda b, c: hl.sin(b) + hl.cos(c), (-20.0, 20.0), (-20.0, 20.0)),
    ("tan_atan2", lambda b, c: hl.tan(b) * _h(0.125) + hl.atan2(b, c), (-1.5, 1.5), (0.5, 3.0)),
    # CodeGen_LLVM's pow expansion in float32: a negative base to a non-integer power is NaN there, which
    # Halide's x86 conversion makes +inf; to an integer power its sign by parity; 0^y is 0, x^0 is 1
    ("pow", lambda b, c: hl.pow(b, c), (-8.0, 8.0), (-6.0, 6.0)),
    ("pow_int", lambda b, c: hl.pow(b, hl.round(c)) + hl.pow(c, b), (-4.0, 4.0), (-7.0, 7.0)),
    # lerp: the float32 lerp of the widened values, rounded once (an integer weight scaled in float32)
    ("lerp", lambda b, c: hl.lerp(b, c, c * _h(1 / 16)), (-300.0, 300.0), (0.0, 16.0)),
    ("lerp_u8", lambda b, c: hl.lerp(b, c, hl.u8(c * _h(16))), (-300.0, 300.0), (0.0, 15.9)),
    ("lerp_f32", lambda b, c: hl.lerp(b, c, hl.f32(c) * 0.0625), (-300.0, 300.0), (0.0, 16.0)),
]

#: float16 bit patterns: NaNs (quiet, signalling, both signs), infinities, signed zeros, the smallest and
#: largest subnormals and normals, ties of rounding (0.5, 2.5, -1.5) and 65504
SPECIAL = np.array([0x7E00, 0xFE00, 0x7D01, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF,
                    0x0400, 0x3800, 0x4100, 0xBE00, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x4000], np.uint16)

#: (name, expression of b and c) whose results Halide's x86 code defines on every input above
DEFINED: list[tuple[str, Callable[[hl.Expr, hl.Expr], hl.Expr]]] = [
    ("sqrt", lambda b, c: hl.sqrt(b)),  # Halide's sqrt_f32 has no flags: sqrt(-1) is NaN, so -inf here
    ("floor_ceil_trunc", lambda b, c: hl.select(_low_bit(c), hl.floor(b), hl.select(_low_bit(b), hl.ceil(b),
                                                                                   hl.trunc(b)))),
    ("abs", lambda b, c: hl.abs(b)),
    ("is_nan", lambda b, c: hl.select(hl.is_nan(b), c, b)),
    ("is_inf", lambda b, c: hl.select(hl.is_inf(b), c, b)),
    ("is_finite", lambda b, c: hl.select(hl.is_finite(b), b, c)),
    ("strict_arith", lambda b, c: hl.strict_float(b * c + b / c - c)),
    ("strict_min_max", lambda b, c: hl.strict_float(hl.min(b, c) - hl.max(c, b))),
    ("strict_compare", lambda b, c: hl.strict_float(hl.select((b < c) | (b == c) & (b >= c), b,
                                                              hl.select(b != c, c, b + c)))),
]


def _low_bit(v: hl.Expr) -> hl.Expr:
    """Whether the float16 `v`'s lowest bit is set (an integer condition: a float comparison would
    carry the fast-math flags, which make NaN operands poison)."""
    return (hl.reinterpret(hl.UInt(16), v) & 1) == 1


def _special_pairs() -> tuple[np.ndarray, np.ndarray]:
    """Every pair of SPECIAL values (b, c), then random bit patterns (NaN payloads, subnormals ...)."""
    rnd = np.random.default_rng(17).integers(0, 1 << 16, 200, dtype=np.uint16)
    b = np.concatenate([np.repeat(SPECIAL, len(SPECIAL)), rnd])
    c = np.concatenate([np.tile(SPECIAL, len(SPECIAL)), rnd[::-1]])
    return b.view(np.float16), c.view(np.float16)


@pytest.mark.parametrize("target", X86)
@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("name, expr", DEFINED, ids=[d[0] for d in DEFINED])
def test_float16_special_values_bit_exact_on_x86(target: str, lanes: int, name: str,
                                                 expr: Callable[[hl.Expr, hl.Expr], hl.Expr]) -> None:
    b, c = hl.ImageParam(F16, 1, "b"), hl.ImageParam(F16, 1, "c")
    f = hl.Func(f"f16_special_{name}_{lanes}")
    f[x] = expr(b[x], c[x])
    if lanes > 1:
        f.vectorize(x, lanes)
    bv, cv = _special_pairs()
    b.set(hl.Buffer(bv))
    c.set(hl.Buffer(cv))
    want = np.asarray(f.realize([len(bv)], hl.Target(parse_target(target).halide)))
    got = _compile(f, [b, c], target)(bv, cv, size=[len(bv)])
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("lanes", [1, 8])
def test_float16_on_a_strict_float_target(lanes: int) -> None:
    """strict_float: no fast-math flags anywhere, so every input has a defined result, pow's too (its NaN
    for a negative base to a fraction becomes +inf, a NaN input an infinity of its sign)."""
    target = "x86-64-linux-avx2-fma-f16c-strict_float"
    b, c = hl.ImageParam(F16, 1, "b"), hl.ImageParam(F16, 1, "c")
    f = hl.Func(f"f16_strict_target_{lanes}")
    bv, cv = _special_pairs()
    n = len(bv)
    part = x / n  # every pair through each part (an integer choice: no sum of two NaNs, whose sign is
    f[x] = hl.select(part == 0, hl.pow(b[x], c[x]),  # whichever operand the instruction keeps)
                     hl.select(part == 1, b[x] % c[x], hl.sqrt(b[x]) + hl.min(b[x], c[x])))
    if lanes > 1:
        f.vectorize(x, lanes)
    bv, cv = np.tile(bv, 3), np.tile(cv, 3)
    b.set(hl.Buffer(bv))
    c.set(hl.Buffer(cv))
    want = np.asarray(f.realize([len(bv)], hl.Target(target)))
    got = _compile(f, [b, c], target)(bv, cv, size=[len(bv)])
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    assert np.isinf(got).any() and np.isnan(got).any()  # the specials reached the output


@pytest.mark.parametrize("target", X86)
@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("name, expr, brange, crange", CALLS, ids=[c[0] for c in CALLS])
def test_float16_calls_bit_exact_on_x86(target: str, lanes: int, name: str,
                                        expr: Callable[[hl.Expr, hl.Expr], hl.Expr],
                                        brange: tuple[float, float], crange: tuple[float, float]) -> None:
    b, c = hl.ImageParam(F16, 1, "b"), hl.ImageParam(F16, 1, "c")
    f = hl.Func(f"f16_{name}_{lanes}")
    f[x] = expr(b[x], c[x])
    if lanes > 1:
        f.vectorize(x, lanes)
    prog = _compile(f, [b, c], target)
    bv, cv = _values(*brange, seed=11), _values(*crange, seed=12)
    b.set(hl.Buffer(bv))
    c.set(hl.Buffer(cv))
    want = np.asarray(f.realize([N], hl.Target(parse_target(target).halide)))
    got = prog(bv, cv, size=[N])
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))  # bits: -0.0 too


def test_x86_round_keeps_halides_signed_zeros() -> None:
    """Halide's round of float16 on x86 gives +0.0 for -0.25 and -0.5 (llvm.roundeven: -0.0): ours too."""
    b = hl.ImageParam(F16, 1, "b")
    f = hl.Func("f16_round_zeros")
    f[x] = hl.round(b[x])
    f.vectorize(x, 8)
    vals = np.array([-0.25, -0.5, -0.0, 0.25, -1.5, -2.5, 2.5, 0.5] * 2, np.float16)
    got = _compile(f, [b], "x86-avx2")(vals, size=[16])
    want = np.array([0, 0, 0, 0, 0xC000, 0xC000, 0x4000, 0] * 2, np.uint16)  # +0.0 for -0.25, -0.5, -0.0
    assert np.array_equal(got.view(np.uint16), want)


@pytest.mark.parametrize("target", X86)
def test_float16_scalar_parameter(target: str) -> None:
    """A scalar float16 Param, passed as its bits: the value rounded to float16 from the Python float
    (to nearest even, from the double). Halide's Python binding cannot set a float16 Param
    ("Unsupported type in Param::set<float16>"), so the reference is Halide's realize of the same
    pipeline with that float16 value in place of the Param."""
    b, s = hl.ImageParam(F16, 1, "b"), hl.Param(F16, "s")
    f = hl.Func("f16_param")
    f[x] = hl.select(b[x] > s, b[x] * s, b[x] - s)
    f.vectorize(x, 8)
    prog = _compile(f, [b, s], target)
    bv = _values(-100.0, 100.0, seed=13)
    b.set(hl.Buffer(bv))
    for value, bits in ((0.1, 0x2E66), (-3.0, 0xC200), (1.0 + 2.0 ** -11 + 2.0 ** -40, 0x3C01)):
        # (the last is just above a tie: up from the double, down if rounded through float32 first)
        k = hl.reinterpret(F16, hl.u16(bits))
        g = hl.Func("f16_param_ref")
        g[x] = hl.select(b[x] > k, b[x] * k, b[x] - k)  # (b*k + k would be simplified to (b + 1)*k)
        g.vectorize(x, 8)
        want = np.asarray(g.realize([N], hl.Target(parse_target(target).halide)))
        assert np.array_equal(prog(bv, value, size=[N]).view(np.uint16), want.view(np.uint16))


def test_x86_float64_to_float16_calls_no_helper() -> None:
    """float64 -> float16 on x86: rounded once as LLVM's __truncdfhf2 does (floats_half.narrow_double_to_half),
    with no call to that helper, which nothing in this process defines (Halide's own JIT fails to link it;
    against Halide's object linked with libgcc's: test_floats_saturating.py). Here: the product's float64
    rounded once (numpy): values near float16 rounding ties, overflow to infinity, float16 subnormals."""
    d = hl.ImageParam(hl.Float(64), 1, "d")
    f = hl.Func("f16_from_f64")
    f[x] = hl.cast(F16, d[x] * 3.0)
    f.vectorize(x, 8)
    prog = _compile(f, [d], "x86-avx2")
    assert "__truncdfhf2" not in prog.assembly()
    ties = (np.arange(-300, 300) + 0.5) * 2.0 ** -10 / 3  # (1 + k/1024 + 1/2048 between float16 values) / 3
    vals = np.concatenate([ties, np.nextafter(ties, 0), np.nextafter(ties, 1), [21839.9, 21841.0, 2.0 ** -26]])
    got = prog(vals, size=[len(vals)]).view(np.uint16)
    with np.errstate(over="ignore"):
        assert np.array_equal(got, (vals * 3.0).astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("lanes", [1, 8])
def test_x86_float16_lerp_with_a_float64_weight_is_halides_object(lanes: int, tmp_path: Path) -> None:
    """lerp of float16 values with a float64 weight on x86: in float64 ((one - zero) * w + zero, fused:
    Halide's vfmadd), rounded once to float16. Against Halide 21's own x86 library (its fptrunc calls
    __truncdfhf2, which Halide's JIT cannot link: gcc links libgcc's), one C driver on the same inputs."""
    from tests.pitchfork.codegen.test_floats_saturating import x86_float16_against_halides_object

    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    f = hl.Func(f"f16_lerp_f64_{lanes}")
    m = 0xDBFF  # finite, |v| < 256

    def h(bits: hl.Expr, keep: int) -> hl.Expr:
        return hl.reinterpret(F16, bits & keep)

    f[x] = hl.lerp(h(a[x], m), h(c[x], m), hl.f64(h(a[x] ^ c[x], 0x3BFF)) * hl.f64(0.999) + hl.f64(c[x]) * hl.f64(1e-9))
    if lanes > 1:
        f.vectorize(x, lanes)
    n = 2048
    got = x86_float16_against_halides_object(f, [a, c], n, tmp_path)[1]
    assert len(set(got.tolist())) > n // 2
