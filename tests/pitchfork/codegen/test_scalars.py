"""Scalar expressions of a loop nest (pitchfork/codegen/scalars.py), compiled and run against Halide's
realize: bitwise and/or/xor on scalars (llvmlite names them and_, or_ and xor; `xor_` did not exist, so
every scalar xor, e.g. Halide's random_uint hash, ended in an AttributeError)."""

from __future__ import annotations

import halide as hl
import numpy as np

import pitchfork


def test_scalar_bitwise_ops_and_random_uint_match_halide() -> None:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    f = hl.Func("scalar_bits")
    f[x, y] = hl.u8(((x ^ y) | (x & 3)) ^ hl.i32(hl.random_uint(5) % 11)) + inp[x, y]  # not vectorized: scalar
    prog = pitchfork.compile(f, [inp], target="x86-avx2", name="scalar_bits")
    assert not prog.is_fallback, prog.fallback_reason
    img = np.random.default_rng(4).integers(0, 256, (9, 13), dtype=np.uint8)
    inp.set(hl.Buffer(img))
    want = np.asarray(f.realize([13, 9]))
    assert np.array_equal(prog(img), want)
