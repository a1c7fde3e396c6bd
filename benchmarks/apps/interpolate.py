"""interpolate (python_bindings/apps/interpolate_generator.py): pyramid interpolation of a float32
RGBA image (premultiplied alpha, `levels` downsampling and upsampling levels, a clamp at level 4,
normalisation by alpha). Upstream's CPU schedule: downsampled levels at root in 8-row strips,
parallel, vectorized by the natural float vector; downsampled[0] cloned into downx[1]; the output
in 32-row strips, parallel, with the interpolated levels stored per strip and computed per row."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.apps.common import App, natural_vector_size

NAME = "interpolate"


def build(isa: str, parallel: bool = True, levels: int = 10) -> App:
    input_buf = hl.ImageParam(hl.Float(32), 3, "input")
    x, y, c = hl.vars("x y c")
    input_buf.dim(2).set_bounds(0, 4)
    downsampled = [hl.Func(f"downsampled_{i}") for i in range(levels)]
    downx = [hl.Func(f"downx_{i}") for i in range(levels)]
    interpolated = [hl.Func(f"interpolated_{i}") for i in range(levels)]
    upsampled = [hl.Func(f"upsampled_{i}") for i in range(levels)]
    upsampledx = [hl.Func(f"upsampledx_{i}") for i in range(levels)]
    clamped = hl.BoundaryConditions.repeat_edge(input_buf)
    downsampled[0][x, y, c] = hl.select(c < 3, clamped[x, y, c] * clamped[x, y, 3], clamped[x, y, 3])
    for lv in range(1, levels):
        prev = downsampled[lv - 1]
        if lv == 4:
            w = input_buf.width() / (1 << (lv - 1))
            h = input_buf.height() / (1 << (lv - 1))
            prev = hl.lambda_func(x, y, c, prev[hl.clamp(x, 0, w), hl.clamp(y, 0, h), c])
        downx[lv][x, y, c] = (prev[x * 2 - 1, y, c] + 2 * prev[x * 2, y, c] + prev[x * 2 + 1, y, c]) * 0.25
        downsampled[lv][x, y, c] = (downx[lv][x, y * 2 - 1, c] + 2 * downx[lv][x, y * 2, c]
                                    + downx[lv][x, y * 2 + 1, c]) * 0.25
    interpolated[levels - 1][x, y, c] = downsampled[levels - 1][x, y, c]
    for lv in range(levels - 2, -1, -1):
        upsampledx[lv][x, y, c] = (interpolated[lv + 1][x / 2, y, c] + interpolated[lv + 1][(x + 1) / 2, y, c]) / 2
        upsampled[lv][x, y, c] = (upsampledx[lv][x, y / 2, c] + upsampledx[lv][x, (y + 1) / 2, c]) / 2
        alpha = 1.0 - downsampled[lv][x, y, 3]
        interpolated[lv][x, y, c] = downsampled[lv][x, y, c] + alpha * upsampled[lv][x, y, c]
    out = hl.Func("interpolate")
    out[x, y, c] = interpolated[0][x, y, c] / interpolated[0][x, y, 3]

    # upstream's CPU schedule
    xo, xi, yo, yi = hl.vars("xo xi yo yi")
    vec = natural_vector_size(isa, hl.Float(32))
    for lv in range(1, levels - 1):
        s = downsampled[lv].compute_root().reorder(x, c, y).split(y, yo, yi, 8)
        if parallel:
            s.parallel(yo)
        s.vectorize(x, vec)
    downsampled[0].clone_in(downx[1]).store_at(downsampled[1], yo).compute_at(downsampled[1], yi) \
        .reorder(c, x, y).unroll(c).vectorize(x, vec)
    s = (out.bound(x, 0, input_buf.width()).bound(y, 0, input_buf.height()).bound(c, 0, 3)
         .split(x, xo, xi, vec).split(y, yo, yi, 32).reorder(xi, c, xo, yi, yo).unroll(c).vectorize(xi))
    if parallel:
        s.parallel(yo)
    for lv in range(1, levels):
        interpolated[lv].store_at(out, yo).compute_at(out, yi).vectorize(x, vec)

    def make_inputs(rng: np.random.Generator, size: Sequence[int]) -> list[Any]:
        img = rng.random((4, size[1], size[0]), dtype=np.float32)
        img[3] = np.where(rng.random((size[1], size[0])) < 0.5, 1.0, 0.0)  # alpha zero or one (upstream)
        img[3, 0, 0] = 1.0
        return [img]

    return App(NAME, out, (input_buf,), make_inputs, lambda s: [s[0], s[1], 3],
               tolerance=1e-4, test_size=(64, 48), timing_size=(1536, 2560))
