"""local_laplacian (python_bindings/apps/local_laplacian_generator.py): Aubry et al.'s local Laplacian
filter on u16 RGB, in float32: a remapping table (`exp`), Gaussian and Laplacian pyramids of
`pyramid_levels` levels, data-dependent gathers between intensity levels, back to u16. Upstream's
CPU schedule (its Hexagon target uses the same one): output in 64-row strips, parallel, vectorized by
8; pyramid levels 1-4 computed at root and vectorized, the deeper ones at root unvectorized."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.apps.common import App

NAME = "local_laplacian"


def _downsample(f: hl.Func, x: hl.Var, y: hl.Var) -> hl.Func:
    """Downsample with a 1 3 3 1 filter."""
    downx, downy = hl.funcs("downx downy")
    downx[x, y, hl._] = (f[2 * x - 1, y, hl._] + 3.0 * (f[2 * x, y, hl._] + f[2 * x + 1, y, hl._])
                         + f[2 * x + 2, y, hl._]) / 8.0
    downy[x, y, hl._] = (downx[x, 2 * y - 1, hl._] + 3.0 * (downx[x, 2 * y, hl._] + downx[x, 2 * y + 1, hl._])
                         + downx[x, 2 * y + 2, hl._]) / 8.0
    return downy


def _upsample(f: hl.Func, x: hl.Var, y: hl.Var) -> hl.Func:
    """Upsample using bilinear interpolation."""
    upx, upy = hl.funcs("upx upy")
    upx[x, y, hl._] = hl.lerp(f[(x + 1) // 2, y, hl._], f[(x - 1) // 2, y, hl._], ((x % 2) * 2 + 1) / 4.0)
    upy[x, y, hl._] = hl.lerp(upx[x, (y + 1) // 2, hl._], upx[x, (y - 1) // 2, hl._], ((y % 2) * 2 + 1) / 4.0)
    return upy


def build(isa: str, parallel: bool = True, pyramid_levels: int = 8) -> App:
    x, y, c, k = hl.vars("x y c k")
    input_buf = hl.ImageParam(hl.UInt(16), 3, "input")
    levels = hl.Param(hl.Int(32), "levels")
    alpha = hl.Param(hl.Float(32), "alpha")
    beta = hl.Param(hl.Float(32), "beta")
    J = pyramid_levels

    fx = hl.f32(x) / 256.0
    remap = hl.Func("remap")
    remap[x] = alpha * fx * hl.exp(-fx * fx / 2.0)
    clamped = hl.BoundaryConditions.repeat_edge(input_buf)
    floating = hl.Func("floating")
    floating[x, y, c] = clamped[x, y, c] / 65535.0
    gray = hl.Func("gray")
    gray[x, y] = (hl.f32(0.299) * floating[x, y, 0] + hl.f32(0.587) * floating[x, y, 1]
                  + hl.f32(0.114) * floating[x, y, 2])

    gPyramid = [hl.Func(f"gPyramid_{i}") for i in range(J)]
    level = k * (1.0 / (levels - 1))
    idx = gray[x, y] * hl.f32(levels - 1) * 256.0
    idx = hl.clamp(hl.i32(idx), 0, (levels - 1) * 256)
    gPyramid[0][x, y, k] = beta * (gray[x, y] - level) + level + remap[idx - 256 * k]
    for j in range(1, J):
        gPyramid[j][x, y, k] = _downsample(gPyramid[j - 1], x, y)[x, y, k]
    lPyramid = [hl.Func(f"lPyramid_{i}") for i in range(J)]
    lPyramid[J - 1][x, y, k] = gPyramid[J - 1][x, y, k]
    for j in range(J - 2, -1, -1):
        lPyramid[j][x, y, k] = gPyramid[j][x, y, k] - _upsample(gPyramid[j + 1], x, y)[x, y, k]
    inGPyramid = [hl.Func(f"inGPyramid_{i}") for i in range(J)]
    inGPyramid[0][x, y] = gray[x, y]
    for j in range(1, J):
        inGPyramid[j][x, y] = _downsample(inGPyramid[j - 1], x, y)[x, y]
    outLPyramid = [hl.Func(f"outLPyramid_{i}") for i in range(J)]
    for j in range(J):
        lv = inGPyramid[j][x, y] * hl.f32(levels - 1)
        li = hl.clamp(hl.i32(lv), 0, levels - 2)
        lf = lv - hl.f32(li)
        outLPyramid[j][x, y] = (1.0 - lf) * lPyramid[j][x, y, li] + (lf * lPyramid[j][x, y, li + 1])
    outGPyramid = [hl.Func(f"outGPyramid_{i}") for i in range(J)]
    outGPyramid[J - 1][x, y] = outLPyramid[J - 1][x, y]
    for j in range(J - 2, -1, -1):
        outGPyramid[j][x, y] = _upsample(outGPyramid[j + 1], x, y)[x, y] + outLPyramid[j][x, y]
    color = hl.Func("color")
    eps = hl.f32(0.01)
    color[x, y, c] = outGPyramid[0][x, y] * (floating[x, y, c] + eps) / (gray[x, y] + eps)
    output = hl.Func("local_laplacian")
    output[x, y, c] = hl.u16(hl.clamp(color[x, y, c], 0.0, 1.0) * 65535.0)

    # upstream's CPU schedule
    remap.compute_root()
    yo = hl.Var("yo")
    s = output.reorder(c, x, y).split(y, yo, y, 64)
    if parallel:
        s.parallel(yo)
    s.vectorize(x, 8)
    s = gray.compute_root()
    if parallel:
        s.parallel(y, 32)
    s.vectorize(x, 8)
    for j in range(1, min(5, J)):
        s = inGPyramid[j].compute_root()
        if parallel:
            s.parallel(y, 32)
        s.vectorize(x, 8)
        s = gPyramid[j].compute_root().reorder_storage(x, k, y).reorder(k, y)
        if parallel:
            s.parallel(y, 8)
        s.vectorize(x, 8)
        outGPyramid[j].store_at(output, yo).compute_at(output, y).fold_storage(y, 4).vectorize(x, 8)
    outGPyramid[0].compute_at(output, y).vectorize(x, 8)
    for j in range(5, J):
        inGPyramid[j].compute_root()
        s = gPyramid[j].compute_root()
        if parallel:
            s.parallel(k)
        outGPyramid[j].compute_root()

    def make_inputs(rng: np.random.Generator, size: Sequence[int]) -> list[Any]:
        img = rng.integers(0, 65536, (3, size[1], size[0]), dtype=np.uint16)
        return [img, 8, 1.0, 1.0]

    return App(NAME, output, (input_buf, levels, alpha, beta), make_inputs, lambda s: [s[0], s[1], 3],
               # float pyramids, quantised to u16 at the end: fast-math contractions may move a value
               # across a rounding boundary
               tolerance=2.0, test_size=(64, 64), timing_size=(768, 512), extra={"J": J})
