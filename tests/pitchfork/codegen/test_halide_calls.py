"""`lerp` and `mux` (pitchfork/codegen/halide_calls.py): compiled, never a fallback, and equal to
Halide's realize on every value and weight type Halide allows for them, on x86 (JIT) and under qemu
on arm64 and hvx128; the two forms of the integer lerp's rounding divide agree on every value."""

from __future__ import annotations

import warnings
from typing import Any

import halide as hl
import numpy as np
import pytest
import z3

import pitchfork
from pitchfork.backend.run import tools_available

N = 256
x = hl.Var("x")

_HL = {"u8": hl.UInt(8), "i8": hl.Int(8), "u16": hl.UInt(16), "i16": hl.Int(16), "u32": hl.UInt(32),
       "i32": hl.Int(32), "f32": hl.Float(32)}
_NP = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32,
       "f32": np.float32}


def _values(t: str, rng: np.random.Generator) -> np.ndarray:
    """Random values with each type's edges (min, max, 0, 1, -1) at the front."""
    if t == "f32":
        v = rng.random(N, dtype=np.float32)
        v[:3] = (0.0, 1.0, 0.5)
        return v
    info = np.iinfo(_NP[t])
    v = rng.integers(info.min, info.max, N, endpoint=True, dtype=_NP[t])
    edges = [info.min, info.max, 0, 1, info.max - 1] + ([-1] if info.min < 0 else [])
    v[:len(edges)] = edges
    return v


