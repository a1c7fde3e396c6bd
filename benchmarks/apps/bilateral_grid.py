"""bilateral_grid (python_bindings/apps/bilateral_grid_generator.py): a bilateral filter of a float32
gray image through a 3-D grid: a histogram (an update with a data-dependent z, `mux` of value and
weight), three five-tap blurs, trilinear sampling (`lerp`) and normalisation. Upstream's CPU schedule:
blurz at root, parallel over y, vectorized by 8, the histogram computed per blurz row; blurx / blury at
root, parallel over z; the output parallel over y, vectorized by 8."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.apps.common import App

NAME = "bilateral_grid"


def build(isa: str, parallel: bool = True, s_sigma: int = 8) -> App:
    input_buf = hl.ImageParam(hl.Float(32), 2, "input")
    r_sigma = hl.Param(hl.Float(32), "r_sigma")
    x, y, z, c = hl.vars("x y z c")
    clamped = hl.BoundaryConditions.repeat_edge(input_buf)
    r = hl.RDom([(0, s_sigma), (0, s_sigma)])
    val = clamped[x * s_sigma + r.x - s_sigma // 2, y * s_sigma + r.y - s_sigma // 2]
    val = hl.clamp(val, 0.0, 1.0)
    zi = hl.i32(val / r_sigma + 0.5)
    histogram = hl.Func("histogram")
    histogram[x, y, z, c] = 0.0
    histogram[x, y, zi, c] += hl.mux(c, [val, 1.0])
    blurx, blury, blurz = hl.funcs("blurx blury blurz")
    blurz[x, y, z, c] = (histogram[x, y, z - 2, c] + histogram[x, y, z - 1, c] * 4 + histogram[x, y, z, c] * 6
                         + histogram[x, y, z + 1, c] * 4 + histogram[x, y, z + 2, c])
    blurx[x, y, z, c] = (blurz[x - 2, y, z, c] + blurz[x - 1, y, z, c] * 4 + blurz[x, y, z, c] * 6
                         + blurz[x + 1, y, z, c] * 4 + blurz[x + 2, y, z, c])
    blury[x, y, z, c] = (blurx[x, y - 2, z, c] + blurx[x, y - 1, z, c] * 4 + blurx[x, y, z, c] * 6
                         + blurx[x, y + 1, z, c] * 4 + blurx[x, y + 2, z, c])
    val = hl.clamp(clamped[x, y], 0.0, 1.0)
    zv = val / r_sigma
    zi = hl.i32(zv)
    zf = zv - zi
    xf = hl.f32(x % s_sigma) / s_sigma
    yf = hl.f32(y % s_sigma) / s_sigma
    xi = x / s_sigma
    yi = y / s_sigma
    interpolated = hl.Func("interpolated")
    interpolated[x, y, c] = hl.lerp(
        hl.lerp(hl.lerp(blury[xi, yi, zi, c], blury[xi + 1, yi, zi, c], xf),
                hl.lerp(blury[xi, yi + 1, zi, c], blury[xi + 1, yi + 1, zi, c], xf), yf),
        hl.lerp(hl.lerp(blury[xi, yi, zi + 1, c], blury[xi + 1, yi, zi + 1, c], xf),
                hl.lerp(blury[xi, yi + 1, zi + 1, c], blury[xi + 1, yi + 1, zi + 1, c], xf), yf),
        zf)
    out = hl.Func("bilateral_grid")
    out[x, y] = interpolated[x, y, 0] / interpolated[x, y, 1]

    # upstream's CPU schedule
    s = blurz.compute_root().reorder(c, z, x, y)
    if parallel:
        s.parallel(y)
    s.vectorize(x, 8).unroll(c)
    histogram.compute_at(blurz, y)
    histogram.update().reorder(c, r.x, r.y, x, y).unroll(c)
    for f in (blurx, blury):
        s = f.compute_root().reorder(c, x, y, z)
        if parallel:
            s.parallel(z)
        s.vectorize(x, 8).unroll(c)
    s = out.compute_root()
    if parallel:
        s.parallel(y)
    s.vectorize(x, 8)

    def make_inputs(rng: np.random.Generator, size: Sequence[int]) -> list[Any]:
        return [rng.random((size[1], size[0]), dtype=np.float32), 0.1]

    return App(NAME, out, (input_buf, r_sigma), make_inputs, lambda s: [s[0], s[1]],
               # a float result of ~100 float operations per pixel: relative error ~1e-6
               tolerance=1e-4, test_size=(64, 48), timing_size=(1536, 2560))
