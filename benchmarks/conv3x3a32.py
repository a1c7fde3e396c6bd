"""conv3x3a32 (SPEC section 7): conv3x3a16 with an i32 accumulator (the i16 products are widened
into it, so it never wraps). Same inputs, parameter sets, boundary and schedules."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet
from benchmarks.common import same_size
from benchmarks.conv3x3a16 import CPU_ISAS, PARAM_SETS, conv3x3, make_inputs, reference_acc


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    return conv3x3(isa, hl.Int(32))


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    return reference_acc(values, "i32")


BENCHMARK = Benchmark(
    name="conv3x3a32", section=7, build=build, make_inputs=make_inputs, output_size=same_size,
    reference=reference, param_sets=PARAM_SETS,
    test_size=(256, 8), odd_size=(67, 7), odd_size_isas=CPU_ISAS,
    timing_size=(8192, 8192), quick_size=(1024, 256),
    idioms=("widening_mul", "extending_add", "shr", "saturating_cast"),
)
