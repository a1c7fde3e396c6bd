"""mul (SPEC section 3): quantized element-wise multiplication with a Q31 multiplier (hannk MUL)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, V8, same_size, sat
from benchmarks.fixed_point import multiply_2x_high, np_mh, np_rsr, schedule_elementwise, two_u8_images

SCALARS = ("in1_zero", "in2_zero", "out_zero", "out_mult", "out_shift", "out_min", "out_max")
_TYPES = (hl.UInt(8), hl.UInt(8), hl.UInt(8), hl.Int(32), hl.UInt(32), hl.UInt(8), hl.UInt(8))


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    in1 = hl.ImageParam(hl.UInt(8), 2, "in1")
    in2 = hl.ImageParam(hl.UInt(8), 2, "in2")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    a = (hl.i16(in1[x, y]) - hl.i16(p["in1_zero"])) << 6
    b = (hl.i16(in2[x, y]) - hl.i16(p["in2_zero"])) << 6
    prod = hl.i32(a) * hl.i32(b)
    q = multiply_2x_high(prod, p["out_mult"])
    s = hl.i16_sat(hl.rounding_shift_right(q, hl.min(hl.u32(15), p["out_shift"])))
    t = hl.u8_sat(hl.saturating_add(s, hl.i16(p["out_zero"])))
    out = hl.Func("mul")
    out[x, y] = hl.clamp(t, p["out_min"], p["out_max"])

    schedule_elementwise(out, x, in2, V8[isa])
    return out, [in1, in2] + [p[n] for n in SCALARS]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, b, z1, z2, oz, mult, shift, lo, hi = values
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    prod = ((a - z1) << 6) * ((b - z2) << 6)
    q = np_mh(prod, mult, "i32")
    s = np_rsr(q, min(15, shift), "i16")
    t = sat(s + oz, "u8")
    return np.clip(t, lo, hi).astype(np.uint8)


BENCHMARK = Benchmark(
    name="mul", section=3, build=build, make_inputs=two_u8_images(SCALARS), output_size=same_size,
    reference=reference,
    param_sets=(
        dict(in1_zero=2, in2_zero=5, out_zero=5, out_mult=10000, out_shift=1, out_min=5, out_max=225),
        dict(in1_zero=128, in2_zero=128, out_zero=128, out_mult=2**30, out_shift=13, out_min=0, out_max=255),
    ),
    test_size=(256, 8), odd_size=(131, 5), timing_size=(8192, 4096), quick_size=(1024, 256),
    idioms=("widening_sub", "widening_mul", "rounding_mul_shr", "rounding_shr", "saturating_cast",
            "saturating_add"),
)
