"""matmul (SPEC section 11): quantized u8 GEMM with offsets, gemmlowp style: the zero-point offsets are
factored into row and column sums, the 4-way u8 dot product is written out explicitly, and the
requantization uses the i64 "saturating rounding doubling high multiply" (srdhm)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V8, Benchmark, ParamSet, rsr, sat

SCALARS = ("a_off", "b_off", "out_mult", "out_shift", "out_offset", "out_min", "out_max")
_TYPES = (hl.Int(16), hl.Int(16), hl.Int(32), hl.Int(32), hl.Int(32), hl.UInt(8), hl.UInt(8))
#: lanes of the P update's vector (u32): 8 on the CPUs, one HVX register (32) on Hexagon
P_LANES = {"x86-avx2": 8, "arm64": 8, "hvx128": 32}


def srdhm(a: Any, b: Any) -> hl.Expr:
    """i32(clamp((i64(a)*i64(b) + 2^30) >> 31, i32 range)), in plain i64 operations (SPEC 1.4)."""
    ab = hl.i64(a) * hl.i64(b)
    return hl.i32(hl.clamp((ab + (1 << 30)) >> 31, hl.i64(-(2**31)), hl.i64(2**31 - 1)))


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y, k, j = hl.Var("x"), hl.Var("y"), hl.Var("k"), hl.Var("j")
    a = hl.ImageParam(hl.UInt(8), 2, "A")
    bm = hl.ImageParam(hl.UInt(8), 2, "B")
    bias = hl.ImageParam(hl.Int(32), 1, "bias")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    v8 = V8[isa]
    depth = (a.dim(0).extent() / 4) * 4
    # Buffer constraints of the source: K a multiple of 4, heights a multiple of 4, widths of V8, mins 0.
    a.dim(0).set_min(0).set_extent(depth)
    a.dim(1).set_min(0).set_extent((a.dim(1).extent() / 4) * 4)
    bm.dim(0).set_min(0).set_extent((bm.dim(0).extent() / v8) * v8)
    bm.dim(1).set_min(0).set_extent(depth)
    bias.dim(0).set_min(0)

    bs = hl.Func("B_swizzled")
    bs[x, k, j] = bm[x, 4 * k + j]
    rk = hl.RDom([(0, depth / 4)], "rk")
    prod = hl.Func("P")
    prod[x, y] = hl.u32(0)
    prod[x, y] += sum(hl.u32(hl.u16(a[4 * rk + i, y]) * hl.u16(bs[x, rk, i])) for i in range(4))
    kr = hl.RDom([(0, depth)], "kr")
    row_a = hl.Func("row_sums_A")
    row_a[y] = hl.u32(0)
    row_a[y] += hl.u32(a[kr, y])
    col_b = hl.Func("column_sums_B")
    col_b[x] = hl.u32(0)
    col_b[x] += hl.u32(bm[x, kr])
    a_off, b_off = hl.i32(p["a_off"]), hl.i32(p["b_off"])
    acc = hl.i32(prod[x, y]) + a_off * hl.i32(col_b[x]) + b_off * hl.i32(row_a[y]) + a_off * b_off * depth
    v = srdhm(acc + bias[x], p["out_mult"])
    w = hl.rounding_shift_right(v, p["out_shift"]) + p["out_offset"]
    out = hl.Func("matmul")
    out[x, y] = hl.clamp(hl.u8_sat(w), p["out_min"], p["out_max"])
    ob = out.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() / v8) * v8)
    ob.dim(1).set_min(0).set_extent((ob.dim(1).extent() / 4) * 4)

    # ---- schedule (CPU; on HVX the same structure with one HVX register of u32 per accumulator) ----
    xi, yi, xii, yii, rki = hl.Var("xi"), hl.Var("yi"), hl.Var("xii"), hl.Var("yii"), hl.RVar("rki")
    out.compute_root().tile(x, y, xi, yi, v8, 4, hl.TailStrategy.RoundUp).vectorize(xi).unroll(yi)
    lanes = P_LANES[isa]
    guard = hl.TailStrategy.GuardWithIf
    prod.compute_root().vectorize(x, v8 // 4)
    prod.update().split(x, x, xi, 4 * lanes, guard).split(xi, xi, xii, lanes, guard) \
        .split(y, y, yi, 32, guard).split(yi, yi, yii, 4, guard).split(rk.x, rk.x, rki, 32, guard) \
        .reorder(xii, yii, xi, rki, yi, rk.x, x, y).vectorize(xii).unroll(xi).unroll(yii)
    for f, var in ((row_a, y), (col_b, x)):
        f.compute_root().vectorize(var, v8, hl.TailStrategy.ShiftInwards)
        f.update().vectorize(var, v8, guard)  # ShiftInwards is illegal for an update: Halide's default
    return out, [a, bm, bias] + [p[n] for n in SCALARS]


def _shift(pset: ParamSet, k: int) -> int:
    # The recommended set scales the shift with the depth (1 + log2(K/256)); the other is fixed.
    return pset["out_shift"] if pset["out_shift"] is not None else 1 + max(0, int(np.log2(k / 256)))


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    """`size` is (N, M, K): output width, output height, depth."""
    n, m, k = size
    vals = dict(pset, out_shift=_shift(pset, k))
    return [rng.integers(0, 256, (m, k), dtype=np.uint8), rng.integers(0, 256, (k, n), dtype=np.uint8),
            rng.integers(-5000, 5000, n, dtype=np.int32)] + [vals[s] for s in SCALARS]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    n, m, k = size
    return [n, m]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, b, bias, a_off, b_off, mult, shift, offset, lo, hi = values
    acc = (np.asarray(a, np.int64) + a_off) @ (np.asarray(b, np.int64) + b_off) + np.asarray(bias, np.int64)
    v = sat((acc * mult + 2**30) >> 31, "i32")
    w = rsr(v, shift, "i32") + offset
    return np.clip(sat(w, "u8"), lo, hi).astype(np.uint8)


BENCHMARK = Benchmark(
    name="matmul", section=11, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference,
    param_sets=(
        dict(a_off=0, b_off=0, out_mult=65536, out_shift=None, out_offset=0, out_min=5, out_max=250),
        dict(a_off=-128, b_off=-3, out_mult=2**30, out_shift=14, out_offset=100, out_min=0, out_max=255),
    ),
    test_size=(128, 128, 64), odd_size=(256, 132, 36), timing_size=(1024, 1024, 1024),
    quick_size=(256, 256, 256),
    idioms=("widening_mul", "extending_add", "rounding_mul_shr", "rounding_shr", "saturating_cast"),
)
