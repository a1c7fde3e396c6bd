"""add (SPEC section 2): quantized element-wise addition of two u8 tensors (hannk ADD)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, V8, same_size, sat
from benchmarks.fixed_point import schedule_elementwise, two_u8_images

#: scalar arguments after the two images, in call order
SCALARS = ("in1_zero", "in1_mult", "in2_zero", "in2_mult", "out_zero", "out_min", "out_max")
_TYPES = (hl.UInt(8), hl.Int(16), hl.UInt(8), hl.Int(16), hl.UInt(8), hl.UInt(8), hl.UInt(8))


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    in1 = hl.ImageParam(hl.UInt(8), 2, "in1")
    in2 = hl.ImageParam(hl.UInt(8), 2, "in2")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    a = (hl.i16(in1[x, y]) - hl.i16(p["in1_zero"])) << 6
    b = (hl.i16(in2[x, y]) - hl.i16(p["in2_zero"])) << 6
    pa = hl.widening_mul(a, p["in1_mult"])
    pb = hl.widening_mul(b, p["in2_mult"])
    s = hl.i16_sat(hl.rounding_shift_right(pa + pb, 16))
    t = hl.u8_sat(hl.saturating_add(s, hl.i16(p["out_zero"])))
    out = hl.Func("add")
    out[x, y] = hl.clamp(t, p["out_min"], p["out_max"])

    schedule_elementwise(out, x, in2, V8[isa])
    return out, [in1, in2] + [p[n] for n in SCALARS]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, b, z1, m1, z2, m2, oz, lo, hi = values
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    s = sat((((a - z1) << 6) * m1 + ((b - z2) << 6) * m2 + 2**15) >> 16, "i16")
    t = sat(s + oz, "u8")
    return np.clip(t, lo, hi).astype(np.uint8)


BENCHMARK = Benchmark(
    name="add", section=2, build=build, make_inputs=two_u8_images(SCALARS), output_size=same_size,
    reference=reference,
    param_sets=(
        dict(in1_zero=0, in1_mult=100, in2_zero=0, in2_mult=100, out_zero=0, out_min=5, out_max=225),
        dict(in1_zero=128, in1_mult=600, in2_zero=100, in2_mult=400, out_zero=128, out_min=0, out_max=255),
    ),
    test_size=(256, 8), odd_size=(131, 5), timing_size=(8192, 8192), quick_size=(1024, 256),
    idioms=("widening_sub", "widening_shl", "widening_mul", "rounding_shr", "saturating_cast",
            "saturating_add"),
)
