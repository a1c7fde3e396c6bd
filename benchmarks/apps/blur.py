"""blur (python_bindings/apps/blur_generator.py): a 3x3 box blur of u16 pixels, each pass dividing by
3, with a repeat_edge boundary; upstream's CPU schedule (32-row strips in parallel, vectorized by the
natural u16 vector, blur_x stored per strip and computed per vector) and its Hexagon schedule (the
output computed on the HVX core, 128-row strips, blur_x per row)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.apps.common import App, natural_vector_size

NAME = "blur"


def build(isa: str, parallel: bool = True) -> App:
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    x, y, xi, yi = hl.vars("x y xi yi")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    blur_x = hl.Func("blur_x")
    blur_x[x, y] = (clamped[x, y] + clamped[x + 1, y] + clamped[x + 2, y]) // 3
    blur_y = hl.Func("blur_y")
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) // 3
    if isa == "hvx128":
        vector_size = 128
        s = blur_y.compute_root().hexagon().prefetch(inp, y, y, 2).split(y, y, yi, 128)
        if parallel:
            s.parallel(y)
        s.vectorize(x, vector_size * 2)
        blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, vector_size)
    else:
        vector_size = natural_vector_size(isa, hl.UInt(16))
        s = blur_y.split(y, y, yi, 32)
        if parallel:
            s.parallel(y)
        s.vectorize(x, vector_size)
        blur_x.store_at(blur_y, y).compute_at(blur_y, x).vectorize(x, vector_size)

    def make_inputs(rng: np.random.Generator, size: Sequence[int]) -> list[Any]:
        # upstream: "incorrect results if more than 14-bit images are used" (the adds wrap)
        return [rng.integers(0, 1 << 14, (size[1], size[0]), dtype=np.uint16)]

    return App(NAME, blur_y, (inp,), make_inputs, lambda s: [s[0], s[1]], 0.0,
               test_size=(300, 260), timing_size=(1536, 2560))
