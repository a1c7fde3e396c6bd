"""Float code (pitchfork/codegen/floats.py, float_math.py) against Halide 21's own realize, on the three
ISAs: vector and scalar float32/float64 arithmetic, comparisons and selects, conversions, rounding,
Halide's exp/log/lerp expansions; bit-exact under strict_float; mixed int/float pipelines keep their
integer part selected; what a target cannot call is refused at compile time."""

from __future__ import annotations

import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.backend.run import tools_available

ISAS = [pytest.param(t, marks=pytest.mark.skipif(not tools_available(t), reason=f"no toolchain for {t}"))
        for t in ("x86-avx2", "arm64", "hvx128")]
#: the same, hvx128 in the extended set only (LLVM's Hexagon backend scalarises float vectors: the
#: exp/log polynomials of test_vector_float_ops take it minutes; the strict test covers hvx128 in CI)
ISAS_HVX_EXTENDED = [*ISAS[:2], pytest.param("hvx128", marks=[*ISAS[2].marks, pytest.mark.extended])]


def _halide(out: hl.Func, args: list, values: list, size: list[int]) -> np.ndarray:
    for a, v in zip(args, values):
        a.set(hl.Buffer(v) if isinstance(a, hl.ImageParam) else v)
    return np.asarray(out.realize(size))


def _compile(out: hl.Func, args: list, target: str) -> pitchfork.CompiledPipeline:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        return pitchfork.compile(out, args, target=target, name=out.name(), fallback=False)


def _float_ops(target: str) -> tuple[hl.Func, list]:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Float(32), 2, "input")
    pix = hl.ImageParam(hl.UInt(8), 2, "pix")
    w = hl.Param(hl.Float(32), "w")
    v, p = inp[x, y], hl.f32(pix[x, y])
    terms = [
        v * w - p / (v + 2.0),
        hl.select(v > 0.25, hl.floor(v * 7.0), hl.ceil(v * -3.0)),
        hl.round(v * 10.0) + hl.trunc(v * -10.0) + hl.abs(v - 0.5),
        hl.max(hl.min(v, 0.6), 0.2) + hl.clamp(p, 10.0, 200.0) * 0.01,
        hl.exp(v * 2.0) + hl.log(v + 0.5),
        hl.lerp(v, p, w),
        hl.f32(hl.i32(v * 100.0) % 7) + hl.f32(p > v * 255.0),
        (v * 3.0) % 1.0,
    ]
    if target != "hvx128":  # the Hexagon harness has no sqrt (test_hvx_missing_functions_refused)
        terms.append(hl.sqrt(v + p))
    out = hl.Func("float_ops")
    out[x, y] = sum(terms[1:], terms[0])
    out.vectorize(x, 8)
    return out, [inp, pix, w]


@pytest.mark.parametrize("target", ISAS_HVX_EXTENDED)
def test_vector_float_ops_match_halide(target: str) -> None:
    out, args = _float_ops(target)
    prog = _compile(out, args, target)
    rng = np.random.default_rng(3)
    values = [rng.random((5, 64), dtype=np.float32), rng.integers(0, 256, (5, 64), dtype=np.uint8), 0.375]
    ours = prog(*values)
    ref = _halide(out, args, values, [64, 5])
    # Halide's fast-math flags (reassoc, contract): LLVM may sum the nine terms (each up to ~40) in
    # another order, or fuse a*b+c, in one compiler and not in the other: a few ulps of the terms
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", ISAS)
def test_strict_float_is_bit_exact(target: str) -> None:
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "input")
    v = inp[x]
    out = hl.Func("strict_ops")
    out[x] = hl.strict_float(v * 1.7 + v * v - hl.f32(0.3) / (v + 1.0) + hl.min(v, 0.5) * 3.0
                             + hl.floor(v * 9.0))
    out.vectorize(x, 8)
    prog = _compile(out, [inp], target)
    a = np.random.default_rng(4).standard_normal(67).astype(np.float32)
    ref = _halide(out, [inp], [a], [67])
    assert np.array_equal(prog(a).view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("target", ISAS)
def test_scalar_and_float64(target: str) -> None:
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(64), 1, "input")
    out = hl.Func("f64_ops")
    out[x] = hl.f32(inp[x] * 0.1 + hl.f64(x)) + hl.f32(hl.floor(inp[x]))  # scalar loop (not vectorized)
    a = np.random.default_rng(5).standard_normal(19) * 100
    if target == "hvx128":
        # Hexagon has no double-precision hardware: LLVM calls soft-float routines the bare-metal
        # harness lacks, so the pipeline is refused at compile time, naming them (link_check.py)
        with pytest.warns(PitchforkFallbackWarning, match="__hexagon_fast_muldf3"):
            assert pitchfork.compile(out, [inp], target=target).is_fallback
        return
    prog = _compile(out, [inp], target)
    np.testing.assert_allclose(prog(a), _halide(out, [inp], [a], [19]), rtol=1e-6)


