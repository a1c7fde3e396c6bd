"""float16 where Halide 21 emulates it (pitchfork/codegen/floats_half_emulated.py): arm64 without arm_fp16,
and hvx128 (scalars as Halide compiles them; vectors, which Halide 21 refuses, "Unsupported HVX type", lane by
lane as its scalar code). Every float16 operation is the float32 one between Halide's bit-level conversions
(float16_to_float32, float32_to_float16: NaN -> inf), `round` its generic lowering, `abs` a select.

Reference: Halide's own library for the target (compile_to_static_library), run by one C driver with ours
on the driver's pseudo-random uint16 inputs: arm-64-linux under qemu-aarch64; on hvx128 Halide's
hexagon-32-noos-hvx-hvx_128-hvx_v66 library built with `no_runtime` under qemu-hexagon, the few runtime
symbols it still names (error reporters, the HVX lock, VTCM, floorf / ceilf / truncf) given by
HEXAGON_STUBS (the bare-metal harness has no Hexagon runtime or C library). Halide's Hexagon code differs
from its arm64 code where Halide lowers before widening: a float16 lerp is four float16 operations there
(each rounded), one float32 lerp on arm64. The hvx128 inputs are finite (a NaN made by float32 arithmetic
is Hexagon's default NaN; fmin / fmax of a NaN differ too). Each pipeline computes one case per element
(x % number of cases), N elements in all."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.aot.abi_driver import Buf, Case, build_and_run, driver_source, parse_results
from pitchfork.backend.run import tools_available
from tests.pitchfork.codegen.test_floats_half_arm import CASES, _masked, _scaled, _special

x = hl.Var("x")
F16 = hl.Float(16)
N = 2048
FLOAT16_CODE = 2 | 16 << 8 | 1 << 16
BFLOAT16_CODE = 4 | 16 << 8 | 1 << 16
ARM = pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
HVX = pytest.mark.skipif(not tools_available("hvx128"), reason="no toolchain for hvx128")


def _h(v: float) -> hl.Expr:
    return hl.cast(F16, hl.f32(v))


def _m(bits: hl.Expr) -> hl.Expr:
    """A finite float16 of |v| < 256 (every sign, subnormals, zeros)."""
    return _masked(bits, 0xDBFF)


def _fin(bits: hl.Expr) -> hl.Expr:
    """A finite float16: one in eight a special value (signed zeros, subnormals, 1.0), else _m(bits)."""
    return hl.select((bits & 7) == 0, _special(bits, finite=True), _m(bits))


Expr2 = Callable[[hl.Expr, hl.Expr], hl.Expr]

#: the arm_fp16 file's cases (math calls, `%`, round, lerp, predicates, strict ops) and more, on uint16 a, c
ALL: dict[str, Expr2] = {
    **CASES,
    "log": lambda a, c: hl.log(_masked(a, 0x77FF, 0x0400)),  # positive finite normals
    "arith": lambda a, c: _m(a) * _m(c) + _m(a) / _masked(c, 0x87FF, 0x3800) - _h(1.5),
    "min_max_select": lambda a, c: hl.select(_m(a) < _m(c), hl.min(_m(a), _h(0.5)), hl.max(_m(c), _h(-2.0))),
    "abs": lambda a, c: hl.abs(_special(a)),  # abs(-0) is -0; NaN through the select
    "move_bits": lambda a, c: hl.select((c & 1) == 0, _special(a), _special(c)),  # NaN payloads kept
    "from_int": lambda a, c: hl.cast(F16, hl.reinterpret(hl.Int(16), a)) + hl.cast(F16, hl.u8(c)),
    "to_int": lambda a, c: hl.cast(F16, hl.cast(hl.Int(16), _m(a) * _h(3.0)) + hl.i16(_m(c))),
    # float32 -> float16 (every float32 exponent one time in eight: overflow, NaN -> inf)
    "from_f32": lambda a, c: hl.cast(F16, hl.reinterpret(hl.Float(32), (hl.u32(
        hl.select((c & 7) == 0, a, (a & 0x8FFF) + 0x3800)) << 16) | hl.u32(c))),
    # float64 -> float16 through float32 (rounded twice, as Halide's lower_float16_cast)
    "from_f64": lambda a, c: hl.cast(F16, hl.reinterpret(hl.Float(64), (hl.u64((a & 0x83FF) + 0x3E00) << 48)
                                                          | (hl.u64(c) << 32) | hl.u64(a * c))),
    "floor_ceil_trunc": lambda a, c: hl.floor(_m(a)) + hl.ceil(_m(c)) + hl.trunc(_m(a ^ c)),
    "saturating_cast": lambda a, c: hl.saturating_cast(F16, hl.f32(_m(a)) * 300.0),
    # an integer weight: w = u * (1/255) (in float32 on arm64, in float16 on hvx128), Lerp.cpp's sum fused
    # on arm64 (a float64 weight, CASES: the lerp in float64, rounded to float32 then float16)
    "lerp_u8": lambda a, c: hl.lerp(_m(a), _m(c), hl.u8(a ^ c)),
}
#: not on hvx128: float32 sqrt / sin / tan are refused there (no C library on the harness); hl.strict_float
#: on NaN and infinities, and fmin of a NaN, are Hexagon's own (finite variants below)
NOT_HVX = ("sqrt", "sin_cos", "tan_atan2", "strict_arith", "strict_min_max", "strict_compare", "predicates",
           "abs", "move_bits", "from_f32", "saturating_cast", "lerp_f64")
HVX_FINITE: dict[str, Expr2] = {
    "strict_arith": lambda a, c: hl.strict_float(_fin(a) * _fin(c) + _fin(a) / _masked(c, 0x87FF, 0x3800)
                                                 - _fin(c)),
    "strict_min_max": lambda a, c: hl.strict_float(hl.min(_fin(a), _fin(c)) - hl.max(_fin(c), _fin(a))),
    "predicates": lambda a, c: hl.select(hl.is_nan(_special(a)), _h(1.0), hl.is_inf(_special(c)), _h(2.0),
                                         hl.is_finite(_special(a)), _fin(c), _h(3.0)),
    "abs": lambda a, c: hl.abs(_fin(a)),
    "move_bits": lambda a, c: hl.select((c & 1) == 0, _special(a), _special(c)),
    "from_f32": lambda a, c: hl.cast(F16, hl.reinterpret(hl.Float(32), (hl.u32((a & 0x8FFF) + 0x3800) << 16)
                                                          | hl.u32(c))),
    "saturating_cast": lambda a, c: hl.saturating_cast(F16, hl.f32(_m(a)) * 300.0),
}


#: what Halide's no_runtime Hexagon library still names (and the bare-metal harness has not)
HEXAGON_STUBS = """
int halide_error_access_out_of_bounds() { return -1; }
int halide_error_bad_dimensions() { return -1; }
int halide_error_bad_type() { return -1; }
int halide_error_buffer_allocation_too_large() { return -1; }
int halide_error_buffer_argument_is_null() { return -1; }
int halide_error_buffer_extents_negative() { return -1; }
int halide_error_constraint_violated() { return -1; }
int halide_error_device_dirty_with_no_device_support() { return -1; }
int halide_error_host_is_null() { return -1; }
int qurt_hvx_lock(int mode) { return 0; }
int qurt_hvx_unlock(void) { return 0; }
void *HAP_request_VTCM(unsigned size, unsigned single_page) { return 0; }
int HAP_release_VTCM(void *p) { return 0; }
void halide_msan_annotate_memory_is_initialized(void *uc, const void *p, unsigned long long n) { }
char *halide_string_to_string(char *d, char *end, const char *s) {
    while (d < end && *s) *d++ = *s++;
    if (d < end) *d = 0;
    return d;
}
static int pf_big(float x) { return !(x > -8388608.0f && x < 8388608.0f); }
float truncf(float x) {
    if (pf_big(x)) return x;
    union { float f; unsigned u; } a = {x}, t = {(float)(int)x};
    t.u |= a.u & 0x80000000u;
    return t.f;
}
float floorf(float x) { float t = truncf(x); return !pf_big(x) && t > x ? t - 1.0f : t; }
float ceilf(float x) { float t = truncf(x); return !pf_big(x) && t < x ? t + 1.0f : t; }
"""
HEXAGON = "hexagon-32-noos-hvx-hvx_128-hvx_v66-no_runtime"


def _all_cases(table: dict[str, Expr2], a: hl.Expr, c: hl.Expr) -> hl.Expr:
    """Case number x % len(table) at element x."""
    k = x % len(table)
    e = list(table.values())
    out = e[-1](a, c)
    for i in range(len(e) - 2, -1, -1):
        out = hl.select(k == i, e[i](a, c), out)
    return out


def _ours_and_halides(fac: tuple[hl.Func, hl.ImageParam, hl.ImageParam], isa: str, target: str, tmp_path: Path,
                      code: int, halides: hl.Func | None = None) -> tuple[np.ndarray, ...]:
    """`f` of uint16 a, c compiled by PITCHFORK for `target` (run on `isa`) and `halides` (default `f`) by
    Halide 21 for the same ISA (arm-64-linux, or HEXAGON), called by one driver on the same N
    pseudo-random inputs; the outputs' uint16 bits (ours, Halide's)."""
    f, a, c = fac
    g = f if halides is None else halides
    ours, theirs = f"{f.name()}_pf", f"{g.name()}_hl"
    obj = pitchfork.compile(f, [a, c], target=target, name=ours, fallback=False).object_file(tmp_path / "o.o")
    g.compile_to_static_library(str(tmp_path / theirs), [a, c], theirs,
                                hl.Target(HEXAGON if isa == "hvx128" else "arm-64-linux"))
    u16 = Buf(((0, N, 1),), type="uint16", alloc=2 * N)
    case = Case(f.name(), (u16, u16, Buf(((0, N, 1),), type=code, alloc=2 * N)))
    src = driver_source([case], [ours, theirs], [], freestanding=isa == "hvx128")
    out = build_and_run(isa, src + (HEXAGON_STUBS if isa == "hvx128" else ""), [obj, tmp_path / f"{theirs}.a"],
                        tmp_path)
    (r_ours, r_theirs), = parse_results(out, [case], 2)
    assert r_ours.rc == 0 and r_theirs.rc == 0, (r_ours.message, r_theirs.message)
    assert r_ours.outputs[:-1] == r_theirs.outputs[:-1]  # the same inputs
    return np.frombuffer(r_ours.outputs[-1], np.uint16), np.frombuffer(r_theirs.outputs[-1], np.uint16)


def _func(name: str, table: dict[str, Expr2], lanes: int) -> tuple[hl.Func, hl.ImageParam, hl.ImageParam]:
    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    f = hl.Func(name)
    f[x] = _all_cases(table, a[x], c[x])
    if lanes > 1:
        f.vectorize(x, lanes)
    return f, a, c


def _assert_same(got: np.ndarray, want: np.ndarray, names: list[str]) -> None:
    bad = np.flatnonzero(got != want)
    assert not len(bad), [(names[i % len(names)], hex(got[i]), hex(want[i])) for i in bad[:8]]
    for k, name in enumerate(names):  # every case got varied inputs
        assert len(set(got[k::len(names)].tolist())) > 8, name


@ARM
@pytest.mark.parametrize("lanes", [1, 8])
def test_arm64_without_fp16_is_halides_emulation(lanes: int, tmp_path: Path) -> None:
    f = _func(f"f16_emu_arm_{lanes}", ALL, lanes)
    _assert_same(*_ours_and_halides(f, "arm64", "arm-64-linux", tmp_path, FLOAT16_CODE), list(ALL))


@HVX
def test_hvx128_scalars_are_halides_emulation(tmp_path: Path) -> None:
    table = {**{k: v for k, v in ALL.items() if k not in NOT_HVX}, **HVX_FINITE}
    f = _func("f16_emu_hvx", table, 1)
    _assert_same(*_ours_and_halides(f, "hvx128", "hvx128", tmp_path, FLOAT16_CODE), list(table))


@HVX
@pytest.mark.parametrize("case, lanes", [("arith", 8), ("lerp_u8", 8), ("arith", 64),
                                         pytest.param("round", 64, marks=pytest.mark.extended)])  # (~25 s)
def test_hvx128_vectors_are_halides_scalar_emulation(case: str, lanes: int, tmp_path: Path) -> None:
    """float16 vectors on hvx128, which Halide 21 refuses ("Unsupported HVX type: float16x8"), compute
    lane by lane what Halide's scalar Hexagon code computes (its emulation is element-wise). One case per
    pipeline. Under 64 lanes each lane is scalar code (compile time grows with lanes and cases); at 64
    lanes, float16's natural HVX width, each float32 op of the emulation is a loop over the lanes
    (hvx_floats.LOOP_LANES: unrolled, a 64-lane `arith` took 62 s CPU to compile and 64 s more for its
    object; as loops 3 s and 3.5 s)."""
    table = {case: ALL[case]}
    f, a, c = _func(f"f16_emu_hvx_{lanes}_{case}", table, lanes)
    scalar = hl.Func(f"f16_emu_hvx_ref{lanes}_{case}")
    scalar[x] = _all_cases(table, a[x], c[x])
    _assert_same(*_ours_and_halides((f, a, c), "hvx128", "hvx128", tmp_path, FLOAT16_CODE, scalar), list(table))


@HVX
@pytest.mark.parametrize("lanes", [1, 8, 64])
def test_hvx128_bfloat16_is_halides_emulation(lanes: int, tmp_path: Path) -> None:
    """bfloat16 on hvx128: Halide's bfloat16 emulation (floats_bfloat.py), finite inputs; vectors (which
    Halide 21 refuses: "Unsupported HVX type") lane by lane as its scalar code."""
    bf = hl.BFloat(16)

    def v(bits: hl.Expr) -> hl.Expr:
        return hl.reinterpret(bf, bits & 0xBFFF)  # finite, |v| < 2

    table: dict[str, Expr2] = {"all": lambda a, c: hl.reinterpret(hl.UInt(16), (
        v(a) * v(c) + v(a) / hl.cast(bf, 3.0) - hl.min(v(c), hl.cast(bf, 0.5)) + hl.round(v(a) * hl.cast(bf, 64.0))
        + hl.abs(v(c)) + hl.cast(bf, hl.reinterpret(hl.Int(16), a) >> 4) + hl.cast(bf, hl.f32(v(c)) * 3.0)))}
    f, a, c = _func(f"bf16_emu_hvx_{lanes}", table, lanes)
    scalar = hl.Func(f"bf16_emu_hvx_ref_{lanes}")
    scalar[x] = _all_cases(table, a[x], c[x])
    _assert_same(*_ours_and_halides((f, a, c), "hvx128", "hvx128", tmp_path, 1 | 16 << 8 | 1 << 16, scalar),
                 list(table))


@pytest.mark.parametrize("weight, reason", [
    (hl.Float(64), "lerp of float16 values with a float64 weight on hvx128"),
    (hl.UInt(16), "lerp of float16 values with a uint16 weight on a target that computes it on float16"),
])
def test_hvx128_lerp_refusals_name_themselves(weight: hl.Type, reason: str) -> None:
    """What stays refused on hvx128 falls back at compile time naming the construct: a float64 weight
    (a float64 fma, which the harness cannot call) and an integer weight wider than 8 bits (Halide's
    float16 scale 1/65535 is 1/inf)."""
    from pitchfork.api import PitchforkFallbackWarning

    a, c, w = hl.ImageParam(F16, 1, "a"), hl.ImageParam(F16, 1, "c"), hl.ImageParam(weight, 1, "w")
    f = hl.Func(f"f16_hvx_lerp_{weight.bits()}")
    f[x] = hl.lerp(a[x], c[x], w[x])
    with pytest.warns(PitchforkFallbackWarning, match=reason):
        prog = pitchfork.compile(f, [a, c, w], target="hvx128", name=f.name())
    assert prog.is_fallback
