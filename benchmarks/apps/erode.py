"""erode (python_bindings/apps/erode.py): a 5x5 erosion of u8 RGB pixels (min over x, then over y)
with a clamped boundary; upstream's CPU schedule (both passes computed at root in 8-row strips,
parallel over strips; no vectorization)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.apps.common import App

NAME = "erode"


def build(isa: str, parallel: bool = True) -> App:
    inp = hl.ImageParam(hl.UInt(8), 3, "input")
    x, y, c, yi = hl.vars("x y c yi")
    input_clamped = hl.Func("input_clamped")
    erode_x, erode_y = hl.Func("erode_x"), hl.Func("erode_y")
    input_clamped[x, y, c] = inp[hl.clamp(x, hl.i32(0), hl.i32(inp.width() - 1)),
                                 hl.clamp(y, hl.i32(0), hl.i32(inp.height() - 1)), c]
    erode_x[x, y, c] = hl.min(hl.min(hl.min(hl.min(input_clamped[x - 2, y, c], input_clamped[x - 1, y, c]),
                                            input_clamped[x, y, c]), input_clamped[x + 1, y, c]),
                              input_clamped[x + 2, y, c])
    erode_y[x, y, c] = hl.min(hl.min(hl.min(hl.min(erode_x[x, y - 2, c], erode_x[x, y - 1, c]), erode_x[x, y, c]),
                                     erode_x[x, y + 1, c]), erode_x[x, y + 2, c])
    for f in (erode_x, erode_y):
        s = f.compute_root().split(y, y, yi, 8)
        if parallel:
            s.parallel(y)

    def make_inputs(rng: np.random.Generator, size: Sequence[int]) -> list[Any]:
        return [rng.integers(0, 256, (size[2], size[1], size[0]), dtype=np.uint8)]

    return App(NAME, erode_y, (inp,), make_inputs, lambda s: [s[0], s[1], s[2]], 0.0,
               test_size=(40, 24, 3), timing_size=(1536, 2560, 3))
