"""gaussian3x3 (SPEC section 14): the [1 2 1] x [1 2 1] kernel on u8, divided by 16 with rounding.

No boundary condition: the input covers [-1, W] x [-1, H], i.e. it is a (W+2) x (H+2) `hl.Buffer`
with min (-1, -1); `size` is that input's extent and the output is 2 smaller.
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V8, Benchmark, ParamSet, as_type


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    v = hl.Func("v")
    v[x, y] = hl.i16(inp[x, y])
    rows = hl.Func("rows")
    rows[x, y] = v[x, y - 1] + 2 * v[x, y] + v[x, y + 1]
    cols = hl.Func("cols")
    cols[x, y] = rows[x - 1, y] + 2 * rows[x, y] + rows[x + 1, y]
    out = hl.Func("gaussian3x3")
    out[x, y] = hl.u8((cols[x, y] + 8) >> 4)
    # Everything inlined into out, tiled V8 x 4 RoundUp (128 x 4 on HVX).
    out.tile(x, y, xi, yi, V8[isa], 4, hl.TailStrategy.RoundUp).vectorize(xi).unroll(yi)
    if isa == "hvx128":
        out.prefetch(inp, y, y, 2, hl.PrefetchBoundStrategy.NonFaulting)
    return out, [inp]


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    w, h = size
    buf = hl.Buffer(hl.UInt(8), [w, h])  # owns its memory (SPEC 1.7's lifetime pitfall)
    np.asarray(buf)[:] = rng.integers(0, 256, (h, w), dtype=np.uint8)
    buf.set_min([-1, -1])
    return [buf]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    return [size[0] - 2, size[1] - 2]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    p = np.asarray(values[0]).astype(np.int64)
    rows = p[:-2] + 2 * p[1:-1] + p[2:]  # <= 1020, fits i16
    cols = rows[:, :-2] + 2 * rows[:, 1:-1] + rows[:, 2:]  # <= 4080, fits i16
    return as_type((cols + 8) >> 4, "u8")  # <= 255: the truncating cast keeps the value


BENCHMARK = Benchmark(
    name="gaussian3x3", section=14, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference, param_sets=({},),
    # RoundUp tiles: output width a multiple of 128 (every ISA's V8) and height of 4; no odd size.
    test_size=(258, 10), odd_size=None,
    timing_size=(8194, 8194), quick_size=(1026, 258),
    idioms=("widening_add", "widening_shl", "rounding_shr", "cast"),
)
