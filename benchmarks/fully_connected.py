"""fully_connected (SPEC section 5): quantized u8 matrix product with zero points, bias and requantization
(hannk FULLY_CONNECTED).

Two exact formulations, chosen per ISA as the source does: the 16-bit path (x86 AVX2: zero points
subtracted in i16, i16 x i16 products) and the 8-bit path (ARM dot-product, HVX: u8 x u8 products with
the zero-point terms folded into row/column sums). The reduction over k is split into rco x rc x rci
(rci = the target's dot-product width) and rfactored over rc into VA accumulator lanes, with rci
`atomic()`-vectorized: a dot-product reduction (vector_reduce_add) into VA lanes.
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V8, V32, Benchmark, ParamSet
from benchmarks.fixed_point import np_requantize, requantize

SCALARS = ("in_zero", "filter_zero", "out_zero", "out_mult", "out_shift", "out_min", "out_max")
_TYPES = (hl.UInt(8), hl.UInt(8), hl.UInt(8), hl.Int(32), hl.Int(32), hl.UInt(8), hl.UInt(8))
#: vector registers / 2 (accumulators), and the u8 dot-product reduction factor (SPEC 1.5)
ACCUMULATORS = {"x86-avx2": 8, "arm64": 16, "hvx128": 16}
REDUCTION = {"x86-avx2": 2, "arm64": 4, "hvx128": 4}
BATCH_TILE = 4


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    c, b, co = hl.Var("c"), hl.Var("b"), hl.Var("co")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    filt = hl.ImageParam(hl.UInt(8), 2, "filter")
    bias = hl.ImageParam(hl.Int(32), 1, "bias")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    iz, fz = p["in_zero"], p["filter_zero"]
    filt.dim(0).set_min(0)
    v8, va, vrf = V8[isa], V32[isa], REDUCTION[isa]
    eight_bit = isa != "x86-avx2"

    depth = (inp.dim(0).extent() / v8) * v8  # K', aligned down to the u8 vector width
    rk = hl.RDom([(0, depth)], "rk")
    multiplied = hl.Func("multiplied")
    sum_in = hl.Func("sum_input")
    sum_f = hl.Func("sum_filter")
    if eight_bit:
        sum_in[b] = hl.u32(0)
        sum_in[b] += hl.u32(inp[rk, b])
        sum_f[c] = hl.u32(0)
        sum_f[c] += hl.u32(filt[rk, c])
        multiplied[c, b] = (bias[c] + depth * hl.i32(fz) * hl.i32(iz) - hl.i32(sum_in[b]) * hl.i32(fz)
                            - hl.i32(sum_f[c]) * hl.i32(iz))
        multiplied[c, b] += hl.i32(hl.u16(filt[rk, c]) * hl.u16(inp[rk, b]))
    else:
        multiplied[c, b] = bias[c]
        multiplied[c, b] += (hl.i32(hl.i16(filt[rk, c]) - hl.i16(fz))
                             * hl.i32(hl.i16(inp[rk, b]) - hl.i16(iz)))
    out = hl.Func("fully_connected")
    out[c, b] = requantize(multiplied[c, b], p["out_mult"], p["out_shift"], p["out_zero"], p["out_min"],
                           p["out_max"])

    # ---- schedule (hannk's, parallel dropped) ----
    acc = ACCUMULATORS[isa]
    tile = acc // BATCH_TILE
    channels, batches = out.output_buffer().dim(0).extent(), out.output_buffer().dim(1).extent()
    cb, bo = hl.Var("cb"), hl.Var("bo")
    out.compute_root()
    out.specialize((channels >= tile) & (batches >= BATCH_TILE)) \
        .split(c, cb, c, tile, hl.TailStrategy.ShiftInwards) \
        .split(b, bo, b, BATCH_TILE, hl.TailStrategy.ShiftInwards) \
        .reorder(c, b, bo, cb).unroll(b)
    out.specialize(channels >= acc).split(c, cb, c, acc // 2, hl.TailStrategy.ShiftInwards) \
        .split(b, bo, b, 1).reorder(c, b, bo, cb)
    out.split(c, cb, c, 1).split(b, bo, b, 1).reorder(c, b, bo, cb)

    rco, rc, rci = hl.RVar("rco"), hl.RVar("rc"), hl.RVar("rci")
    multiplied.update().split(rk.x, rco, rci, va * vrf).split(rci, rc, rci, vrf)
    inner = multiplied.update().rfactor(rc, co)
    multiplied.compute_at(out, bo).vectorize(c).unroll(b)
    multiplied.update().reorder(c, rc, b).unroll(c).atomic().vectorize(rc)
    multiplied.specialize(fz == 0)
    inner.compute_at(out, bo).reorder_storage(co, c, b).vectorize(co).unroll(c).unroll(b)
    inner.update().reorder(rci, co, c, b, rco).vectorize(co).atomic().vectorize(rci).unroll(c).unroll(b)
    inner.specialize(iz == 0)
    if eight_bit:
        sum_f.update().split(rk.x, rco, rci, va * vrf).split(rci, rc, rci, vrf)
        inner_f = sum_f.update().rfactor(rc, co)
        sum_f.compute_at(out, bo).update().atomic().vectorize(rc)
        inner_f.compute_at(out, bo).vectorize(co).unroll(c)
        inner_f.update().reorder(rci, co, c, rco).vectorize(co).atomic().vectorize(rci).unroll(c)
        inner_f.update().compute_with(inner.update(), rco)
        sum_in.compute_root().update().atomic().vectorize(rk.x, v8)
    return out, [inp, filt, bias] + [p[n] for n in SCALARS]


def _shift(pset: ParamSet, k: int) -> int:
    # The recommended set scales the shift with the depth (log2(K) + 6); the driver's is fixed.
    return pset["out_shift"] if pset["out_shift"] is not None else int(np.log2(k)) + 6


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    k, ch, nb = size
    vals = dict(pset, out_shift=_shift(pset, k))
    return [rng.integers(0, 256, (nb, k), dtype=np.uint8), rng.integers(0, 256, (ch, k), dtype=np.uint8),
            rng.integers(-5000, 5000, ch, dtype=np.int32)] + [vals[n] for n in SCALARS]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    k, ch, nb = size
    return [ch, nb]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    """K must be a multiple of 128 (then K' = K on every target)."""
    a, f, bias, iz, fz, oz, mult, shift, lo, hi = values
    a, f = np.asarray(a, np.int64), np.asarray(f, np.int64)
    acc = np.asarray(bias, np.int64)[None, :] + (a - iz) @ (f - fz).T  # [b][c]
    return np_requantize(acc, mult, shift, oz, lo, hi).astype(np.uint8)


BENCHMARK = Benchmark(
    name="fully_connected", section=5, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference,
    param_sets=(
        dict(in_zero=3, filter_zero=5, out_zero=7, out_mult=32767, out_shift=1, out_min=5, out_max=250),
        dict(in_zero=128, filter_zero=0, out_zero=128, out_mult=2**30, out_shift=None, out_min=0, out_max=255),
    ),
    test_size=(256, 32, 8), odd_size=(384, 13, 7), timing_size=(2048, 2048, 256), quick_size=(1024, 256, 64),
    idioms=("widening_sub", "widening_mul", "rounding_mul_shr", "rounding_shr", "saturating_cast",
            "saturating_add"),
)
