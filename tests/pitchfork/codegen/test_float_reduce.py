"""Float `vector_reduce` (pitchfork/codegen/float_reduce.py) from `.atomic().vectorize(r)` updates:
emitted as Halide 21's codegen_vector_reduce writes it, so the sums group their terms as Halide's do
and the results are bit-exact: against Halide's realize for the target on x86, against Halide's own
library under qemu on arm64 (native 4-lane slices for 32 lanes; Neon's pairwise faddp / fminp / fmaxp
for a factor-2 step, padded to 4-lane calls for 3 or 5 output lanes; float64 with faddp.v2f64 and the
generic steps, no LLVM total reductions; float16 on half on arm_fp16) and hvx128 (float32, and float16
as Halide emulates it there); float16 on x86 as Halide's float32 reduction converted back. A parallel
float update is a compare-and-swap loop around the reduction (within float tolerance: the order of the tasks varies)."""

from __future__ import annotations

import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

x = hl.Var("x")
N = 4096


def _total(op: str, lanes: int, name: str, parallel: bool = False) -> tuple[hl.Func, hl.ImageParam, np.ndarray]:
    """f() = op over 4096 floats, the update atomic and vectorized by `lanes`."""
    a = hl.ImageParam(hl.Float(32), 1, f"{name}_in")
    r = hl.RDom([(0, N)])
    f = hl.Func(name)
    f[()] = hl.f32(1 if op == "mul" else 0)
    if op == "add":
        f[()] += a[r]
    elif op == "mul":
        f[()] *= a[r]
    else:
        f[()] = (hl.min if op == "min" else hl.max)(f[()], a[r])
    u = f.update().atomic()
    if parallel:
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        u.split(r, ro, ri, 512).parallel(ro).vectorize(ri, lanes)
    else:
        u.vectorize(r, lanes)
    v = np.random.default_rng(5).random(N, dtype=np.float32) * 2 - 0.5
    if op == "mul":
        v = 1 + (v - 0.5) / 64
    return f, a, v.astype(np.float32)


def _compile(f: hl.Func, args: list, target: str):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pitchfork.compile(f, args, target=target, fallback=False)


@pytest.mark.parametrize("op, lanes", [("add", 8), ("add", 16), ("add", 32), ("mul", 8), ("min", 8), ("max", 32)])
def test_float_total_reduction_is_halides_on_x86(op: str, lanes: int) -> None:
    f, a, v = _total(op, lanes, f"fred_{op}_{lanes}")
    a.set(hl.Buffer(v))
    prog = _compile(f, [a], "x86-avx2")
    want = np.asarray(f.realize([], target=hl.Target(prog.halide_target)))
    assert np.array_equal(prog(v, size=[], check=True), want)
    # 32 lanes: Halide adds the four native 8-lane slices first, then reduces 8 lanes
    assert f"llvm.vector.reduce.f{op}.v{lanes if lanes <= 16 else 8}f32" in prog.module.source_ir


