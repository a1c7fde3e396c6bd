"""sobel3x3 (SPEC section 17): |Gx| + |Gy| of a u8 image, saturated to u8 (the paper's Figure 2)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from benchmarks.common import Benchmark, ParamSet, one_u8_image, same_size
from pitchfork.frontend.examples import SOBEL_LANES, sobel3x3, sobel3x3_reference


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    # V8 x 4 RoundUp tiles; HVX uses 256 lanes (two vectors) and row strides rounded to 256.
    return sobel3x3(SOBEL_LANES[isa], hvx=isa == "hvx128")


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    return sobel3x3_reference(values[0])


BENCHMARK = Benchmark(
    name="sobel3x3", section=17, build=build, make_inputs=one_u8_image, output_size=same_size,
    reference=reference, param_sets=({},), test_size=(256, 8), odd_size=None,
    timing_size=(8192, 8192), quick_size=(1024, 256),
    idioms=("widening_add", "widening_shl", "absd", "saturating_cast"),
)
