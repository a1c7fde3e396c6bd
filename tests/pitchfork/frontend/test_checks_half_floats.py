"""float16 and bfloat16 pipelines fall back to Halide's compiler at compile time with a one-line reason
naming the type (pitchfork.frontend.checks.refuse_half_floats), and give Halide's answer; before, a
bfloat16 pipeline was refused as a type error of its `h` literals."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning

x = hl.Var("x")


@pytest.mark.parametrize("t", [hl.Float(16), hl.BFloat(16)])
@pytest.mark.parametrize("through_f32", [False, True])
def test_half_float_pipeline_falls_back_naming_the_type(t: hl.Type, through_f32: bool) -> None:
    """The half floats are inside the pipeline (its input and output are uint16 bit patterns), so the
    check must find them in the statement, not in the argument types."""
    a = hl.ImageParam(hl.UInt(16), 1, "a")
    name = f"half_{'b' if t.is_bfloat() else ''}f16_{int(through_f32)}"
    f = hl.Func(name)
    h = hl.reinterpret(t, a[x])
    if through_f32:  # half-float input, float32 arithmetic and output
        f[x] = hl.f32(h) * 2.0 + 0.25
    else:
        f[x] = hl.reinterpret(hl.UInt(16), h * hl.cast(t, 1.5) + hl.cast(t, 0.25))
    f.vectorize(x, 8)
    bits = np.random.default_rng(2).integers(0x3000, 0x4400, 64, dtype=np.uint16)  # finite, moderate
    a.set(hl.Buffer(bits))
    want = np.asarray(f.realize([64]))
    what = "bfloat16" if t.is_bfloat() else "float16"
    with pytest.warns(PitchforkFallbackWarning,
                      match=what + r" values .*PITCHFORK compiles float32 and float64\) \(statement line \d+\)"):
        prog = pitchfork.compile(f, [a], target="x86-avx2", name=name)
    assert prog.is_fallback
    assert np.array_equal(prog(bits, size=[64]), want)


def test_half_float_argument_is_named() -> None:
    a = hl.ImageParam(hl.Float(16), 1, "a")
    f = hl.Func("half_arg")
    f[x] = hl.f32(a[x]) * 2.0
    with pytest.warns(PitchforkFallbackWarning, match="float16 values"):
        prog = pitchfork.compile(f, [a], target="x86-avx2", name="half_arg")
    assert prog.is_fallback
    vals = np.linspace(-4, 4, 32).astype(np.float16)
    assert np.array_equal(prog(vals, size=[32]), vals.astype(np.float32) * 2)
