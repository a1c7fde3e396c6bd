"""float16 and bfloat16 vectors on hvx128 (Halide 21 emulates their scalars there and refuses vectors of
them itself: "Unsupported HVX type") compile, lane by lane as Halide's scalar emulation, with no fallback:
half floats inside the pipeline (uint16 bit patterns in and out) and a half-float argument. Which targets
compile float16 / bfloat16 at all (`half_refusal`, `bfloat_refusal`). Bit-exact against Halide's own
Hexagon library: tests/pitchfork/codegen/test_floats_half_emulated.py; native float16:
test_floats_half.py; bfloat16: test_floats_bfloat.py."""

from __future__ import annotations

import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.frontend.checks import bfloat_refusal, half_refusal
from pitchfork.targets.target_strings import parse_target

x = hl.Var("x")

@pytest.mark.parametrize("t", [hl.Float(16), hl.BFloat(16)], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("through_f32", [False, True])
def test_half_float_vectors_compile_on_hvx128(t: hl.Type, through_f32: bool) -> None:
    """The half floats are inside the pipeline (its input and output are uint16 bit patterns)."""
    a = hl.ImageParam(hl.UInt(16), 1, "a")
    name = f"half_{'b' if t.is_bfloat() else ''}f16_{int(through_f32)}_hvx128"
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
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        prog = pitchfork.compile(f, [a], target="hvx128", name=name, fallback=False)
    assert np.array_equal(prog(bits, size=[64]), want)


def test_half_float_argument_compiles_on_hvx128() -> None:
    a = hl.ImageParam(hl.BFloat(16), 1, "a")
    f = hl.Func("half_arg")
    f[x] = hl.f32(a[x]) * 2.0
    f.vectorize(x, 8)
    prog = pitchfork.compile(f, [a], target="hvx128", name="half_arg", fallback=False)
    assert not prog.is_fallback


@pytest.mark.parametrize("target, compiled", [
    ("x86-avx2", True),  # the short name's LLVM CPU (haswell) has f16c
    ("x86-64-linux-avx2-fma-f16c", True),
    ("x86-64-linux-avx2-fma", True),  # Halide's CPU for avx2 (haswell) has f16c either way
    ("arm-64-linux-arm_fp16", True),
    ("arm64", True),  # Halide's emulation (floats_half_emulated.py)
    ("hvx128", True),  # scalars and vectors (lane by lane)
])
def test_half_refusal_per_target(target: str, compiled: bool) -> None:
    assert (half_refusal(parse_target(target)) == "") == compiled
    assert bfloat_refusal(parse_target(target)) == ""
