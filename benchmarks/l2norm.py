"""l2norm (SPEC section 9): quantized L2 normalization of each row (hannk L2_NORMALIZATION)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, V8, same_size, sat
from benchmarks.fixed_point import approx_reciprocal_sqrt, np_approx_reciprocal_sqrt, np_rsr


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    in_zero = hl.Param(hl.UInt(8), "in_zero")
    z = hl.Func("z")
    z[x, y] = hl.i16(inp[x, y]) - hl.i16(in_zero)
    rx = hl.RDom([(inp.dim(0).min(), inp.dim(0).extent())], "rx")
    ss = hl.Func("sum_sq")
    ss[y] = hl.i32(0)
    ss[y] += hl.i32(z[rx, y]) * hl.i32(z[rx, y])
    inv = hl.Func("inv_sqrt")
    inv[y] = approx_reciprocal_sqrt(15, ss[y])
    prod = hl.i32(z[x, y]) * inv[y]
    s = hl.i16_sat(hl.rounding_shift_right(prod, 8))
    out = hl.Func("l2norm")
    out[x, y] = hl.u8_sat(hl.saturating_add(s, hl.i16(128)))

    v = V8[isa]
    out.compute_root().vectorize(x, v, hl.TailStrategy.Predicate)
    ss.compute_at(out, y).update().atomic().vectorize(rx, v)
    inv.compute_at(out, y)
    return out, [inp, in_zero]


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    w, h = size
    a = rng.integers(0, 256, (h, w), dtype=np.uint8)
    a[0, :] = pset["in_zero"]  # one row equal to in_zero: ss = 0 maps to 128
    return [a, pset["in_zero"]]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, iz = values
    z = np.asarray(a, np.int64) - iz
    ss = (z * z).sum(axis=1)
    inv = np_approx_reciprocal_sqrt(15, ss)
    s = np_rsr(z * inv[:, None], 8, "i16")
    return sat(s + 128, "u8").astype(np.uint8)


BENCHMARK = Benchmark(
    name="l2norm", section=9, build=build, make_inputs=make_inputs, output_size=same_size,
    reference=reference, param_sets=(dict(in_zero=0), dict(in_zero=128)),
    test_size=(256, 8), odd_size=(203, 5), timing_size=(2048, 16384), quick_size=(2048, 512),
    idioms=("widening_sub", "widening_mul", "rounding_mul_shr", "rounding_shr", "saturating_cast",
            "saturating_add"),
)