def test_parallel_float_total_is_a_compare_and_swap_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """As Halide's module: each task's 8-lane reduction started from the value the CAS read."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    f, a, v = _total("add", 8, "fred_par", parallel=True)
    a.set(hl.Buffer(v))
    prog = _compile(f, [a], "x86-avx2")
    src = prog.module.source_ir
    assert "cmpxchg" in src and "load atomic float" in src and "atomicrmw" not in src
    assert "llvm.vector.reduce.fadd.v8f32" in src
    want = np.asarray(f.realize([], target=hl.Target(prog.halide_target)))
    for _ in range(3):
        np.testing.assert_allclose(prog(v, size=[], check=True), want, rtol=1e-5)


def _rows(op: str, lanes: int, name: str) -> tuple[hl.Func, hl.ImageParam]:
    """g(x) = op over 32 floats from uint16 a around x (a reduction per output, vectorized by `lanes`)."""
    from tests.pitchfork.codegen.test_floats_half_arm import W

    a = hl.ImageParam(hl.UInt(16), 1, "a")
    r = hl.RDom([(0, 32)])
    g = hl.Func(name)
    g[x] = hl.f32(0)
    # no constant in the term: Halide reassociates one out of the sum and then vectorizes nothing
    i = hl.min(x + r * 5, W - 1)
    term = (hl.f32(a[i]) - hl.f32(a[x])) * hl.f32(1 / 7)
    g[x] = (g[x] + term) if op == "add" else hl.max(g[x], term)
    g.update().atomic().vectorize(r, lanes)
    return g, a


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("op, lanes", [("add", 8), ("add", 32), ("max", 16)])
def test_float_reduction_is_halides_arm64_library(op: str, lanes: int, tmp_path: Path) -> None:
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides

    g, a = _rows(op, lanes, f"fred_arm_{op}_{lanes}")
    assert f"llvm.vector.reduce.f{op}" in _compile(g, [a], "arm64").module.source_ir  # a reduction runs
    ours, theirs = ours_and_halides(g, [a], "arm-64-linux", tmp_path, 2 | 32 << 8 | 1 << 16, 4)
    got, want = np.frombuffer(ours, np.uint32), np.frombuffer(theirs, np.uint32)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > (100 if op == "add" else 5)  # the inputs were varied


@pytest.mark.skipif(not tools_available("hvx128"), reason="no toolchain for hvx128")
def test_float_reduction_is_halides_hexagon_library(tmp_path: Path) -> None:
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides
    from tests.pitchfork.codegen.test_floats_half_emulated import HEXAGON, HEXAGON_STUBS

    g, a = _rows("add", 16, "fred_hvx_add_16")
    assert "llvm.vector.reduce.fadd" in _compile(g, [a], "hvx128").module.source_ir
    ours, theirs = ours_and_halides(g, [a], "hvx128", tmp_path, 2 | 32 << 8 | 1 << 16, 4,
                                    halide_target=HEXAGON, stubs=HEXAGON_STUBS)
    got, want = np.frombuffer(ours, np.uint32), np.frombuffer(theirs, np.uint32)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]


@pytest.mark.skipif(not tools_available("hvx128"), reason="no toolchain for hvx128")
@pytest.mark.parametrize("op, k, lanes", [("add", 128, 64), ("min", 64, 32)])
def test_float16_reduction_is_halides_hexagon_library(op: str, k: int, lanes: int, tmp_path: Path) -> None:
    """float16 on hvx128 (Halide emulates it): the float32 reduction of the widened value, rounded once,
    then the emulated `+` / min with the initial value, as Halide's hexagon-32-noos-hvx-hvx_128 library
    computes it (float16x64: two native float32 halves). The terms are float16 bits of moderate magnitude
    and either sign (no NaN or infinity; Halide's own HVX backend aborts on uint16 -> float16x64
    conversions, so the values are reinterpreted bits)."""
    from tests.pitchfork.codegen.test_floats_half_arm import W, ours_and_halides
    from tests.pitchfork.codegen.test_floats_half_emulated import HEXAGON, HEXAGON_STUBS

    a = hl.ImageParam(hl.UInt(16), 1, "a")
    r = hl.RDom([(0, k)])
    g = hl.Func(f"fred_hvx16_{op}_{lanes}")

    def h(j: hl.Expr) -> hl.Expr:
        return hl.reinterpret(hl.Float(16), a[j] & 0xB7FF)

    g[x] = h(x)
    g[x] = (g[x] + h(hl.min(x + r * 5, W - 1))) if op == "add" else hl.min(g[x], h(hl.min(x + r * 5, W - 1)))
    g.update().atomic().vectorize(r, lanes)
    assert f"llvm.vector.reduce.f{op}" in _compile(g, [a], "hvx128").module.source_ir
    ours, theirs = ours_and_halides(g, [a], "hvx128", tmp_path, 2 | 16 << 8 | 1 << 16, 2,
                                    halide_target=HEXAGON, stubs=HEXAGON_STUBS)
    got, want = np.frombuffer(ours, np.uint16), np.frombuffer(theirs, np.uint16)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > 10  # the inputs were varied


def test_float16_reduction_to_several_lanes_on_hvx128_is_refused_by_name() -> None:
    """float16 reductions to several lanes on hvx128: Halide's own Hexagon code for them aborts in LLVM
    (nothing to compare with): a fallback naming them."""
    from tests.pitchfork.codegen.test_floats_half_arm import W

    a = hl.ImageParam(hl.UInt(16), 1, "a")
    r = hl.RDom([(0, 4)])
    g = hl.Func("fred_hvx16_rows")
    g[x] = hl.reinterpret(hl.Float(16), a[x] & 0xB7FF)
    g[x] = g[x] + hl.reinterpret(hl.Float(16), a[hl.min(x + r * 5, W - 1)] & 0xB7FF)
    g.update().atomic().vectorize(r, 2).vectorize(x, 8)
    with pytest.raises(pitchfork.api.Unsupported, match="float16 reductions to several lanes on hvx128"):
        _compile(g, [a], "hvx128")


def _pairs(op: str, k: int, r_lanes: int, x_lanes: int, name: str,
           bits: int = 32) -> tuple[hl.Func, hl.ImageParam]:
    """out(x) = g(x): g starts from a value per x (so the grouping with it shows) and reduces k terms
    of float`bits` from uint16 `a` under .atomic(), r vectorized by `r_lanes` and x by `x_lanes` (1: not).
    The term has no constant (a constant is reassociated into the sum by Halide, which then vectorizes
    nothing); a product's terms are near 1."""
    from tests.pitchfork.codegen.test_floats_half_arm import W

    ft = hl.Float(bits)

    def c(v: float) -> hl.Expr:  # (through f64: a bare Python float is read as float32 first)
        return hl.cast(ft, hl.f64(v))

    a = hl.ImageParam(hl.UInt(16), 1, "a")
    r = hl.RDom([(0, k)])
    g, out = hl.Func(f"{name}_acc"), hl.Func(name)
    def at(j: hl.Expr) -> hl.Expr:  # (float16: 11-bit values, so no term overflows to an infinity)
        return hl.cast(ft, a[j] if bits > 16 else a[j] >> 5)

    g[x] = at(x) * c(0.37)
    i = (k * x + r) % W
    term = (at(i) - at((i + 7) % W)) * c(1 / 7)
    if op == "mul":
        g[x] = g[x] * (c(1) + (at(i) - at((i + 7) % W)) * c(2.0 ** -20))
    else:
        g[x] = (g[x] + term) if op == "add" else (hl.min if op == "min" else hl.max)(g[x], term)
    u = g.compute_root().update().atomic().vectorize(r, r_lanes)
    if x_lanes > 1:
        u.vectorize(x, x_lanes)
    out[x] = g[x]
    return out, a


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("op, k, r_lanes, x_lanes", [("add", 32, 2, 1), ("max", 32, 2, 1), ("add", 2, 2, 8),
                                                     ("min", 4, 4, 2)])