#: math calls Halide's runtime leaves to libm (posix_math.ll), float32 vectors and float64 scalars
_LIBM_CASES = [
    ("tan", 32, lambda v: hl.tan(v)), ("asinh", 32, lambda v: hl.asinh(v)), ("acosh", 32, lambda v: hl.acosh(v + 1)),
    ("atanh", 32, lambda v: hl.atanh(v * 0.5)), ("atan2", 32, lambda v: hl.atan2(v, v - 0.5)),
    ("exp", 64, lambda v: hl.exp(v)), ("log", 64, lambda v: hl.log(v + 1)), ("pow", 64, lambda v: hl.pow(v + 0.5, v * 3)),
    ("sin", 64, lambda v: hl.sin(v)), ("tan", 64, lambda v: hl.tan(v)), ("atanh", 64, lambda v: hl.atanh(v * 0.5)),
]


@pytest.mark.parametrize("target", ISAS[:2])
def test_libm_calls_float32_and_float64(target: str) -> None:
    """The C library calls of Halide's runtime (tanf, asinhf, ..., and every float64 one: exp, log,
    pow as LLVM's intrinsics, tan, atanh, ... as libm), linked on arm64 as on x86: exact against
    Halide's realize on x86 (the same libm), within an ulp or two on arm64 (glibc's aarch64 libm)."""
    x = hl.Var("x")
    rng = np.random.default_rng(9)
    for name, bits, fn in _LIBM_CASES:
        inp = hl.ImageParam(hl.Float(bits), 1, "input")
        out = hl.Func(f"libm_{name}_{bits}")
        out[x] = fn(inp[x])
        if bits == 32:
            out.vectorize(x, 8)
        v = (rng.random(40) * 0.9).astype(np.float32 if bits == 32 else np.float64)
        want = _halide(out, [inp], [v], [40])
        got = _compile(out, [inp], target)(v)
        if target == "x86-avx2":
            assert np.array_equal(got, want), name
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6 if bits == 32 else 1e-14, err_msg=name)


