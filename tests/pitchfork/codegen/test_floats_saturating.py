"""`saturating_cast` to a float type (pitchfork/codegen/halide_calls.py lower_float_saturating_cast): Halide
21 clamps to [-inf, +inf] (its Type::min / max of every float type) around the cast, so the values are the
cast's; bit-exact against Halide's realize on x86 (float32 / float64 / int32 -> float16, bfloat16, float32
and float16 -> float64) and against Halide's own arm64 library under qemu (Neon fmin / fmax with the
infinities, as Halide's module). Inputs: every float32 exponent (out of float16's range, its subnormals,
ties of rounding), NaN, infinities and signed zeros."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

x = hl.Var("x")

#: float32 bit patterns: NaNs (quiet, signalling, negative), infinities, signed zeros, the float32
#: subnormals, float16's largest value and the tie above it (65520 rounds to inf), just below that tie,
#: float16's smallest subnormal, its half (a tie to 0), float16 ties (1 + 2^-11), bfloat16 ties, FLT_MAX
SPECIAL32 = np.array([0x7FC00000, 0x7FA00001, 0xFFC00000, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000,
                      0x00000001, 0x807FFFFF, 0x477FE000, 0x477FF000, 0xC77FF000, 0x477FEFFF, 0x33800000,
                      0x33000000, 0xB3000001, 0x3F801000, 0x3F803000, 0x3F808000, 0x3F818000, 0x7F7FFFFF,
                      0x38800000, 0x387FC000], np.uint32)


def _f32_values(n: int, seed: int) -> np.ndarray:
    """SPECIAL32 then random bit patterns of every exponent (NaNs and infinities among them)."""
    rnd = np.random.default_rng(seed).integers(0, 1 << 32, n - len(SPECIAL32), dtype=np.uint64)
    return np.concatenate([SPECIAL32, rnd.astype(np.uint32)]).view(np.float32)


def _check_x86(f: hl.Func, p: hl.ImageParam, vals: np.ndarray, name: str) -> int:
    prog = pitchfork.compile(f, [p], target="x86-avx2", name=name, fallback=False)
    p.set(hl.Buffer(vals))
    want = np.asarray(f.realize([len(vals)], hl.Target("x86-64-linux-avx2-fma-f16c")))
    got = prog(vals, size=[len(vals)])
    w, g = want.view(f"u{want.itemsize}"), np.asarray(got).view(f"u{want.itemsize}")
    assert np.array_equal(g, w), [(i, hex(vals.view(f"u{vals.itemsize}")[i]), hex(g[i]), hex(w[i]))
                                  for i in np.flatnonzero(g != w)[:8]]
    return len(vals)


@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("dst, src", [("float16", "float32"), ("bfloat16", "float32"), ("float32", "float64"),
                                      ("bfloat16", "float64"), ("float16", "int32"), ("bfloat16", "uint32"),
                                      ("float64", "float16"), ("float64", "float32")])
def test_saturating_cast_to_float_is_halides_on_x86(dst: str, src: str, lanes: int) -> None:
    types = {"float16": hl.Float(16), "bfloat16": hl.BFloat(16), "float32": hl.Float(32),
             "float64": hl.Float(64), "int32": hl.Int(32), "uint32": hl.UInt(32)}
    p = hl.ImageParam(types[src], 1, "p")
    name = f"satf_{dst}_{src}_{lanes}"
    f = hl.Func(name)
    v = hl.saturating_cast(types[dst], p[x])
    # (a bfloat16's bits: Halide's realize has no numpy bfloat16)
    f[x] = hl.reinterpret(hl.UInt(16), v) if dst == "bfloat16" else v
    if lanes > 1:
        f.vectorize(x, lanes)
    v32 = _f32_values(301, seed=lanes)
    with np.errstate(invalid="ignore"):  # (numpy warns converting a signalling NaN)
        v64 = v32.astype(np.float64)
    vals = {"float32": v32, "float64": np.concatenate([v64,
                                                       np.array([1e300, -1e300, 65519.99, 2.0 ** -25 * 1.5])]),
            "float16": v32.view(np.uint16).view(np.float16), "int32": v32.view(np.int32),
            "uint32": v32.view(np.uint32)}[src]
    assert _check_x86(f, p, vals, name) >= 300


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("target, dst", [("arm-64-linux-arm_fp16", hl.Float(16)), ("arm64", hl.BFloat(16)),
                                         ("arm64", hl.Float(32))])
def test_saturating_cast_to_float_is_halides_on_arm64(target: str, dst: hl.Type, tmp_path: Path) -> None:
    """Against Halide's own library under qemu-aarch64: the float32 of two uint16 inputs' bits (one in
    eight any pattern: NaN, infinities, out of range; the others near float16's range), clamped by Neon
    fmin / fmax with +-inf, then cast; a float64 (float32 destination) is the float32 scaled by 2^100 or
    2^-100 (out of range both ways)."""
    from pitchfork.targets.target_strings import parse_target
    from tests.pitchfork.codegen.test_floats_half_arm import W, ours_and_halides

    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    # one in eight any pattern; the others of exponent 2^-15 .. 2^16 (float16's subnormals to overflow)
    top = hl.select((c[x] & 7) == 0, a[x], (a[x] & 0x8FFF) + 0x3800)
    v = hl.reinterpret(hl.Float(32), (hl.u32(top) << 16) | hl.u32(c[x]))
    if dst.bits() == 32:
        v = hl.f64(v) * hl.select((c[x] & 1) == 0, 2.0 ** 100, 2.0 ** -100)
    f = hl.Func(f"satf_arm_{dst.bits()}_{target.replace('-', '_')}")
    f[x] = hl.saturating_cast(dst, v)
    f.vectorize(x, 8)
    code = {16: (4 if dst.is_bfloat() else 2) | 16 << 8 | 1 << 16, 32: 2 | 32 << 8 | 1 << 16}[dst.bits()]
    ours, theirs = ours_and_halides(f, [a, c], parse_target(target).halide, tmp_path, code, dst.bits() // 8)
    dt = np.uint16 if dst.bits() == 16 else np.uint32
    g, w = np.frombuffer(ours, dt), np.frombuffer(theirs, dt)
    assert np.array_equal(g, w), [(int(i), hex(g[i]), hex(w[i])) for i in np.flatnonzero(g != w)[:8]]
    assert len(set(g.tolist())) > W // 4


def _f64_near_half(a: hl.Expr, c: hl.Expr) -> hl.Expr:
    """A float64 from two uint16s: one in eight any top 16 bits (huge, tiny; one in eight of those a NaN or
    an infinity), the others of exponent 2^-31 .. 2^32 (float16's subnormals to overflow); the low 32
    bits zero one time in two
    and c's low 9 bits too one time in four, so float16's rounding ties (and just-off ties) occur."""
    top = hl.select((c & 63) == 0, a | 0x7FF0, (c & 7) == 0, a, (a & 0x83FF) + 0x3E00)
    mid = hl.select(((a >> 10) & 3) == 0, c & 0xFE00, c)
    low = hl.select(((a >> 12) & 1) == 0, hl.u64(0), hl.u64(hl.u32(a) * 40503 + hl.u32(c) * 65599))
    return hl.reinterpret(hl.Float(64), (hl.u64(top) << 48) | (hl.u64(mid) << 32) | low)


def x86_float16_against_halides_object(f: hl.Func, args: list, n: int, tmp_path: Path) -> tuple[Any, np.ndarray]:
    """`f` (uint16 ImageParams `args`, a float16 output) compiled by PITCHFORK for x86-avx2 and by Halide 21
    (compile_to_static_library for our Halide target; gcc links libgcc, whose __truncdfhf2 Halide's fptrunc
    calls), run by one C driver on the same n pseudo-random inputs; asserts the outputs' bits are equal and
    returns (our run's result, its output bits)."""
    from pitchfork.aot.abi_driver import Buf, Case, build_and_run, driver_source, parse_results

    ours, theirs = f"{f.name()}_pf", f"{f.name()}_hl"
    prog = pitchfork.compile(f, args, target="x86-avx2", name=ours, fallback=False)
    obj = prog.object_file(tmp_path / "o.o")
    f.compile_to_static_library(str(tmp_path / theirs), args, theirs, hl.Target(prog.halide_target))
    u16 = Buf(((0, n, 1),), type="uint16", alloc=2 * n)
    case = Case(f.name(), (*[u16] * len(args), Buf(((0, n, 1),), type=2 | 16 << 8 | 1 << 16, alloc=2 * n)))
    out = build_and_run("x86-avx2", driver_source([case], [ours, theirs], [], freestanding=False),
                        [obj, tmp_path / f"{theirs}.a"], tmp_path)
    (r_ours, r_theirs), = parse_results(out, [case], 2)
    assert r_ours.rc == 0 and r_theirs.rc == 0, (r_ours.message, r_theirs.message)
    got, want = np.frombuffer(r_ours.outputs[-1], np.uint16), np.frombuffer(r_theirs.outputs[-1], np.uint16)
    assert np.array_equal(got, want), [(int(i), hex(got[i]), hex(want[i])) for i in np.flatnonzero(got != want)[:8]]
    return r_ours, got


@pytest.mark.parametrize("lanes", [1, 8])
def test_x86_float64_to_float16_is_halides_object_with_libgcc(lanes: int, tmp_path: Path) -> None:
    """float64 -> float16 on x86 (floats_half.narrow_double_to_half, no __truncdfhf2 call): against Halide
    21's own x86 library, whose fptrunc calls __truncdfhf2, linked by gcc with libgcc's (Halide's JIT cannot
    run it: nothing in its process defines the helper), one C driver on the same inputs; and the numbers
    also against numpy's correctly rounded conversion (non-NaN)."""
    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    f = hl.Func(f"f16_from_f64_{lanes}")
    f[x] = hl.cast(hl.Float(16), _f64_near_half(a[x], c[x]))
    g = hl.Func(f"f64_of_{lanes}")  # the float64 inputs, for numpy
    g[x] = _f64_near_half(a[x], c[x])
    if lanes > 1:
        f.vectorize(x, lanes)
    n = 4099
    inputs = pitchfork.compile(g, [a, c], target="x86-avx2", name=f"f64_of_{lanes}", fallback=False)
    r_ours, got = x86_float16_against_halides_object(f, [a, c], n, tmp_path)
    d = inputs(np.frombuffer(r_ours.outputs[0], np.uint16), np.frombuffer(r_ours.outputs[1], np.uint16), size=[n])
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.asarray(d).astype(np.float16).view(np.uint16)
    nan = np.isnan(np.asarray(d))
    assert np.array_equal(got[~nan], exact[~nan])
    assert nan.sum() > 0 and (got[nan] & 0x7E00 == 0x7E00).all()  # quiet NaNs
    assert len(set(got.tolist())) > n // 4
    ties = np.asarray(d) == np.asarray(d).astype(np.float16).astype(np.float64)
    assert (~ties).sum() > n // 2  # most were rounded


#: (integer type, float type): the integer maximum a float value (int16) or rounded up past the range
#: (int32 / uint32 from float32 and 64-bit from float64: Halide clamps below, converts, and selects the
#: maximum at or above the rounded bound; a clamp to the rounded bound gave INT_MIN for 3e9 on x86)
SAT_TO_INT = [("int32", "float32"), ("uint32", "float32"), ("int16", "float32"), ("uint8", "float32"),
              ("int64", "float32"), ("int32", "float64"), ("uint32", "float64"), ("int64", "float64"),
              ("uint64", "float64")]


def _non_nan(vals: np.ndarray) -> np.ndarray:
    """The values, NaNs replaced (Halide's NaN result comes from fast-math maxnum: not a value to match)."""
    return np.where(np.isnan(vals), vals.dtype.type(1.5), vals)


@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("dst, src", SAT_TO_INT)
def test_saturating_cast_float_to_int_is_halides_on_x86(dst: str, src: str, lanes: int) -> None:
    types = {"int32": hl.Int(32), "uint32": hl.UInt(32), "int16": hl.Int(16), "uint8": hl.UInt(8),
             "int64": hl.Int(64), "uint64": hl.UInt(64), "float32": hl.Float(32), "float64": hl.Float(64)}
    p = hl.ImageParam(types[src], 1, "p")
    name = f"sati_{dst}_{src}_{lanes}"
    f = hl.Func(name)
    f[x] = hl.saturating_cast(types[dst], p[x])
    if lanes > 1:
        f.vectorize(x, lanes)
    bits = types[dst].bits()
    edges = [2.0 ** (bits - 1), 2.0 ** bits, -(2.0 ** (bits - 1)), 3e9, -3e9, 5e18, 2.0 ** 63, 2.0 ** 64, 1e30,
             -1e30, 2.0 ** 31 - 128, 2.0 ** 24, 255.5, 256.0, -0.75, 32767.5, -32768.5, 65535.0, np.inf, -np.inf]
    with np.errstate(invalid="ignore", over="ignore"):
        vals = np.concatenate([np.array(edges), _f32_values(300, seed=lanes).astype(np.float64)])
        vals = _non_nan(vals.astype(src))
    assert _check_x86(f, p, vals, name) >= 300


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("dst", [hl.Int(32), hl.UInt(32)])
def test_saturating_cast_float_to_int_is_halides_on_arm64(dst: hl.Type, tmp_path: Path) -> None:
    """Against Halide's own library under qemu-aarch64: float32 values of every exponent but NaN's and
    infinity's (two uint16 inputs' bits), beyond the integer range both ways."""
    from pitchfork.targets.target_strings import parse_target
    from tests.pitchfork.codegen.test_floats_half_arm import W, ours_and_halides

    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    top = hl.select((a[x] & 0x7F80) == 0x7F80, a[x] & 0xBFFF, a[x])  # no NaN / infinity exponent
    f = hl.Func(f"sati_arm_{'i' if dst.is_int() else 'u'}32")
    f[x] = hl.saturating_cast(dst, hl.reinterpret(hl.Float(32), (hl.u32(top) << 16) | hl.u32(c[x])))
    f.vectorize(x, 8)
    code = (0 if dst.is_int() else 1) | 32 << 8 | 1 << 16
    ours, theirs = ours_and_halides(f, [a, c], parse_target("arm64").halide, tmp_path, code, 4)
    g, w = np.frombuffer(ours, np.uint32), np.frombuffer(theirs, np.uint32)
    assert np.array_equal(g, w), [(int(i), hex(g[i]), hex(w[i])) for i in np.flatnonzero(g != w)[:8]]
    assert (g == (0x7FFFFFFF if dst.is_int() else 0xFFFFFFFF)).sum() > W // 8  # saturated ones were met