def test_arm64_pairwise_float_reduction_is_halides_library(op: str, k: int, r_lanes: int, x_lanes: int,
                                                           tmp_path: Path) -> None:
    """A factor-2 step on arm64 is Neon's faddp / fminp / fmaxp as in Halide's CodeGen_ARM, the initial
    value combined after the pair (2 -> 1 lanes 16 times per output; 16 -> 8; 8 -> 4 -> 2)."""
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides

    g, a = _pairs(op, k, r_lanes, x_lanes, f"fred_pair_{op}_{k}_{r_lanes}_{x_lanes}")
    src = _compile(g, [a], "arm64").module.source_ir
    assert f"llvm.aarch64.neon.f{op}p.v{4 if x_lanes > 2 else 2}f32" in src
    ours, theirs = ours_and_halides(g, [a], "arm-64-linux", tmp_path, 2 | 32 << 8 | 1 << 16, 4)
    got, want = np.frombuffer(ours, np.uint32), np.frombuffer(theirs, np.uint32)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > (100 if op == "add" else 5)  # the inputs were varied


def _same_as_halides_arm64_library(g: hl.Func, a: hl.ImageParam, bits: int, tmp_path: Path) -> None:
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides

    ours, theirs = ours_and_halides(g, [a], "arm-64-linux", tmp_path, 2 | bits << 8 | 1 << 16, bits // 8)
    dt = np.uint64 if bits == 64 else np.uint32
    got, want = np.frombuffer(ours, dt), np.frombuffer(theirs, dt)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > 50  # the inputs were varied


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("op, k, r_lanes, x_lanes, bits, intrinsic", [
    ("add", 2, 2, 3, 32, "faddp.v4f32"),  # 6 -> 3 lanes: one 4-lane call, padded (Halide's too)
    ("max", 2, 2, 5, 32, "fmaxp.v4f32"),  # 10 -> 5: two 4-lane calls
    ("mul", 32, 2, 1, 32, "llvm.vector.reduce.fmul.v2f32"),  # no pairwise multiply: LLVM's reduction
    ("add", 32, 2, 1, 64, "faddp.v2f64"),  # float64 2 -> 1, 16 times per output
    ("add", 32, 4, 1, 64, "faddp.v2f64"),  # 4 -> 1: the two 2-lane halves added, then faddp
    ("add", 2, 2, 3, 64, "faddp.v2f64"),  # 6 -> 3: two 2-lane calls, the last half poison
    ("max", 32, 2, 1, 64, "llvm.aarch64.neon.fmax"),  # no float64 fmaxp: the lanes combined by Neon's fmax
    ("mul", 2, 2, 4, 64, ""),  # 8 -> 4, float64 product: strided slices multiplied
])
def test_arm64_float_reductions_halide_compiles_are_its_library(op: str, k: int, r_lanes: int, x_lanes: int,
                                                                bits: int, intrinsic: str, tmp_path: Path) -> None:
    """What were refusals: pairwise steps into a number of lanes no power of two, a factor-2 product,
    float64 on arm64 (faddp.v2f64, no LLVM total reductions there, as in Halide's codegen_vector_reduce),
    each bit-exact against Halide's arm-64-linux library and with the instruction Halide's module has."""
    g, a = _pairs(op, k, r_lanes, x_lanes, f"fred_more_{op}_{k}_{r_lanes}_{x_lanes}_{bits}", bits)
    src = _compile(g, [a], "arm64").module.source_ir
    assert intrinsic in src
    if bits == 64:
        assert "llvm.vector.reduce.f" not in src
    _same_as_halides_arm64_library(g, a, bits, tmp_path)


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("op, k, r_lanes, x_lanes, intrinsic", [
    ("add", 32, 8, 1, "llvm.vector.reduce.fadd.v8f16"),
    ("add", 32, 2, 1, "faddp.v4f16"),  # 2 -> 1: the 64-bit overload, as Halide's module
    ("add", 2, 2, 8, "faddp.v8f16"),  # 16 -> 8: the 128-bit one
    ("max", 32, 8, 1, "llvm.vector.reduce.fmax.v8f16"),
])
def test_arm_fp16_float16_reduction_is_halides_library(op: str, k: int, r_lanes: int, x_lanes: int, intrinsic: str,
                                                       tmp_path: Path) -> None:
    """float16 reductions on arm_fp16 are computed on half, as Halide's module does (LLVM's reduction on
    <N x half> with the initial value, Neon's faddp on half for a factor-2 step): bit-exact against its
    arm-64-linux-arm_fp16 library."""
    from tests.pitchfork.codegen.test_floats_half_arm import TARGET, ours_and_halides

    g, a = _pairs(op, k, r_lanes, x_lanes, f"fred_f16_{op}_{k}_{r_lanes}_{x_lanes}", 16)
    assert intrinsic in _compile(g, [a], TARGET).module.source_ir
    ours, theirs = ours_and_halides(g, [a], TARGET, tmp_path, 2 | 16 << 8 | 1 << 16, 2)
    got, want = np.frombuffer(ours, np.uint16), np.frombuffer(theirs, np.uint16)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > 50  # the inputs were varied


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("op", ["add", "max"])
def test_emulated_float16_total_reduction_is_halides_arm64_library(op: str, tmp_path: Path) -> None:
    """arm64 without arm_fp16 (Halide emulates float16): the float32 reduction of the widened value,
    rounded once, then the emulated `+` / max with the initial value; bit-exact against Halide's
    arm-64-linux library."""
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides

    g, a = _pairs(op, 32, 8, 1, f"fred_emu16_{op}", 16)
    assert f"llvm.vector.reduce.f{op}.v8f32" in _compile(g, [a], "arm64").module.source_ir
    ours, theirs = ours_and_halides(g, [a], "arm-64-linux", tmp_path, 2 | 16 << 8 | 1 << 16, 2)
    got, want = np.frombuffer(ours, np.uint16), np.frombuffer(theirs, np.uint16)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > 50  # the inputs were varied


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("op, pairwise", [("add", False), ("max", True)])
def test_emulated_float16_factor_two_is_halides_arm64_library(op: str, pairwise: bool, tmp_path: Path) -> None:
    """A factor-2 step of emulated float16 (were refused by name): the float32 reduction of the widened
    value; a sum of float32(float16) narrows back to float16 in Halide, which then takes the generic steps,
    a max is Neon's fmaxp. Bit-exact against Halide's arm-64-linux library."""
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides

    g, a = _pairs(op, 2, 2, 8, f"fred_emu16_pair_{op}", 16)
    assert (f"f{op}p" in _compile(g, [a], "arm64").module.source_ir) == pairwise
    ours, theirs = ours_and_halides(g, [a], "arm-64-linux", tmp_path, 2 | 16 << 8 | 1 << 16, 2)
    got, want = np.frombuffer(ours, np.uint16), np.frombuffer(theirs, np.uint16)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > 50  # the inputs were varied


@pytest.mark.parametrize("op, lanes", [("add", 8), ("add", 32), ("max", 16)])
def test_x86_float16_reduction_is_halides(op: str, lanes: int) -> None:
    """float16 on x86 (not native arithmetic): Halide's module reduces in float32 from no initial value,
    converts the result to half, then adds the initial value on half; bit-exact against its realize."""
    a = hl.ImageParam(hl.Float(16), 1, f"fred_x16_{op}_{lanes}_in")
    r = hl.RDom([(0, N)])
    f = hl.Func(f"fred_x16_{op}_{lanes}")
    f[()] = hl.cast(hl.Float(16), hl.f64(0.25))
    f[()] = (f[()] + a[r]) if op == "add" else hl.max(f[()], a[r])
    f.update().atomic().vectorize(r, lanes)
    v = (np.random.default_rng(5).random(N) * 2 - 0.5).astype(np.float16)
    a.set(hl.Buffer(v))
    prog = _compile(f, [a], "x86-avx2")
    assert f"llvm.vector.reduce.f{op}.v{lanes if lanes <= 16 else 8}f32" in prog.module.source_ir
    want = np.asarray(f.realize([], target=hl.Target(prog.halide_target)))
    assert np.asarray(prog(v, size=[], check=True)).view(np.uint16) == want.view(np.uint16)


def _narrow_sum(kind: str, bits: int, k: int, x_lanes: int, name: str) -> tuple[hl.Func, hl.ImageParam]:
    """out(x) = g(x): g starts from a non-integer value per x and adds k terms of float`bits` from
    uint16 `a`, r vectorized by 2 (a factor-2 step) and x by `x_lanes`. The term: `cast` float(a),
    `half` float32(float16(a >> 5)) (both narrow losslessly to half the width in Halide), `select` a
    select of two casts (does not narrow). The accumulator is large enough that the grouping decides the
    rounding: a pairwise add differs from the generic steps."""
    from tests.pitchfork.codegen.test_floats_half_arm import W

    ft = hl.Float(bits)
    a = hl.ImageParam(hl.UInt(16), 1, "a")
    r = hl.RDom([(0, k)])
    g, out = hl.Func(f"{name}_acc"), hl.Func(name)
    # (an accumulator past 2^(mantissa bits + 1): its spacing is 4, so adding two terms one at a time rounds
    # twice where their pairwise sum rounds once)
    g[x] = hl.cast(ft, a[x]) * hl.cast(ft, hl.f64(0.37)) + hl.cast(ft, hl.f64(2.0 ** (54 if bits == 64 else 25)))
    i = (k * x + r) % W
    term = {"cast": lambda: hl.cast(ft, a[i]),
            "half": lambda: hl.cast(ft, hl.cast(hl.Float(16), a[i] >> 5)),
            "select": lambda: hl.select(a[i] > 30000, hl.cast(ft, a[i]), hl.cast(ft, a[(i + 7) % W]))}[kind]()
    g[x] = g[x] + term
    u = g.compute_root().update().atomic().vectorize(r, 2)
    if x_lanes > 1:
        u.vectorize(x, x_lanes)
    out[x] = g[x]
    return out, a


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("kind, bits, k, x_lanes, pairwise", [
    ("cast", 64, 32, 1, False),  # float64(uint16): narrows to float32, the generic steps (no faddp)
    ("half", 32, 2, 4, False),  # float32(float16(...)): narrows to float16, strided slices from the init
    ("select", 64, 32, 1, True),  # a select does not narrow: faddp.v2f64
])
def test_arm64_float_sum_halide_narrows_is_its_library(kind: str, bits: int, k: int, x_lanes: int,
                                                      pairwise: bool, tmp_path: Path) -> None:
    """A factor-2 sum whose value Halide's lossless_cast narrows to half its width (were refused by name):
    Halide asks for a widening pairwise add, which no float type has, and takes the generic steps; one
    that does not narrow is Neon's faddp. Bit-exact against Halide's arm-64-linux library."""
    g, a = _narrow_sum(kind, bits, k, x_lanes, f"fred_narrow_{kind}_{bits}_{k}_{x_lanes}")
    assert ("faddp" in _compile(g, [a], "arm64").module.source_ir) == pairwise
    _same_as_halides_arm64_library(g, a, bits, tmp_path)


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
def test_arm64_strict_float_atomic_sum_is_halides_library(tmp_path: Path) -> None:
    """strict_float on arm64: Halide 21 makes no vector_reduce of a strict_add (its update stays a serial
    loop), so there is no pairwise step; the same pipeline compiles with no fallback, bit-exact against
    Halide's arm-64-linux-strict_float library."""
    from tests.pitchfork.codegen.test_floats_half_arm import ours_and_halides

    g, a = _pairs("add", 32, 2, 1, "fred_strict_arm")
    src = _compile(g, [a], "arm-64-linux-strict_float").module.source_ir
    assert "faddp" not in src and "reassoc" not in src
    ours, theirs = ours_and_halides(g, [a], "arm-64-linux-strict_float", tmp_path, 2 | 32 << 8 | 1 << 16, 4)
    got, want = np.frombuffer(ours, np.uint32), np.frombuffer(theirs, np.uint32)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:8]
    assert len(set(got.tolist())) > 100  # the inputs were varied


def test_float_total_under_strict_float_is_halides() -> None:
    """On a strict_float target (no fast-math flags: nothing may be reassociated) bit-exact too."""
    f, a, v = _total("add", 32, "fred_strict")
    a.set(hl.Buffer(v))
    prog = _compile(f, [a], "x86-64-linux-avx2-fma-strict_float")
    assert "reassoc" not in prog.module.source_ir
    want = np.asarray(f.realize([], target=hl.Target(prog.halide_target)))
    assert np.array_equal(prog(v, size=[], check=True), want)
