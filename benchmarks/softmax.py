"""softmax (SPEC section 10): quantized base-2 softmax along x, all in fixed point (hannk SOFTMAX)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, V8, same_size, sat, wrap
from benchmarks.fixed_point import (approx_exp2, approx_reciprocal, multiply_2x_high, np_approx_exp2,
                                    np_approx_reciprocal, np_mh, np_rsr)

SCALARS = ("beta_mult", "beta_shift", "out_zero", "out_mult", "out_shift")
_TYPES = (hl.Int(16), hl.UInt(16), hl.UInt(8), hl.Int(16), hl.UInt(16))


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    rx = hl.RDom([(inp.dim(0).min(), inp.dim(0).extent())], "rx")
    m = hl.Func("max_x")
    m[y] = hl.u8(0)
    m[y] = hl.max(m[y], inp[rx, y])
    e = hl.Func("exp2")
    d = (hl.i16(inp[x, y]) - hl.i16(m[y])) << 6
    db = multiply_2x_high(d, p["beta_mult"])
    e[x, y] = approx_exp2(15, db, p["beta_shift"], "i16")
    total = hl.Func("sum_exp")
    total[y] = hl.i32(0)
    total[y] += hl.i32(e[rx, y])
    r = hl.Func("recip")
    r[y] = approx_reciprocal(30, total[y], "i16")
    o = multiply_2x_high(multiply_2x_high(e[x, y], r[y]), p["out_mult"])
    out = hl.Func("softmax")
    out[x, y] = hl.u8_sat(hl.saturating_add(hl.rounding_shift_right(o, p["out_shift"]), hl.i16(p["out_zero"])))

    v = V8[isa]
    out.compute_root().vectorize(x, v, hl.TailStrategy.Predicate)
    m.compute_at(out, y).update().atomic().vectorize(rx, v, hl.TailStrategy.GuardWithIf)
    total.compute_at(out, y).update().atomic().vectorize(rx, v, hl.TailStrategy.GuardWithIf)
    r.compute_at(out, y)
    return out, [inp] + [p[n] for n in SCALARS]


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    w, h = size
    return [rng.integers(0, 256, (h, w), dtype=np.uint8)] + [pset[n] for n in SCALARS]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, bm, bs, oz, om, osh = values
    a = np.asarray(a, np.int64)
    m = np.maximum(a.max(axis=1, keepdims=True), 0)
    d = wrap((a - m) << 6, "i16")
    db = np_mh(d, bm, "i16")
    e = np_approx_exp2(15, db, bs, "i16", "i16")
    total = e.sum(axis=1, keepdims=True)
    r = np_approx_reciprocal(30, total, "i16")
    o = np_mh(np_mh(e, r, "i16"), om, "i16")
    return sat(sat(np_rsr(o, osh, "i16") + oz, "i16"), "u8").astype(np.uint8)


BENCHMARK = Benchmark(
    name="softmax", section=10, build=build, make_inputs=make_inputs, output_size=same_size,
    reference=reference,
    param_sets=(
        dict(beta_mult=16, beta_shift=4, out_zero=5, out_mult=10000, out_shift=1),
        dict(beta_mult=23637, beta_shift=8, out_zero=0, out_mult=16384, out_shift=6),
    ),
    test_size=(256, 8), odd_size=(203, 5), timing_size=(1024, 16384), quick_size=(1024, 512),
    idioms=("widening_sub", "rounding_mul_shr", "saturating_cast", "saturating_add", "extending_add",
            "rounding_shr"),
)
