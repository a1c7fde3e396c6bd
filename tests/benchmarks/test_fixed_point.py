"""The SPEC 1.4 fixed-point helpers: Halide builders vs their numpy transcriptions (benchmarks.fixed_point),
run through Halide's own JIT, plus the SPEC's sanity values."""

from __future__ import annotations

from typing import Callable

import halide as hl
import numpy as np
import pytest

from benchmarks import fixed_point as fp
from benchmarks.common import HALIDE_TARGETS


def _run(build: Callable[[hl.Expr], hl.Expr], values: np.ndarray, t: hl.Type) -> np.ndarray:
    inp = hl.ImageParam(t, 1, "inp")
    x = hl.Var("x")
    f = hl.Func("f")
    f[x] = build(inp[x])
    arr = np.ascontiguousarray(values)
    buf = hl.Buffer(arr)
    inp.set(buf)
    out = f.realize([len(arr)], hl.Target(HALIDE_TARGETS["x86-avx2"]))
    return np.asarray(out).astype(np.int64)


ALL_I16 = np.arange(-32768, 32768, dtype=np.int16)
RNG_I32 = np.concatenate([np.arange(0, 4096), np.random.default_rng(1).integers(0, 2**31 - 1, 65536),
                          [2**31 - 1, 2**30, 2**16, 65535]]).astype(np.int32)


def test_multiply_2x_high_i16() -> None:
    b = np.int16(-32768)
    got = _run(lambda e: fp.multiply_2x_high(e, hl.i16(-32768)), ALL_I16, hl.Int(16))
    assert np.array_equal(got, fp.np_mh(ALL_I16, b, "i16"))
    got = _run(lambda e: fp.multiply_2x_high(e, e), ALL_I16, hl.Int(16))
    assert np.array_equal(got, fp.np_mh(ALL_I16, ALL_I16, "i16"))


def test_floor_log2_and_log2() -> None:
    got = _run(lambda e: hl.i32(fp.floor_log2(e)), RNG_I32, hl.Int(32))
    assert np.array_equal(got, fp.np_floor_log2(RNG_I32, "i32"))
    for q in (14, 15, 8):
        got = _run(lambda e: fp.approx_log2(q, e, 0), RNG_I32, hl.Int(32))
        assert np.array_equal(got, fp.np_approx_log2(q, RNG_I32, 0)), q


@pytest.mark.parametrize("t", ["i16", "i32"])
def test_reciprocals(t: str) -> None:
    x = RNG_I32[RNG_I32 > 0]
    got = _run(lambda e: hl.i32(fp.approx_reciprocal_sqrt(15, e, t)), x, hl.Int(32))
    assert np.array_equal(got, fp.np_approx_reciprocal_sqrt(15, x, t))
    big = x[x >= 32767]  # softmax's S >= 32767 keeps the i16 reciprocal in its domain
    got = _run(lambda e: hl.i32(fp.approx_reciprocal(30, e, t)), big, hl.Int(32))
    assert np.array_equal(got, fp.np_approx_reciprocal(30, big, t))


def test_exp2_i16_runtime_shift() -> None:
    d = ALL_I16[ALL_I16 <= 0]
    for shift in (4, 8):
        got = _run(lambda e: fp.approx_exp2(15, e, hl.u16(shift), "i16"), d, hl.Int(16))
        want = fp.np_approx_exp2(15, d, shift, "i16", "i16")
        n = d >> shift  # the SPEC's domain: 15 + n > -32
        ok = 15 + n > -32
        assert np.array_equal(got[ok], want[ok]), shift


def test_sanity_values() -> None:
    xs = np.array([1, 2, 4, 100, 1000, 65536, 10**6])
    assert list(fp.np_approx_reciprocal_sqrt(15, xs)) == [32765, 23168, 16382, 3276, 1036, 128, 33]
    assert list(fp.np_approx_reciprocal(30, np.array([1, 2, 4, 100]) * 32768, "i16")) == [32761, 16381, 8190, 328]
