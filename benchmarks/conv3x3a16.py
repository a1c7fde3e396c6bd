"""conv3x3a16 (SPEC section 6): a u8 image convolved with a signed i8 3x3 mask, accumulated in i16
(wrapping), then u8(clamp(acc >> 4, 0, 255)). Boundary: repeat_edge. conv3x3a32 (section 7) is the
same pipeline with an i32 accumulator; both are built by `conv3x3` here.

Parameter sets (the mask is an input, chosen by the set): a random i8 mask, which makes the i16
accumulator wrap, and the binomial [[1,2,1],[2,4,2],[1,2,1]], which does not overflow.
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, V8, as_type, same_size, sat, wrap

BINOMIAL = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.int8)
PARAM_SETS: tuple[ParamSet, ...] = ({"mask": "random"}, {"mask": "binomial"})


def conv3x3(isa: str, acc_type: hl.Type) -> tuple[Any, list[Any]]:
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    mask = hl.ImageParam(hl.Int(8), 2, "mask")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    acc = hl.cast(acc_type, 0)
    for i in (-1, 0, 1):
        for j in (-1, 0, 1):
            # The product is i16 (exact); with an i32 accumulator it is then widened by the add.
            acc = acc + hl.i16(edge[x + j, y + i]) * hl.i16(mask[j + 1, i + 1])
    out = hl.Func("conv3x3")
    out[x, y] = hl.u8(hl.clamp(acc >> 4, 0, 255))
    if isa == "hvx128":
        # The boundary Func per tile row (storage aligned, vectorized 128 RoundUp), out tiled 128 x 4
        # RoundUp, the input prefetched 2 rows ahead, row strides rounded down to multiples of 128.
        lanes = V8[isa]
        ex = edge.args()[0]
        edge.compute_at(out, y).align_storage(ex, 128).vectorize(ex, lanes, hl.TailStrategy.RoundUp)
        out.tile(x, y, xi, yi, lanes, 4, hl.TailStrategy.RoundUp).vectorize(xi).unroll(yi)
        out.prefetch(inp, y, y, 2)
        inp.dim(1).set_stride((inp.dim(1).stride() / lanes) * lanes)
        ob = out.output_buffer()
        ob.dim(1).set_stride((ob.dim(1).stride() / lanes) * lanes)
    else:
        # Everything inlined (boundary included); x vectorized by V8 with the default tail strategy.
        out.vectorize(x, V8[isa])
    return out, [inp, mask]


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    w, h = size
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    if pset["mask"] == "binomial":
        m = BINOMIAL.copy()
    else:
        m = rng.integers(-128, 128, (3, 3), dtype=np.int8)
    return [img, m]  # the numpy mask is M[i][j]: row i is the y tap


def reference_acc(values: Sequence[Any], acc: str) -> np.ndarray:
    a, m = values
    p = np.pad(np.asarray(a).astype(np.int64), 1, mode="edge")
    h, w = p.shape[0] - 2, p.shape[1] - 2
    total = sum(int(m[i][j]) * p[i : i + h, j : j + w] for i in range(3) for j in range(3))
    # Each product fits i16; the sum wraps in the accumulator type (modular, so order does not matter).
    return as_type(sat(wrap(total, acc) >> 4, "u8"), "u8")


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    return conv3x3(isa, hl.Int(16))


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    return reference_acc(values, "i16")


#: CPU schedules vectorize with the default tail (odd widths are fine); HVX's RoundUp tiles and
#: 128-multiple row strides need width % 128 == 0 and height % 4 == 0.
CPU_ISAS = ("x86-avx2", "arm64")

BENCHMARK = Benchmark(
    name="conv3x3a16", section=6, build=build, make_inputs=make_inputs, output_size=same_size,
    reference=reference, param_sets=PARAM_SETS,
    test_size=(256, 8), odd_size=(67, 7), odd_size_isas=CPU_ISAS,
    timing_size=(8192, 8192), quick_size=(1024, 256),
    idioms=("widening_mul", "add", "shr", "saturating_cast"),
)
