"""blur3x3 (SPEC section 13): the classic separable u16 3x3 box blur, each pass dividing by 3.

No boundary condition: output (x, y) reads in(x..x+2, y..y+2), so the input is 2 larger than the
output in each dimension (the tightest valid input; the driver makes it 3 larger).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from benchmarks.common import V8, V16, Benchmark, ParamSet, as_type
from pitchfork.frontend.examples import blur3x3


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    # The SPEC's algorithm and schedules are pitchfork.frontend.examples.blur3x3: on CPUs 32-row strips
    # vectorized by V8 u16 lanes (two native vectors), blur_x a sliding window computed per output
    # vector; on HVX 128-row strips of 64 lanes (one vector of u16), blur_x computed per row, with the
    # source's prefetch(input, y, 2) kept as written (Halide 21 removes it, the prefetched area is empty).
    return blur3x3(V16[isa] if isa == "hvx128" else V8[isa], hvx=isa == "hvx128")


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