def test_sqrt_is_correctly_rounded_as_halides() -> None:
    """sqrt_f32 is Halide's runtime function inlined: llvm.sqrt without fast-math flags (vsqrtps), not
    the reciprocal estimate and Newton step that `afn` allows: bit-exact with Halide."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "input")
    out = hl.Func("sqrt_f32_exact")
    out[x] = hl.sqrt(inp[x])
    out.vectorize(x, 8)
    v = np.random.default_rng(10).random(64, dtype=np.float32) * 100
    prog = _compile(out, [inp], "x86-avx2")
    assert "vsqrtps" in prog.assembly() and "vrsqrtps" not in prog.assembly()
    assert np.array_equal(prog(v), _halide(out, [inp], [v], [64]))


def _estimate_pipeline(lanes: int, sqrt: bool) -> tuple[hl.Func, hl.ImageParam, np.ndarray]:
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "input")
    out = hl.Func(f"fast_inverse{'_sqrt' if sqrt else ''}_{lanes}")
    out[x] = (hl.fast_inverse_sqrt if sqrt else hl.fast_inverse)(inp[x])
    if lanes > 1:
        out.vectorize(x, lanes)
    return out, inp, (np.random.default_rng(lanes).random(40, dtype=np.float32) * 10 + 0.1)


@pytest.mark.parametrize("lanes", [1, 5, 8, 16])
def test_fast_inverse_x86_is_halides_estimate(lanes: int) -> None:
    """x86: the rcpps / rsqrtps estimate alone, as Halide's runtime (x86.ll): bit-exact with Halide's
    realize on this machine (the estimate tables are the CPU's), for scalars and any lane count."""
    for sqrt in (False, True):
        out, inp, v = _estimate_pipeline(lanes, sqrt)
        prog = _compile(out, [inp], "x86-avx2")
        assert ("rsqrt" if sqrt else "rcp") in prog.assembly()
        assert np.array_equal(prog(v), _halide(out, [inp], [v], [40]))


_NEON_ESTIMATES = r"""
#include <arm_neon.h>
#include <stdio.h>
int main(void) {  /* Halide's aarch64.ll fast_inverse_f32x4 / fast_inverse_sqrt_f32x4, on stdin's floats */
    float in[4], out[8];
    while (fread(in, sizeof in, 1, stdin) == 1) {
        float32x4_t x = vld1q_f32(in), a = vrecpeq_f32(x), r = vrsqrteq_f32(x);
        vst1q_f32(out, vmulq_f32(a, vrecpsq_f32(a, x)));
        vst1q_f32(out + 4, vmulq_f32(r, vrsqrtsq_f32(vmulq_f32(r, r), x)));
        fwrite(out, sizeof out, 1, stdout);
    }
    return 0;
}
"""


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("lanes", [1, 5, 8])
def test_fast_inverse_arm64_is_the_neon_estimate_and_one_step(lanes: int, tmp_path) -> None:  # noqa: ANN001
    """arm64: frecpe + frecps + fmul and frsqrte + frsqrts as Halide's runtime (aarch64.ll), checked
    bit for bit against the same formula written with Neon intrinsics in C and run under qemu."""
    import subprocess

    from pitchfork.backend.run import check_tools

    tools = check_tools("arm64")
    assert tools is not None
    src, exe = tmp_path / "estimates.c", tmp_path / "estimates"
    src.write_text(_NEON_ESTIMATES)
    subprocess.run([*tools.cc, str(src), "-o", str(exe)], check=True)
    for sqrt in (False, True):
        out, inp, v = _estimate_pipeline(lanes, sqrt)
        ref = np.frombuffer(subprocess.run([*tools.run, str(exe)], input=v.tobytes(), capture_output=True,
                                           check=True).stdout, np.float32).reshape(-1, 2, 4)[:, int(sqrt)].ravel()
        prog = _compile(out, [inp], "arm64")
        assert ("frsqrts" if sqrt else "frecps") in prog.assembly()
        assert np.array_equal(prog(v), ref)


def test_mixed_int_float_keeps_integer_selection() -> None:
    """A float weight applied to u8 pixels, then quantised: the integer parts around it (absd of
    u8, the saturating add of the quantised values) are still lifted and lowered."""
    x = hl.Var("x")
    a, b = hl.ImageParam(hl.UInt(8), 1, "a"), hl.ImageParam(hl.UInt(8), 1, "b")
    w = hl.Param(hl.Float(32), "w")
    out = hl.Func("weighted")
    q = hl.u8(hl.clamp(hl.f32(hl.absd(a[x], b[x])) * w + 0.5, 0.0, 255.0))
    out[x] = hl.saturating_add(q, hl.absd(a[x], b[x]))
    out.vectorize(x, 32)
    prog = _compile(out, [a, b, w], "x86-avx2")
    assert prog.stats.rules_fired, "no rule fired on the integer part"
    rng = np.random.default_rng(6)
    va, vb = (rng.integers(0, 256, 96, dtype=np.uint8) for _ in range(2))
    assert np.array_equal(prog(va, vb, 0.7), _halide(out, [a, b, w], [va, vb, 0.7], [96]))


@pytest.mark.parametrize("call,name", [(hl.sin, "sin_f32"), (hl.sqrt, "__hexagon_sqrtf"),
                                       (hl.fast_inverse, "fast_inverse_f32")])
def test_hvx_missing_functions_refused(call, name: str) -> None:  # noqa: ANN001
    """What the bare-metal Hexagon harness cannot call falls back at compile time, named."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "input")
    out = hl.Func("needs_libm")
    out[x] = call(inp[x])
    out.vectorize(x, 8)
    with pytest.warns(PitchforkFallbackWarning, match=name):
        prog = pitchfork.compile(out, [inp], target="hvx128")
    assert prog.is_fallback and name in prog.fallback_reason


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("divisor", [7.0, 0.3, 0.5, None])
def test_float_mod_by_a_constant_is_halides(bits: int, lanes: int, divisor: float | None) -> None:
    """`x % 7.0f`: Halide's code generator simplifies x - 7*floor(x/7) and its simplifier turns the
    division by the constant into a product with float32(1/7), so -154 % 7 is 7 there (the product is
    -22.000002): ours too (FloatOps.mod); a variable divisor (None) divides."""
    x = hl.Var("x")
    t = hl.Float(bits)
    b, c = hl.ImageParam(t, 1, "b"), hl.ImageParam(t, 1, "c")
    out = hl.Func(f"mod_const_f{bits}_{lanes}_{str(divisor).replace('.', '_')}")
    out[x] = b[x] % (c[x] if divisor is None else hl.cast(t, hl.f64(divisor)))
    if lanes > 1:
        out.vectorize(x, lanes)
    dt = np.float32 if bits == 32 else np.float64
    bv = (np.arange(-2048, 2048) * 0.5).astype(dt)
    cv = np.random.default_rng(3).uniform(0.5, 9.0, bv.size).astype(dt)
    want = _halide(out, [b, c], [bv, cv], [bv.size])
    got = _compile(out, [b, c], "x86-avx2")(bv, cv, size=[bv.size])
    assert np.array_equal(got, want)
