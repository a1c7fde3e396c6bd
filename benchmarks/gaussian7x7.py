"""gaussian7x7 (SPEC section 16): the [1 6 15 20 15 6 1] binomial blur in both directions on u8,
accumulated in i32 and divided by 4096. Boundary: repeat_edge; the output has the input's extents.
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, as_type, one_u8_image, same_size, sat
from benchmarks.gaussian5x5 import schedule_separable

KERNEL = (1, 6, 15, 20, 15, 6, 1)


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    v = hl.Func("v")
    v[x, y] = hl.i32(edge[x, y])
    rows = hl.Func("rows")
    # The source multiplies by the taps written as u8 values; u8 * i32 promotes to i32 (SPEC 1.2).
    rows[x, y] = sum((v[x, y + j - 3] * hl.u8(k) for j, k in enumerate(KERNEL)), hl.i32(0))
    cols = hl.Func("cols")
    cols[x, y] = sum((rows[x + j - 3, y] * hl.u8(k) for j, k in enumerate(KERNEL)), hl.i32(0))
    out = hl.Func("gaussian7x7")
    out[x, y] = hl.u8_sat(cols[x, y] >> 12)
    schedule_separable(isa, edge, rows, out)
    return out, [inp]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    p = np.pad(np.asarray(values[0]).astype(np.int64), 3, mode="edge")
    h, w = p.shape[0] - 6, p.shape[1] - 6
    rows = sum(k * p[j : j + h] for j, k in enumerate(KERNEL))  # <= 16320
    cols = sum(k * rows[:, j : j + w] for j, k in enumerate(KERNEL))  # <= 1044480, no i32 wrap
    return as_type(sat(cols >> 12, "u8"), "u8")


BENCHMARK = Benchmark(
    name="gaussian7x7", section=16, build=build, make_inputs=one_u8_image, output_size=same_size,
    reference=reference, param_sets=({},),
    # RoundUp tiles: width a multiple of 128 (every ISA's V8), height of 4; no odd size.
    test_size=(256, 8), odd_size=None,
    timing_size=(8192, 8192), quick_size=(1024, 256),
    idioms=("widening_mul", "widening_add", "shr", "saturating_cast"),
)