def _run(out: hl.Func, params: list, values: list[np.ndarray], target: str, *, exact: bool = True) -> Any:
    for p, v in zip(params, values):
        p.set(hl.Buffer(v))
    want = np.asarray(out.realize([N]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(out, params, target=target, fallback=False)
    got = prog(*values, size=[N], check=True)
    if exact:
        assert got.dtype == want.dtype and np.array_equal(got, want), (got[:8], want[:8])
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return prog


def _lerp(vt: str, wt: str, lanes: int) -> tuple[hl.Func, list]:
    zero, one, w = hl.ImageParam(_HL[vt], 1, "zero"), hl.ImageParam(_HL[vt], 1, "one"), hl.ImageParam(_HL[wt], 1, "w")
    out = hl.Func(f"lerp_{vt}_{wt}")
    out[x] = hl.lerp(zero[x], one[x], w[x])
    if lanes > 1:
        out.vectorize(x, lanes)
    return out, [zero, one, w]


# Every integer value type with a weight of its own width, a narrower and a wider one, and a float
# weight (Halide rescales integer weights by factors 2^k + 1 and scales float weights by 2^bits - 1).
LERP_CASES = [("u8", "u8"), ("u8", "u16"), ("u8", "u32"), ("u8", "f32"), ("i8", "u8"), ("i8", "u16"),
              ("u16", "u8"), ("u16", "u16"), ("u16", "f32"), ("i16", "u16"), ("i16", "u8"),
              ("u32", "u32"), ("u32", "u8"), ("u32", "f32"), ("i32", "u16")]


@pytest.mark.parametrize("vt,wt", LERP_CASES)
def test_integer_lerp_matches_halide_on_x86(vt: str, wt: str) -> None:
    rng = np.random.default_rng(hash((vt, wt)) % 2**32)
    out, params = _lerp(vt, wt, 256 // int(vt[1:]) // 2 if vt != "u32" else 8)
    _run(out, params, [_values(vt, rng), _values(vt, rng), _values(wt, rng)], "x86-avx2")


def test_scalar_lerp_and_float_values_with_an_integer_weight_on_x86() -> None:
    rng = np.random.default_rng(7)
    out, params = _lerp("i16", "u8", 1)  # not vectorized: the scalar path
    _run(out, params, [_values("i16", rng), _values("i16", rng), _values("u8", rng)], "x86-avx2")
    out, params = _lerp("f32", "u8", 8)  # float values, u8 weight: w / 255 in float
    _run(out, params, [_values("f32", rng), _values("f32", rng), _values("u8", rng)], "x86-avx2", exact=False)


def _mux(vt: str, lanes: int) -> tuple[hl.Func, list]:
    a, sel = hl.ImageParam(_HL[vt], 1, "a"), hl.ImageParam(hl.Int(8), 1, "sel")
    out = hl.Func(f"mux_{vt}")
    # the index runs from -2 to 5 over three values: out of range takes the last value
    out[x] = hl.mux(hl.i32(sel[x]) % 8 - 2, [a[x] * 2, a[x] // 3, hl.max(a[x], a[x] * 3)])
    out.vectorize(x, lanes)
    return out, [a, sel]


@pytest.mark.parametrize("vt", ["u8", "i32", "f32"])
def test_mux_matches_halide_on_x86(vt: str) -> None:
    rng = np.random.default_rng(3)
    out, params = _mux(vt, 16)
    _run(out, params, [_values(vt, rng), _values("i8", rng)], "x86-avx2", exact=vt != "f32")


def test_mux_with_a_scalar_index() -> None:
    a, k = hl.ImageParam(hl.UInt(16), 1, "a"), hl.Param(hl.Int(32), "k")
    out = hl.Func("mux_scalar")
    out[x] = hl.mux(k, [a[x], a[x] + 1, a[x] >> 2])
    out.vectorize(x, 16)
    rng = np.random.default_rng(5)
    v = _values("u16", rng)
    a.set(hl.Buffer(v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(out, [a, k], target="x86-avx2", fallback=False)
    for kv in (-1, 0, 1, 2, 3):
        k.set(kv)
        want = np.asarray(out.realize([N]))
        assert np.array_equal(prog(v, kv, size=[N], check=True), want), kv


@pytest.mark.parametrize("target", ["arm64", "hvx128"])
def test_lerp_and_mux_under_qemu(target: str) -> None:
    if not tools_available(target):
        pytest.skip(f"no emulator/toolchain for {target}")
    rng = np.random.default_rng(11)
    lanes = 128 if target == "hvx128" else 16
    out, params = _lerp("u8", "u8", lanes)
    prog = _run(out, params, [_values("u8", rng), _values("u8", rng), _values("u8", rng)], target)
    if target == "arm64":  # selected as Halide selects it: widening multiplies, rounding narrowing
        asm = prog.assembly()
        assert "umull" in asm and "raddhn" in asm, asm
    out, params = _lerp("i16", "u16", lanes // 2)
    _run(out, params, [_values("i16", rng), _values("i16", rng), _values("u16", rng)], target)
    out, params = _mux("u8", lanes)
    _run(out, params, [_values("u8", rng), _values("i8", rng)], target)


def test_the_two_rounding_divides_agree() -> None:
    """(p + (2^b - 1) / 2) / (2^b - 1) == rshr(rshr(p, b) + p, b) for every p <= (2^b - 1)^2: the x86
    and the other targets' expansion of an integer lerp compute the same value. Exhaustive at 8 bits,
    Z3 at 16; at 32 bits Z3 needs minutes, and each target follows Halide's own form for it anyway."""
    m = 255
    p = np.arange(m * m + 1, dtype=np.int64)
    rshr = lambda v, s: (v + (1 << (s - 1))) >> s  # noqa: E731
    assert np.array_equal((p + m // 2) // m, rshr(rshr(p, 8) + p, 8))
    bits = 16
    m = (1 << bits) - 1
    q = z3.BitVec("p", 2 * bits + 1)  # room for the sums
    r = lambda v, s: z3.LShR(v + (1 << (s - 1)), s)  # noqa: E731
    solver = z3.Solver()
    solver.add(z3.ULE(q, m * m), z3.UDiv(q + m // 2, m) != r(r(q, bits) + q, bits))
    assert solver.check() == z3.unsat
