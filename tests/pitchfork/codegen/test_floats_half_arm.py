"""float16 math calls, `%` and `round` on arm-64-linux-arm_fp16 (pitchfork/codegen/floats_half.py):
bit-exact against Halide 21's own arm_fp16 library, both run under qemu-aarch64 by one C driver
(pitchfork/aot/abi_driver.py) on the same inputs. Halide computes sqrt, round and `%` on half there
(`fsqrt v.8h`, llvm.roundeven: round(-0.25) is -0.0, unlike its x86 code) and the other calls in
float32, so its x86 realize is no reference for them. The inputs are uint16 bit patterns the pipeline
maps into each call's domain (finite, no overflow: the fast-math flags make NaN and infinities
poison), so the driver's pseudo-random bytes are valid inputs; where Halide's code defines the result
on NaN, infinities, signed zeros and subnormals (the predicates, hl.strict_float, Neon's fmin / fmax) one
input in eight is such a value. `ours_and_halides` is the driver run, also used for float32 / float64
min / max on arm64 (Halide's Neon fmin / fmax: fmin(-0, +0) is -0) and bfloat16 on arm64."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.aot.abi_driver import Buf, Case, build_and_run, driver_source, parse_results
from pitchfork.backend.run import tools_available

pytestmark = pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")

x = hl.Var("x")
F16 = hl.Float(16)
TARGET = "arm-64-linux-arm_fp16"
W = 203  # a vector body and a tail
FLOAT16_CODE = 2 | 16 << 8 | 1 << 16  # halide_type_t of float16


def _masked(bits: hl.Expr, keep: int, set_: int = 0) -> hl.Expr:
    """The float16 whose bits are `bits & keep | set_` (keep drops the exponents of NaN / inf / huge)."""
    return hl.reinterpret(F16, (bits & keep) | set_)


def _scaled(bits: hl.Expr, shift: int, scale: float) -> hl.Expr:
    """float16(int16(bits) >> shift) * scale: evenly spread values in a small range."""
    return hl.cast(F16, hl.reinterpret(hl.Int(16), bits) >> shift) * hl.cast(F16, hl.f32(scale))


#: float16 bit patterns: signed zero, +inf, a quiet and a signalling NaN, the smallest and largest
#: subnormals, the smallest normal, 1.0 (each with either sign)
SPECIAL = (0x0000, 0x7C00, 0x7E00, 0x7D01, 0x0001, 0x03FF, 0x0400, 0x3C00)


def _special(bits: hl.Expr, finite: bool = False) -> hl.Expr:
    """The float16 of `bits`, one in eight of them (low three bits zero) replaced by a SPECIAL value of
    the sign of `bits` (`finite`: NaN and inf replaced by 2.0 and 0.5)."""
    table = [v if not finite or v & 0x7C00 != 0x7C00 else 0x4000 if v == 0x7C00 else 0x3800
             for v in SPECIAL]
    picked = (bits & 0x8000) | hl.mux((bits >> 3) & 7, [hl.u16(v) for v in table])
    return hl.reinterpret(F16, hl.select((bits & 7) == 0, picked, bits))


#: name -> the pipeline's value from the uint16 inputs a, c
CASES: dict[str, Callable[[hl.Expr, hl.Expr], hl.Expr]] = {
    "round": lambda a, c: hl.round(_masked(a, 0xF7FF)),  # |v| < 32768 (int16 in Halide's x86 lowering)
    "mod": lambda a, c: _masked(a, 0xDBFF) % _masked(c, 0x87FF, 0x3800),  # |a| < 256, 0.5 <= |c| < 2
    # (by a constant: a product with its reciprocal rounded to half, 1/7 -> 0.142822h, as Halide's)
    "mod_const": lambda a, c: _scaled(a, 4, 1 / 8) % hl.cast(F16, hl.f32(7.0)),  # [-256, 256)
    "sqrt": lambda a, c: hl.sqrt(_masked(a, 0x7BFF)),
    "exp": lambda a, c: hl.exp(_scaled(a, 4, 1 / 256)),  # [-8, 8)
    "log": lambda a, c: hl.log(_masked(a, 0x7BFF, 0x0400)),  # positive normals
    "sin_cos": lambda a, c: hl.sin(_scaled(a, 4, 1 / 64)) + hl.cos(_scaled(c, 4, 1 / 64)),
    "tan_atan2": lambda a, c: hl.tan(_scaled(a, 5, 1 / 1024)) + hl.atan2(_scaled(a, 4, 1 / 64),
                                                                           _masked(c, 0x87FF, 0x3800)),
    # CodeGen_LLVM's pow expansion in float32: bases in [-8, 8) with signed zeros, subnormals and +-1 among
    # them, exponents in half steps in [-8, 8) (integers odd and even, fractions: NaN for a negative base)
    "pow": lambda a, c: hl.pow(hl.select((a & 7) == 0, _special(a, finite=True), _scaled(a, 4, 1 / 256)),
                               _scaled(c, 11, 0.5)),
    # lerp on half with a float16 weight, in float32 with a float32 one
    "lerp": lambda a, c: hl.lerp(_masked(a, 0xDBFF), _masked(c, 0xDBFF), _masked(a ^ c, 0x3BFF)),
    "lerp_f32": lambda a, c: hl.lerp(_masked(a, 0xDBFF), _masked(c, 0xDBFF),
                                     hl.f32(_masked(a ^ c, 0x3FFF)) - 0.25),
    # in float64: (one - zero) * w + zero fused (Halide's fmadd d), then one conversion to float16
    "lerp_f64": lambda a, c: hl.lerp(_masked(a, 0xDBFF), _masked(c, 0xDBFF),
                                     hl.f64(_masked(a ^ c, 0x3BFF)) * hl.f64(0.999)),
    # results hl.strict_float and the predicates define on NaN, infinities, signed zeros, subnormals
    "predicates": lambda a, c: hl.select(hl.is_nan(_special(a)), _special(c),
                                         hl.select(hl.is_inf(_special(c)), _special(a),
                                                   hl.select(hl.is_finite(_special(a)), _special(c),
                                                             _masked(a, 0x3FFF)))),
    "strict_arith": lambda a, c: hl.strict_float(_special(a) * _special(c) + _special(a) / _special(c)
                                                 - _special(c)),
    "strict_min_max": lambda a, c: hl.strict_float(hl.min(_special(a), _special(c))
                                                   - hl.max(_special(c), _special(a))),  # Neon fmin / fmax
    "strict_compare": lambda a, c: hl.strict_float(hl.select(
        _special(a) < _special(c), _special(a),
        hl.select(_special(a) != _special(c), _special(c), _special(a) + _special(c)))),
}


def ours_and_halides(f: hl.Func, args: list, target: str, tmp_path: Path, out_code: int,
                     out_size: int, halide_target: str = "", stubs: str = "") -> tuple[bytes, bytes]:
    """`f` of uint16 ImageParams `args` compiled by PITCHFORK (object file) and by Halide 21
    (compile_to_static_library) for `target` (Halide's for `halide_target` when given: a Hexagon one
    runs on the bare-metal hvx128 harness, with `stubs` for what Halide's library needs there), both
    called by one C driver (qemu-aarch64 / qemu-hexagon) on the same pseudo-random W-element inputs:
    the output bytes of ours and of Halide's (output type `out_code`, a halide_type_t, of `out_size`
    bytes per element)."""
    halide_target = halide_target or target
    isa = "hvx128" if halide_target.startswith("hexagon") else "arm64"
    ours, theirs = f"{f.name()}_pf", f"{f.name()}_hl"
    prog = pitchfork.compile(f, args, target=target, name=ours, fallback=False)
    obj = prog.object_file(tmp_path / f"{ours}.o")
    f.compile_to_static_library(str(tmp_path / theirs), args, theirs, hl.Target(halide_target))
    u16 = Buf(((0, W, 1),), type="uint16", alloc=2 * W)
    case = Case(f.name(), (*[u16] * len(args), Buf(((0, W, 1),), type=out_code, alloc=out_size * W)))
    src = driver_source([case], [ours, theirs], [], freestanding=isa == "hvx128")
    out = build_and_run(isa, src + stubs, [obj, tmp_path / f"{theirs}.a"], tmp_path)
    (r_ours, r_theirs), = parse_results(out, [case], 2)
    assert r_ours.rc == 0 and r_theirs.rc == 0, (r_ours.message, r_theirs.message)
    assert r_ours.outputs[:-1] == r_theirs.outputs[:-1]  # the same inputs
    return r_ours.outputs[-1], r_theirs.outputs[-1]


def _assert_same_bits(got: bytes, want: bytes, dtype: type) -> None:
    g, w = np.frombuffer(got, dtype), np.frombuffer(want, dtype)
    assert np.array_equal(g, w), [(int(i), hex(g[i]), hex(w[i])) for i in np.flatnonzero(g != w)[:8]]
    assert len(set(g.tolist())) > W // 4  # the inputs were varied


@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("name", list(CASES))
def test_float16_calls_bit_exact_with_halides_arm_fp16_library(name: str, lanes: int, tmp_path: Path) -> None:
    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    f = hl.Func(f"f16_arm_{name}_{lanes}")
    f[x] = CASES[name](a[x], c[x])
    if lanes > 1:
        f.vectorize(x, lanes)
    _assert_same_bits(*ours_and_halides(f, [a, c], TARGET, tmp_path, FLOAT16_CODE, 2), np.uint16)


def test_arm_fp16_round_gives_negative_zero() -> None:
    """llvm.roundeven on half (Halide's arm_fp16 module): round(-0.25) is -0.0 there (x86: +0.0)."""
    b = hl.ImageParam(F16, 1, "b")
    f = hl.Func("f16_arm_round_zero")
    f[x] = hl.round(b[x])
    f.vectorize(x, 8)
    prog = pitchfork.compile(f, [b], target=TARGET, name="f16_arm_round_zero", fallback=False)
    vals = np.array([-0.25, -0.5, 0.25, -1.5, -2.5, 2.5, 0.5, 1.5] * 2, np.float16)
    got = prog(vals, size=[16])
    assert np.array_equal(got.view(np.uint16), np.round(vals).view(np.uint16))
    assert got.view(np.uint16)[0] == 0x8000


def test_arm_fp16_float16_scalar_parameter_and_float64_conversion() -> None:
    """A float16 Param (its bits in the i32 slot) and float64 -> float16 (LLVM's fptrunc: one fcvt on
    AArch64, no helper call): against numpy's single correctly rounded conversion and Halide's x86 realize
    of the same pipeline with the Param's value in its place (Halide's Python binding cannot set a float16
    Param; a product and a difference are rounded once on both ISAs)."""
    b, d, s = hl.ImageParam(F16, 1, "b"), hl.ImageParam(hl.Float(64), 1, "d"), hl.Param(F16, "s")
    f = hl.Func("f16_arm_param")
    f[x] = hl.select(b[x] > s, b[x] * s, b[x] - s)
    f.vectorize(x, 8)
    prog = pitchfork.compile(f, [b, s], target=TARGET, name="f16_arm_param", fallback=False)
    rng = np.random.default_rng(21)
    bv = (rng.standard_normal(W) * 30).astype(np.float16)
    got = prog(bv, 0.1, size=[W])
    k = hl.reinterpret(F16, hl.u16(int(np.array(0.1, np.float16).view(np.uint16))))
    g = hl.Func("f16_arm_param_ref")
    g[x] = hl.select(b[x] > k, b[x] * k, b[x] - k)
    g.vectorize(x, 8)
    b.set(hl.Buffer(bv))
    assert np.array_equal(got.view(np.uint16), np.asarray(g.realize([W])).view(np.uint16))
    conv = hl.Func("f16_arm_from_f64")
    conv[x] = hl.cast(F16, d[x])
    conv.vectorize(x, 8)
    edges = [1 + 2.0 ** -11 + 2.0 ** -40, 65519.0, 2.0 ** -24 * 0.75]  # above a tie; the largest; a subnormal
    dv = np.concatenate([rng.standard_normal(W - 3) * 1000, edges])
    got = pitchfork.compile(conv, [d], target=TARGET, name="f16_arm_from_f64", fallback=False)(dv, size=[W])
    assert np.array_equal(got.view(np.uint16), dv.astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("lanes", [1, 8])
def test_float16_on_an_arm_fp16_strict_float_target(lanes: int, tmp_path: Path) -> None:
    """arm-64-linux-arm_fp16-strict_float: no fast-math flags anywhere, so NaN, infinities and signed zeros
    are valid inputs of pow (its NaN stays NaN here: fptrunc, not x86's bit-level conversion), `%`, sqrt
    and min (Neon's fmin)."""
    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    f = hl.Func(f"f16_arm_strict_target_{lanes}")
    va, vc = _special(a[x]), _special(c[x])
    part = (a[x] >> 4) & 3  # one operation per element (two NaNs meeting in a sum: either may survive)
    f[x] = hl.select(part == 0, hl.pow(va, vc), part == 1, va % vc, part == 2, hl.sqrt(va), hl.min(va, vc))
    if lanes > 1:
        f.vectorize(x, lanes)
    _assert_same_bits(*ours_and_halides(f, [a, c], TARGET + "-strict_float", tmp_path, FLOAT16_CODE, 2),
                      np.uint16)


def test_float16_lerp_with_an_integer_weight_is_refused_on_arm_fp16() -> None:
    """Halide's module computes (one - zero) * (u * 1/255) + zero on half, and its LLVM backend fuses it
    as (u * k) * d + zero or u * (k * d) + zero depending on the surrounding code (a loaded weight: the
    first; u8(a ^ c): the second; our LLVM 22 gives the second in both), so no one form is Halide's:
    refused at compile time, naming it (x86 computes it in float32: compiled, test_floats_half_math.py;
    arm64 without arm_fp16 and hvx128: test_floats_half_emulated.py)."""
    b, u = hl.ImageParam(F16, 1, "b"), hl.ImageParam(hl.UInt(8), 1, "u")
    f = hl.Func("f16_arm_lerp_u8")
    f[x] = hl.lerp(b[x], b[x] * hl.cast(F16, 2.0), u[x])
    f.vectorize(x, 8)
    with pytest.warns(PitchforkFallbackWarning,
                      match="lerp of float16 values with a uint8 weight on arm_fp16"):
        prog = pitchfork.compile(f, [b, u], target=TARGET, name="f16_arm_lerp_u8")
    assert prog.is_fallback
