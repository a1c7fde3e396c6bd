"""float16 code (pitchfork/codegen/floats.py) where Halide 21 computes float16 natively as LLVM `half`
(x86 with f16c, arm64 with arm_fp16): bit-exact against Halide's realize for arithmetic, u8 -> f16 -> u8
conversions, min / max / select and comparisons, a mixed float32 / float16 pipeline, float16 -> int16 /
float64 conversions and floor / ceil / trunc / abs; arm64 uses the fp16 instructions themselves; a*b + c
is unfused on x86 (bit-exact against the realize) and fused on arm_fp16 as in Halide's own arm assembly;
what is not compiled for float16 (a literal with no unique float16 value) is refused at compile
time by name (saturating_cast to float16: test_floats_saturating.py). Math calls, `%`, round, scalar
parameters, float64 -> float16: test_floats_half_math.py
and test_floats_half_arm.py. The fallbacks for the other targets:
tests/pitchfork/frontend/test_checks_half_floats.py."""

from __future__ import annotations

import re
import warnings
from typing import Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.backend.run import tools_available

x = hl.Var("x")
F16 = hl.Float(16)
N = 203  # a vector body of 16 lanes and a tail

TARGETS = [
    "x86-avx2",
    "x86-64-linux-avx2-fma-f16c",
    pytest.param("arm-64-linux-arm_fp16",
                 marks=pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")),
]


def _h(v: float) -> hl.Expr:
    return hl.cast(F16, hl.f32(v))


def _conv() -> tuple[hl.Func, list, list]:
    """u8 -> f16, arithmetic, f16 -> u8 (every u8 value)."""
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    f = hl.Func("f16_conv")
    f[x] = hl.cast(hl.UInt(8), hl.cast(F16, a[x]) * _h(0.75) + _h(3.0))
    return f, [a], [np.arange(N + 1).astype(np.uint8)]


def _min_max_select() -> tuple[hl.Func, list, list]:
    """Loads, stores, comparisons, select, min, max, subtraction, a multiplication by a rounded
    constant (1/3, printed 0.333252h)."""
    b = hl.ImageParam(F16, 1, "b")
    f = hl.Func("f16_mms")
    f[x] = hl.select(b[x] > _h(1.0), hl.min(b[x], b[x + 1]),
                     hl.max(b[x] - b[x + 1], _h(-2.0)) * hl.cast(F16, hl.f32(1.0) / 3))
    vals = (np.random.default_rng(4).standard_normal(N + 1) * 3).astype(np.float16)
    return f, [b], [vals]


def _mixed() -> tuple[hl.Func, list, list]:
    """float32 -> f16 (rounding), f16 division, f16 -> float32, float32 arithmetic."""
    c = hl.ImageParam(hl.Float(32), 1, "c")
    f = hl.Func("f16_mixed")
    f[x] = hl.f32(hl.cast(F16, c[x]) / _h(3.0)) + c[x] * 0.5
    vals = (np.random.default_rng(5).standard_normal(N) * 100).astype(np.float32)
    return f, [c], [vals]


def _rounding() -> tuple[hl.Func, list, list]:
    """floor / ceil / trunc / abs of float16 (halves and other fractions, negatives; -0.0 results)."""
    d = hl.ImageParam(F16, 1, "d")
    f = hl.Func("f16_rounding")
    v = d[x]
    f[x] = hl.select(x % 3 == 0, hl.floor(v), x % 3 == 1, hl.ceil(v), hl.trunc(v)) * _h(2.0) + hl.abs(v)
    vals = np.concatenate([np.arange(-8, 8, 0.25), np.random.default_rng(8).standard_normal(N) * 20])
    return f, [d], [vals.astype(np.float16)]


def _to_int() -> tuple[hl.Func, list, list]:
    """f16 -> int16 (truncation) and f16 -> float64 -> int16."""
    d = hl.ImageParam(F16, 1, "d")
    f = hl.Func("f16_to_int")
    f[x] = hl.cast(hl.Int(16), d[x] * _h(7.0)) + hl.cast(hl.Int(16), hl.f64(d[x]) * 2.0)
    vals = (np.random.default_rng(6).standard_normal(N) * 50).astype(np.float16)
    return f, [d], [vals]


def _compile(f: hl.Func, args: list, target: str) -> pitchfork.CompiledPipeline:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        name = f"{f.name()}_{re.sub(r'[^a-z0-9]', '_', target)}"
        return pitchfork.compile(f, args, target=target, name=name, fallback=False)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lanes", [1, 16])
@pytest.mark.parametrize("make", [_conv, _min_max_select, _mixed, _rounding, _to_int],
                         ids=lambda m: m.__name__[1:])
def test_float16_pipelines_bit_exact(target: str, lanes: int,
                                     make: Callable[[], tuple[hl.Func, list, list]]) -> None:
    f, args, vals = make()
    if lanes > 1:
        f.vectorize(x, lanes)
    prog = _compile(f, args, target)
    for a, v in zip(args, vals):
        a.set(hl.Buffer(v))
    want = np.asarray(f.realize([N]))  # Halide's JIT on this machine (x86, native half with f16c)
    got = prog(*vals, size=[N])
    assert got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))  # bits: -0.0 and NaNs too


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ty", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"])
def test_integer_float16_round_trip_bit_exact(target: str, ty: str) -> None:
    """int -> float16 -> int of every integer type (uint64: no hl.Buffer for it in Python): Halide's x86
    module goes through float32 and back, exact for these values, so the same as the direct
    sitofp / fptosi emitted here; and no conversion becomes a helper call the JIT lacks."""
    dt = np.dtype(ty)
    code = hl.TypeCode.UInt if dt.kind == "u" else hl.TypeCode.Int
    a = hl.ImageParam(hl.Type(code, dt.itemsize * 8, 1), 1, "a")
    f = hl.Func(f"f16_round_trip_{ty}")
    f[x] = hl.cast(a.type(), hl.cast(F16, a[x]) * _h(0.5))
    f.vectorize(x, 8)
    prog = _compile(f, [a], target)
    assert not re.search(r"\b(?:call|bl)\w*\s+__\w*hf", prog.assembly())
    info = np.iinfo(dt)
    vals = np.random.default_rng(7).integers(max(info.min, -65504), min(info.max, 65504), N, dtype=dt)
    a.set(hl.Buffer(vals))
    assert np.array_equal(prog(vals, size=[N]), np.asarray(f.realize([N])))


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
def test_arm_fp16_computes_in_half_precision_registers() -> None:
    """arm_fp16: the half arithmetic is the fp16 instructions (`fmul v.8h`), as Halide's module's `half`
    operations become, not a widening to float32."""
    f, args, _ = _min_max_select()
    f.vectorize(x, 16)
    asm = _compile(f, args, "arm-64-linux-arm_fp16").assembly()
    assert re.search(r"\bfmul\s+v\d+\.8h", asm)
    assert re.search(r"\bfcmgt\s+v\d+\.8h", asm)


