"""bfloat16 vectors on hvx128 (Halide 21 emulates their scalars there, which PITCHFORK compiles, and
refuses vectors of them itself: "Unsupported HVX type"; PITCHFORK refuses every width) fall back to
Halide's compiler at compile time with a one-line reason naming the type and the target. float16 vectors
on hvx128 are compiled lane by lane as Halide's scalar emulation (test_floats_half_emulated.py). Where
float16 is compiled: tests/pitchfork/codegen/test_floats_half.py (native), test_floats_half_emulated.py
(arm64 without arm_fp16, hvx128); bfloat16: tests/pitchfork/codegen/test_floats_bfloat.py."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.frontend.checks import bfloat_refusal, half_refusal
from pitchfork.targets.target_strings import parse_target

x = hl.Var("x")

CASES = [
    pytest.param(hl.BFloat(16), "hvx128",
                 r"bfloat16 values in bfloat16x8 vectors on hexagon-32-noos-hvx-hvx_128-hvx_v66 \(PITCHFORK "
                 r"compiles Halide's bfloat16 emulation there for scalars only; Halide 21 refuses HVX-width "
                 r"bfloat16 vectors itself: Unsupported HVX type\)", id="bfloat16-hvx128"),
]


@pytest.mark.parametrize("t, target, reason", CASES)
@pytest.mark.parametrize("through_f32", [False, True])
def test_half_float_pipeline_falls_back_naming_the_type(t: hl.Type, target: str, reason: str,
                                                        through_f32: bool) -> None:
    """The half floats are inside the pipeline (its input and output are uint16 bit patterns), so the
    check must find them in the statement, not in the argument types."""
    a = hl.ImageParam(hl.UInt(16), 1, "a")
    name = f"half_{'b' if t.is_bfloat() else ''}f16_{int(through_f32)}_{target.replace('-', '_')}"
    f = hl.Func(name)
    h = hl.reinterpret(t, a[x])
    if through_f32:  # half-float input, float32 arithmetic and output
        f[x] = hl.f32(h) * 2.0 + 0.25
    else:
        # (an exact product: the x86 realize may fuse an inexact one with the add, Halide's HVX code not)
        f[x] = hl.reinterpret(hl.UInt(16), h * hl.cast(t, 2.0) + hl.cast(t, 0.25))
    f.vectorize(x, 8)
    bits = np.random.default_rng(2).integers(0x3000, 0x4400, 64, dtype=np.uint16)  # finite, moderate
    a.set(hl.Buffer(bits))
    want = np.asarray(f.realize([64]))
    with pytest.warns(PitchforkFallbackWarning, match=reason + r" \(statement line \d+\)"):
        prog = pitchfork.compile(f, [a], target=target, name=name)
    assert prog.is_fallback
    assert np.array_equal(prog(bits, size=[64]), want)


def test_half_float_argument_is_named() -> None:
    a = hl.ImageParam(hl.BFloat(16), 1, "a")
    f = hl.Func("half_arg")
    f[x] = hl.f32(a[x]) * 2.0
    f.vectorize(x, 8)
    with pytest.warns(PitchforkFallbackWarning, match="bfloat16 values in bfloat16x8 vectors"):
        prog = pitchfork.compile(f, [a], target="hvx128", name="half_arg")
    assert prog.is_fallback


@pytest.mark.parametrize("target, compiled", [
    ("x86-avx2", True),  # the short name's LLVM CPU (haswell) has f16c
    ("x86-64-linux-avx2-fma-f16c", True),
    ("x86-64-linux-avx2-fma", True),  # Halide's CPU for avx2 (haswell) has f16c either way
    ("arm-64-linux-arm_fp16", True),
    ("arm64", True),  # Halide's emulation (floats_half_emulated.py)
    ("hvx128", True),  # float16 scalars and vectors; bfloat16 vectors refused by the float emitter (CASES)
])
def test_half_refusal_per_target(target: str, compiled: bool) -> None:
    assert (half_refusal(parse_target(target)) == "") == compiled
    assert bfloat_refusal(parse_target(target)) == ""
