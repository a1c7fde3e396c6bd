"""blur3x3 (SPEC section 13): the classic separable u16 3x3 box blur, each pass dividing by 3.

No boundary condition: output (x, y) reads in(x..x+2, y..y+2), so the input is 2 larger than the
output in each dimension (the tightest valid input; the driver makes it 3 larger).
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V8, V16, Benchmark, ParamSet, as_type


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y, yi = hl.Var("x"), hl.Var("y"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    bx = hl.Func("blur_x")
    out = hl.Func("blur_y")
    bx[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    out[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    if isa == "hvx128":
        # out at root in 128-row strips, 64 lanes (one HVX vector of u16); blur_x stored per strip and
        # computed per row. The source's prefetch(input, y, 2), written before the split, is kept as
        # written (Halide 21 removes it here, reporting that the prefetched area is empty).
        lanes = V16[isa]
        out.split(y, y, yi, 128).vectorize(x, lanes).prefetch(inp, y, y, 2)
        bx.store_at(out, y).compute_at(out, yi).vectorize(x, lanes)
    else:
        # 32-row strips vectorized by V8 u16 lanes (two native vectors); blur_x is a sliding window
        # down the strip, computed per output vector.
        lanes = V8[isa]
        out.split(y, y, yi, 32).vectorize(x, lanes)
        bx.store_at(out, y).compute_at(out, x).vectorize(x, lanes)
    return out, [inp]


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    w, h = size
    hi = pset.get("max_value", 65536)
    return [rng.integers(0, hi, (h, w), dtype=np.uint16)]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    return [size[0] - 2, size[1] - 2]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a = np.asarray(values[0], dtype=np.int64)
    # u16 adds wrap (SPEC 1.7); the sum of three u16 is below 2^18, so wrap once after adding.
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) % 65536 // 3
    out = (bx[:-2] + bx[1:-1] + bx[2:]) % 65536 // 3
    return as_type(out, "u16")


BENCHMARK = Benchmark(
    name="blur3x3", section=13, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference,
    # The driver's 8-bit image (no wrap) and full-range u16 data (the adds wrap mod 2^16).
    param_sets=({"max_value": 256}, {"max_value": 65536}),
    # HVX splits y by 128 (ShiftInwards): the output needs at least 128 rows.
    test_size=(130, 130), odd_size=(133, 131),
    timing_size=(8194, 8194), quick_size=(1026, 258),
    idioms=("mul_shr", "shr"),
)
