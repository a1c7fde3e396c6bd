"""Pipelines whose captured statements are kept as golden files in `data/` (shared by the capture
tests, which re-capture and compare, and by `PITCHFORK_REGEN_GOLDEN=1`, which rewrites them).

The four pipelines of the issue (Sobel, blur, a compute_root reduction, clamped boundaries) come from
`pitchfork.frontend.examples`; the rest exercise statement forms the parser must know: async producers
(fork/acquire), lane shuffles, vector reductions, Tuple outputs, specializations (if/else if/else),
64-bit constants and let-expressions, predicated tails, and the Hexagon offload loop (`for<Hexagon>`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import halide as hl

from pitchfork.frontend import examples as ex

x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")


def async_fork(lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.UInt(16), 2, "a")
    p = hl.Func("p")
    p[x, y] = inp[x, y] * 2
    q = hl.Func("q")
    q[x, y] = p[x, y] + p[x, y + 1]
    yo, yi = hl.Var("yo"), hl.Var("yi")
    q.split(y, yo, yi, 8).parallel(yo).vectorize(x, lanes)
    p.compute_at(q, yi).store_at(q, yo).fold_storage(y, 4).async_().vectorize(x, lanes)
    return q, [inp]


def shuffles(lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.UInt(8), 3, "a")
    f = hl.Func("swap")
    f[c, x] = inp[2 - c, x, 0] + inp[c, x, 0]
    f.bound(c, 0, 3).reorder(c, x).unroll(c).vectorize(x, lanes)
    g = hl.Func("inter")
    g[x, y] = hl.select(x % 2 == 0, hl.Expr(f[0, x / 2]), hl.Expr(f[1, x / 2])) + hl.u8(x > y)
    g.vectorize(x, 2 * lanes)
    f.compute_at(g, y)
    return g, [inp]


def vector_reduce(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.UInt(8), 2, "a")
    r = hl.RDom([(0, lanes)], "r")
    f = hl.Func("dot")
    f[y] = hl.u32(0)
    f[y] += hl.u32(inp[r, y]) * hl.u32(inp[r, y + 1])
    f.update().atomic().vectorize(r, lanes)
    return f, [inp]


def tuple_output(lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.Int(32), 1, "a")
    f = hl.Func("tup")
    f[x] = (inp[x] + 1, hl.f32(inp[x]) * 0.25)
    f.vectorize(x, lanes)
    return f, [inp]


def specialized(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.UInt(8), 2, "a")
    p = hl.Param(hl.Int(32), "p")
    f = hl.Func("sp")
    f[x, y] = inp[x, y] + hl.u8(p)
    f.specialize(p > 3).vectorize(x, lanes)
    f.specialize(p == 0).vectorize(x, lanes // 2)
    return f, [inp, p]


def wide_constants(lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.Int(16), 2, "inp")
    p8 = hl.Param(hl.UInt(8), "p8")
    f = hl.Func("wide")
    a = inp[x, y]
    e = a * inp[x + 1, y]
    f[x, y] = (
        hl.select(a > 3, hl.i64(a) * hl.i64(-7) + hl.i64(1 << 40), hl.i64(hl.u64(a) & hl.u64(0xFFFF)))
        + hl.i64(hl.u64(a) * hl.u64(18000000000000000000))
        + hl.i64((a & 0x0F0F) | (a ^ 5))
        + hl.i64(~a)
        + hl.i64(a >> hl.i16(p8))
        + hl.i64(hl.select(e > 10, e, e * 2))
        + hl.i64(hl.f32(a) * hl.f32(0.5))
        + hl.i64(hl.f64(a) * hl.f64(1.25))
        + hl.i64(hl.select((a < 2) | (a > 9) & (a != 4), 1, 0))
        + hl.i64(-a)
    )
    f.vectorize(x, lanes, hl.TailStrategy.GuardWithIf).parallel(y)
    return f, [inp, p8]


def lut_predicated(lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    rgb = hl.ImageParam(hl.UInt(8), 3, "rgb")
    lut = hl.ImageParam(hl.UInt(16), 1, "lut")
    g = hl.Func("g")
    g[x, y, c] = rgb[x, y, c]
    f = hl.Func("gray")
    f[x, y] = hl.u16(g[x, y, 0]) * 77 + hl.u16(g[x, y, 1]) * 150 + lut[hl.i32(rgb[x, y, 2])]
    f.vectorize(x, lanes, hl.TailStrategy.Predicate)
    g.compute_at(f, y).reorder(c, x, y).vectorize(x, lanes).store_in(hl.MemoryType.Stack).bound(c, 0, 3)
    g.unroll(c)
    return f, [rgb, lut]


def sobel_offload() -> tuple[hl.Func, list[Any]]:
    out, args = ex.sobel3x3(128)
    out.hexagon()
    return out, args


@dataclass(frozen=True)
class Case:
    build: Callable[[], tuple[hl.Func, list[Any]]]
    target: str
    lanes: int  # the vector width of the output's inner loop


CASES: dict[str, Case] = {
    "sobel_x86-avx2": Case(lambda: ex.sobel3x3(32), "x86-avx2", 32),
    "sobel_arm64": Case(lambda: ex.sobel3x3(16), "arm64", 16),
    "sobel_hvx128": Case(lambda: ex.sobel3x3(256), "hvx128", 256),
    "blur3x3_x86-avx2": Case(lambda: ex.blur3x3(32), "x86-avx2", 32),
    "blur3x3_hvx128": Case(lambda: ex.blur3x3(64, hvx=True), "hvx128", 64),
    "box_sum_reduction_arm64": Case(lambda: ex.box_sum_reduction(16), "arm64", 16),
    "clamped_boundary_x86-avx2": Case(lambda: ex.clamped_boundary(16), "x86-avx2", 16),
    "async_fork_x86-avx2": Case(async_fork, "x86-avx2", 8),
    "shuffles_arm64": Case(shuffles, "arm64", 16),
    "vector_reduce_x86-avx2": Case(vector_reduce, "x86-avx2", 1),
    "tuple_output_arm64": Case(tuple_output, "arm64", 8),
    "specialized_x86-avx2": Case(specialized, "x86-avx2", 16),
    "wide_constants_x86-avx2": Case(wide_constants, "x86-avx2", 8),
    "lut_predicated_arm64": Case(lut_predicated, "arm64", 8),
    "sobel_offload_x86-hvx": Case(sobel_offload, "x86-64-linux-hvx-hvx_128", 128),
}
