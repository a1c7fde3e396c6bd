"""Small reference pipelines written with Halide's Python bindings (tests, demo, capture examples).

Each builder returns `(output_func, [arguments...])`, ready for `capture_stmt` or `compile`. The
vector width is a parameter; `LANES[isa]` gives the paper's width for each ISA alias of
`pitchfork.frontend.capture.TARGET_ALIASES`. Every call builds fresh Funcs (Halide then names a second
`sobel` `sobel$1`, which is harmless).
"""

from __future__ import annotations

import halide as hl
import numpy as np

#: The paper's vector width for the Sobel schedule (u8 lanes): 2 HVX vectors on Hexagon (SPEC §17).
SOBEL_LANES: dict[str, int] = {"x86-avx2": 32, "arm64": 16, "hvx128": 256}
#: Natural u8 width of each ISA (V8 in the benchmark spec).
LANES: dict[str, int] = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}


def sobel3x3(lanes: int = 16, *, hvx: bool | None = None) -> tuple[hl.Func, list[hl.ImageParam]]:
    """Sobel |Gx| + |Gy| on u8, saturated to u8 (paper Fig. 2, SPEC §17).

    Schedule: the repeat_edge input is computed per tile row with storage aligned to 128 and
    vectorized by `lanes` (RoundUp); the output is tiled lanes×4 (RoundUp), vectorized in x and
    unrolled in y; everything else is inlined. With `hvx` (default: lanes >= 128) the row strides
    are declared multiples of `lanes`, as the HVX schedule does. The same algorithm and schedule as
    the generator examples/aot/sobel_generator.py (at the natural width there), which stays plain
    Halide and so cannot import this; both are checked against `sobel3x3_reference`.
    """
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    v = hl.Func("v")
    v[x, y] = hl.u16(edge[x, y])
    hx = hl.Func("hx")
    hx[x, y] = v[x - 1, y] + 2 * v[x, y] + v[x + 1, y]
    hy = hl.Func("hy")
    hy[x, y] = v[x, y - 1] + 2 * v[x, y] + v[x, y + 1]
    sx = hl.Func("sx")
    sx[x, y] = hl.absd(hx[x, y - 1], hx[x, y + 1])
    sy = hl.Func("sy")
    sy[x, y] = hl.absd(hy[x - 1, y], hy[x + 1, y])
    out = hl.Func("sobel")
    out[x, y] = hl.u8(hl.clamp(sx[x, y] + sy[x, y], 0, 255))

    out.tile(x, y, xi, yi, lanes, 4, hl.TailStrategy.RoundUp).vectorize(xi).unroll(yi)
    ex = edge.args()[0]
    edge.compute_at(out, y).align_storage(ex, 128).vectorize(ex, lanes, hl.TailStrategy.RoundUp)
    if hvx if hvx is not None else lanes >= 128:
        inp.dim(1).set_stride((inp.dim(1).stride() / lanes) * lanes)
        ob = out.output_buffer()
        ob.dim(1).set_stride((ob.dim(1).stride() / lanes) * lanes)
    return out, [inp]


def sobel3x3_reference(a: np.ndarray) -> np.ndarray:
    """SPEC §17's numpy check for sobel3x3: edge-pad by 1, int64, |Gx| + |Gy| clipped to u8."""
    p = np.pad(a.astype(np.int64), 1, mode="edge")
    hx = p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]
    sx = np.abs(hx[:-2] - hx[2:])
    hy = p[:-2] + 2 * p[1:-1] + p[2:]
    sy = np.abs(hy[:, :-2] - hy[:, 2:])
    return np.clip(sx + sy, 0, 255).astype(np.uint8)


def blur3x3(lanes: int = 16, *, hvx: bool = False) -> tuple[hl.Func, list[hl.ImageParam]]:
    """The classic u16 3×3 box blur (SPEC §13): two passes, each dividing by 3.

    CPU schedule: the output is split into 32-row strips and vectorized by `lanes`; `blur_x` is
    stored per strip and computed per output vector (a sliding window). HVX schedule: the output is
    split by 128 rows, `blur_x` computed per row, with a 2-row prefetch of the input.
    """
    x, y, yi = hl.Var("x"), hl.Var("y"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    bx = hl.Func("blur_x")
    out = hl.Func("blur_y")
    bx[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    out[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    if hvx:
        out.split(y, y, yi, 128).vectorize(x, lanes).prefetch(inp, y, y, 2)
        bx.store_at(out, y).compute_at(out, yi).vectorize(x, lanes)
    else:
        out.split(y, y, yi, 32).vectorize(x, lanes)
        bx.store_at(out, y).compute_at(out, x).vectorize(x, lanes)
    return out, [inp]


def box_sum_reduction(lanes: int = 16) -> tuple[hl.Func, list[hl.ImageParam]]:
    """Reductions over RDoms, computed at root: a u16 3×3 box sum and a u32 column sum of 8 rows,
    both vectorized in their pure and update definitions, combined into a u8 output."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    r = hl.RDom([(0, 3), (0, 3)], "r")
    box = hl.Func("box_sum")
    box[x, y] = hl.u16(0)
    box[x, y] += hl.u16(inp[x + r.x, y + r.y])
    ry = hl.RDom([(0, 8)], "ry")
    col = hl.Func("col_sum")
    col[x] = hl.u32(0)
    col[x] += hl.u32(inp[x, ry])
    out = hl.Func("reduced")
    out[x, y] = hl.u8((box[x, y] + hl.u16(col[x] & 0xFF)) >> 4)
    box.compute_root().vectorize(x, lanes).update().vectorize(x, lanes)
    col.compute_root().vectorize(x, lanes).update().vectorize(x, lanes)
    out.vectorize(x, lanes)
    return out, [inp]


def clamped_boundary(lanes: int = 16) -> tuple[hl.Func, list[hl.ImageParam | hl.Param]]:
    """Boundary conditions: a [1 2 1] filter of an i16 image read through `constant_exterior` (value
    -5), plus a `clamp`ed (data-independent) access, scaled by a runtime i16 `k`, saturated to i8;
    vectorized with GuardWithIf, so tails are predicated."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Int(16), 2, "input")
    k = hl.Param(hl.Int(16), "k")
    ext = hl.BoundaryConditions.constant_exterior(inp, hl.i16(-5))
    out = hl.Func("clamped")
    acc = hl.i32(ext[x - 1, y]) + 2 * hl.i32(ext[x, y]) + hl.i32(ext[x + 1, y])
    clamped = inp[hl.clamp(x, 0, inp.width() - 1), hl.clamp(y + 1, 0, inp.height() - 1)]
    out[x, y] = hl.saturating_cast(hl.Int(8), (acc + hl.i32(clamped) * hl.i32(k)) >> 2)
    out.vectorize(x, lanes, hl.TailStrategy.GuardWithIf)
    return out, [inp, k]