def test_tiny_float16_constants_compile_bit_exact() -> None:
    """float16 constants that six decimals could not tell apart (3e-5: 17 float16 values printed as
    0.000030h; a subnormal) are read exactly from the capture log and compiled (before session 26 they
    were refused)."""
    b = hl.ImageParam(F16, 1, "b")
    f = hl.Func("f16_tiny")
    f[x] = (b[x] + _h(3e-5)) * _h(1e-7) + b[x] * _h(0.1)
    f.vectorize(x, 8)
    prog = _compile(f, [b], "x86-avx2")
    vals = np.linspace(-4, 4, 32).astype(np.float16)
    b.set(hl.Buffer(vals))
    want = np.asarray(f.realize([32], target=hl.Target(prog.halide_target)))
    assert np.array_equal(prog(vals, size=[32]).view(np.uint16), want.view(np.uint16))


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
def test_arm_fp16_fuses_multiply_add_as_halides_module(tmp_path) -> None:  # noqa: ANN001
    """a*b + c with an inexact product: Halide's `contract` flags let LLVM fuse it on arm_fp16 (Halide's
    own assembly has `fmla v.8h`), so its value is the single rounding of the exact a*b + c, not the x86
    realize's (unfused: the test pipelines above avoid an inexact product under an add). Ours: the same
    fmla and, run under qemu, the single rounding of the exact value (numpy, in float64: exact here)."""
    a, b, c = (hl.ImageParam(F16, 1, n) for n in "abc")
    f = hl.Func("f16_fma")
    f[x] = a[x] * b[x] + c[x]
    f.vectorize(x, 16)
    halide_s = tmp_path / "f16_fma.s"
    f.compile_to_assembly(str(halide_s), [a, b, c], "f16_fma", hl.Target("arm-64-linux-arm_fp16"))
    assert re.search(r"\bfmla\s+v\d+\.8h", halide_s.read_text())
    prog = _compile(f, [a, b, c], "arm-64-linux-arm_fp16")
    assert re.search(r"\bfmla\s+v\d+\.8h", prog.assembly())
    rng = np.random.default_rng(9)
    vals = [(rng.standard_normal(1024) * 10).astype(np.float16) for _ in range(3)]
    fused = (vals[0].astype(np.float64) * vals[1] + vals[2]).astype(np.float16)
    assert not np.array_equal(fused, vals[0] * vals[1] + vals[2])  # the two roundings differ on this data
    assert np.array_equal(prog(*vals, size=[1024]).view(np.uint16), fused.view(np.uint16))


@pytest.mark.parametrize("target", ["x86-avx2", "x86-64-linux-avx2-fma-f16c"])
@pytest.mark.parametrize("lanes", [1, 16])
def test_x86_multiply_add_is_halides(target: str, lanes: int) -> None:
    """a*b + c with an inexact product on x86: LLVM computes half through float (f16c conversions) and
    rounds each operation, as Halide's realize does for the same target: bit-exact. (Realized for our
    target, not the host's: on a host with avx512_fp16 Halide computes half natively and fuses a*b + c.)"""
    a, b, c = (hl.ImageParam(F16, 1, n) for n in "abc")
    f = hl.Func("f16_mul_add")
    f[x] = a[x] * b[x] + c[x]
    if lanes > 1:
        f.vectorize(x, lanes)
    prog = _compile(f, [a, b, c], target)
    rng = np.random.default_rng(9)
    vals = [(rng.standard_normal(1024) * 10).astype(np.float16) for _ in range(3)]
    for p, v in zip((a, b, c), vals):
        p.set(hl.Buffer(v))
    want = np.asarray(f.realize([1024], target=hl.Target(prog.halide_target)))
    assert np.array_equal(prog(*vals, size=[1024]).view(np.uint16), want.view(np.uint16))
