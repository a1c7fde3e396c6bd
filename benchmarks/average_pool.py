"""average_pool (SPEC section 4): quantized 2-D average pooling over in-bounds taps (hannk AVERAGE_POOL_2D)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V8, Benchmark, ParamSet

SCALARS = ("stride_x", "stride_y", "filter_w", "filter_h", "out_min", "out_max")
_TYPES = (hl.Int(32), hl.Int(32), hl.Int(32), hl.Int(32), hl.UInt(8), hl.UInt(8))


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    c, x, y, b = hl.Var("c"), hl.Var("x"), hl.Var("y"), hl.Var("b")
    inp = hl.ImageParam(hl.UInt(8), 4, "input")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    sx, sy, fw, fh = p["stride_x"], p["stride_y"], p["filter_w"], p["filter_h"]
    x0, y0 = inp.dim(1).min(), inp.dim(2).min()
    x1, y1 = inp.dim(1).max(), inp.dim(2).max()

    clamped = hl.Func("clamped")
    clamped[c, x, y, b] = inp[c, hl.clamp(x, x0, x1), hl.clamp(y, y0, y1), b]
    r = hl.RDom([(0, fw), (0, fh)], "r")
    rx, ry = x * sx + r.x, y * sy + r.y
    r.where(x0 <= rx)
    r.where(rx <= x1)
    r.where(y0 <= ry)
    r.where(ry <= y1)
    total = hl.Func("sum")
    total[c, x, y, b] = hl.u16(0)
    total[c, x, y, b] += hl.u16(clamped[c, rx, ry, b])

    n = (hl.min(x * sx + fw, x1 + 1) - hl.max(x * sx, x0)) * (hl.min(y * sy + fh, y1 + 1) - hl.max(y * sy, y0))
    inv = hl.u16_sat((2**17 + n) / (2 * n))
    avg = hl.rounding_mul_shift_right(total[c, x, y, b], inv, 16)
    out = hl.Func("average_pool")
    out[c, x, y, b] = hl.clamp(hl.u8_sat(avg), p["out_min"], p["out_max"])

    out.compute_root().reorder(c, b, x, y)
    v = V8[isa]
    for k in (4, 2, 1):
        out.specialize(out.output_buffer().dim(0).extent() >= v * k).vectorize(c, v * k, hl.TailStrategy.ShiftInwards)
    return out, [inp] + [p[n] for n in SCALARS]


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    ch, w, h, nb = size
    return [rng.integers(0, 256, (nb, h, w, ch), dtype=np.uint8)] + [pset[n] for n in SCALARS]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    ch, w, h, nb = size
    return [ch, -(-w // pset["stride_x"]), -(-h // pset["stride_y"]), nb]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, sx, sy, fw, fh, lo, hi = values
    a = np.asarray(a, np.int64)
    nb, h, w, ch = a.shape
    ow, oh = -(-w // sx), -(-h // sy)
    out = np.zeros((nb, oh, ow, ch), np.uint8)
    for oy in range(oh):
        ya, yb = max(oy * sy, 0), min(oy * sy + fh, h)
        for ox in range(ow):
            xa, xb = max(ox * sx, 0), min(ox * sx + fw, w)
            n = max(xb - xa, 0) * max(yb - ya, 0)
            total = a[:, ya:yb, xa:xb, :].sum(axis=(1, 2)) & 0xFFFF
            inv = min(65535, (131072 + n) // (2 * n)) if n > 0 else 0
            avg = np.minimum(65535, (total * inv + 32768) >> 16)
            out[:, oy, ox, :] = np.clip(np.minimum(avg, 255), lo, hi)
    return out


BENCHMARK = Benchmark(
    name="average_pool", section=4, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference,
    param_sets=(
        dict(stride_x=2, stride_y=2, filter_w=8, filter_h=8, out_min=5, out_max=225),
        dict(stride_x=3, stride_y=2, filter_w=5, filter_h=3, out_min=0, out_max=255),
    ),
    test_size=(128, 20, 20, 2), odd_size=(67, 13, 11, 1), timing_size=(64, 512, 512, 4),
    quick_size=(64, 128, 128, 1),
    idioms=("extending_add", "rounding_mul_shr", "saturating_cast"),
)
