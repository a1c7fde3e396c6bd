"""gaussian5x5 (SPEC section 15): the [1 4 6 4 1] x [1 4 6 4 1] binomial blur on u8, divided by 256
with truncation. Boundary: repeat_edge; the output has the input's extents.
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import Benchmark, ParamSet, V8, as_type, one_u8_image, same_size, wrap


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    v = hl.Func("v")
    v[x, y] = hl.i16(edge[x, y])
    rows = hl.Func("rows")
    rows[x, y] = v[x, y - 2] + 4 * v[x, y - 1] + 6 * v[x, y] + 4 * v[x, y + 1] + v[x, y + 2]
    cols = hl.Func("cols")
    cols[x, y] = rows[x - 2, y] + 4 * rows[x - 1, y] + 6 * rows[x, y] + 4 * rows[x + 1, y] + rows[x + 2, y]
    out = hl.Func("gaussian5x5")
    out[x, y] = hl.u8(cols[x, y] >> 8)
    schedule_separable(isa, edge, rows, out)
    return out, [inp]


def schedule_separable(isa: str, edge: hl.Func, rows: hl.Func, out: hl.Func) -> None:
    """The schedule gaussian5x5 and gaussian7x7 share (SPEC 15/16): V8 x 4 RoundUp tiles of out; the
    boundary Func and rows computed per tile row (out.y) with storage aligned to 128 elements."""
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    lanes = V8[isa]
    out.tile(x, y, xi, yi, lanes, 4, hl.TailStrategy.RoundUp).vectorize(xi).unroll(yi)
    ex = edge.args()[0]
    edge.compute_at(out, y).align_storage(ex, 128).vectorize(ex, lanes, hl.TailStrategy.RoundUp)
    rx, ry = rows.args()
    rxi, ryi = hl.Var("rxi"), hl.Var("ryi")
    rows.compute_at(out, y).tile(rx, ry, rxi, ryi, lanes, 4, hl.TailStrategy.RoundUp) \
        .vectorize(rxi).unroll(ryi).align_storage(rx, 128)


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    p = np.pad(np.asarray(values[0]).astype(np.int64), 2, mode="edge")
    k = (1, 4, 6, 4, 1)
    h, w = p.shape[0] - 4, p.shape[1] - 4
    rows = sum(kj * p[j : j + h] for j, kj in enumerate(k))  # <= 4080, fits i16
    cols = sum(kj * rows[:, j : j + w] for j, kj in enumerate(k))  # up to 65280: wraps in i16
    return as_type(wrap(wrap(cols, "i16") >> 8, "u8"), "u8")


BENCHMARK = Benchmark(
    name="gaussian5x5", section=15, build=build, make_inputs=one_u8_image, output_size=same_size,
    reference=reference, param_sets=({},),
    # RoundUp tiles: width a multiple of 128 (every ISA's V8), height of 4; no odd size.
    test_size=(256, 8), odd_size=None,
    timing_size=(8192, 8192), quick_size=(1024, 256),
    idioms=("widening_add", "widening_shl", "widening_mul", "shr", "cast"),
)
