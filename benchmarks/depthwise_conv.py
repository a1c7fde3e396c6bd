"""depthwise_conv (SPEC section 8): quantized depthwise 2-D convolution, MobileNet style
(hannk DEPTHWISE_CONV_2D). The input is pre-padded by the caller (no boundary handling)."""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V8, V16, V32, Benchmark, ParamSet
from benchmarks.fixed_point import np_requantize, requantize

SCALARS = ("in_zero", "filter_zero", "depth_multiplier", "stride_x", "stride_y", "dilation_x", "dilation_y",
           "out_mult", "out_shift", "out_zero", "out_min", "out_max")
_TYPES = (hl.UInt(8), hl.UInt(8), hl.Int(32), hl.Int(32), hl.Int(32), hl.Int(32), hl.Int(32), hl.Int(32),
          hl.UInt(32), hl.UInt(8), hl.UInt(8), hl.UInt(8))
#: channel vector width: V8, or V16 when the target has fewer than 32 vector registers (AVX2)
VECTOR = {"x86-avx2": V16["x86-avx2"], "arm64": V8["arm64"], "hvx128": V8["hvx128"]}


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    c, x, y, b = hl.Var("c"), hl.Var("x"), hl.Var("y"), hl.Var("b")
    co, xo, yo = hl.Var("co"), hl.Var("xo"), hl.Var("yo")
    inp = hl.ImageParam(hl.UInt(8), 4, "input")
    filt = hl.ImageParam(hl.UInt(8), 3, "filter")
    bias = hl.ImageParam(hl.Int(32), 1, "bias")
    p = {n: hl.Param(t, n) for n, t in zip(SCALARS, _TYPES)}
    dm = p["depth_multiplier"]
    inp.dim(0).set_min(0).set_stride(1)
    for d in range(3):
        filt.dim(d).set_min(0)
    fw, fh = filt.dim(1).extent(), filt.dim(2).extent()

    fzd = hl.Func("filter_zeroed")
    fzd[c, x, y] = hl.i16(filt[c, x, y]) - hl.i16(p["filter_zero"])
    r = hl.RDom([(0, fw), (0, fh)], "r")
    sum_f = hl.Func("sum_filter")
    sum_f[c] = hl.i32(0)
    sum_f[c] += hl.i32(fzd[c, r.x, r.y])
    off = hl.Func("offset_c")
    off[c] = bias[c] - sum_f[c] * hl.i32(p["in_zero"])
    resampled = hl.Func("resampled_input")
    resampled[c, x, y, b] = inp[c / dm, x, y, b]
    acc = hl.Func("convolved")
    acc[c, x, y, b] = off[c]
    acc[c, x, y, b] += (hl.i32(fzd[c, r.x, r.y])
                        * hl.i32(resampled[c, x * p["stride_x"] + r.x * p["dilation_x"],
                                           y * p["stride_y"] + r.y * p["dilation_y"], b]))
    out = hl.Func("depthwise_conv")
    out[c, x, y, b] = requantize(acc[c, x, y, b], p["out_mult"], p["out_shift"], p["out_zero"], p["out_min"],
                                 p["out_max"])

    # ---- schedule (hannk's, parallel dropped) ----
    v = VECTOR[isa]
    ob = out.output_buffer()
    channels, width, height = ob.dim(0).extent(), ob.dim(1).extent(), ob.dim(2).extent()
    usable = ((width >= 8) | (width % 2 == 0)) & ((height >= 8) | (height % 2 == 0))
    out.compute_root()
    out.specialize((channels >= v) & usable) \
        .tile(x, y, xo, yo, x, y, 2, 2, hl.TailStrategy.ShiftInwards) \
        .split(c, co, c, v, hl.TailStrategy.ShiftInwards) \
        .reorder(x, y, c, xo, yo, b, co).unroll(x).unroll(y).vectorize(c)
    out.specialize(channels >= v) \
        .tile(x, y, xo, yo, x, y, 1, 1, hl.TailStrategy.ShiftInwards) \
        .split(c, co, c, v, hl.TailStrategy.ShiftInwards) \
        .reorder(x, y, c, xo, yo, b, co).vectorize(c)
    out.tile(x, y, xo, yo, x, y, 1, 1).split(c, co, c, v, hl.TailStrategy.Predicate) \
        .reorder(x, y, c, xo, yo, b, co).vectorize(c)

    acc.compute_at(out, xo).store_in(hl.MemoryType.Register).bound_extent(c, v) \
        .vectorize(c).unroll(x).unroll(y)
    acc.update().reorder(x, y, r.x, r.y).vectorize(c).unroll(x).unroll(y)
    acc.update().specialize((fw == 3) & (fh == 3)).unroll(r.x).unroll(r.y)
    resampled.compute_at(out, b).store_in(hl.MemoryType.Stack) \
        .vectorize(c, v, hl.TailStrategy.GuardWithIf)
    resampled.specialize(dm == 1)
    fzd.compute_at(out, co).store_in(hl.MemoryType.Stack) \
        .vectorize(c, V16[isa], hl.TailStrategy.GuardWithIf).unroll(c, 2, hl.TailStrategy.GuardWithIf)
    # HVX: the offsets (and the filter sums computed inside them) in one register of i32 lanes instead of
    # V = 128: LLVM 22's Hexagon backend aborts ("Couldn't find the register class") on the 128-lane
    # i32 multiply sum_f * in_zero fed by a loop-carried sum (reduced test case in the commit message).
    off.compute_at(out, co).vectorize(c, V32[isa] if isa == "hvx128" else v, hl.TailStrategy.GuardWithIf)
    return out, [inp, filt, bias] + [p[n] for n in SCALARS]


def _out_extent(n_in: int, taps: int, stride: int, dilation: int) -> int:
    return (n_in - (taps - 1) * dilation - 1) // stride + 1


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    """`size` is (output channels, padded input width, padded input height, batches)."""
    ch, w, h, nb = size
    k, dm = pset["filter_size"], pset["depth_multiplier"]
    ci = -(-ch // dm)
    return [rng.integers(0, 256, (nb, h, w, ci), dtype=np.uint8), rng.integers(0, 256, (k, k, ch), dtype=np.uint8),
            rng.integers(-1000, 1000, ch, dtype=np.int32)] + [pset[n] for n in SCALARS]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    ch, w, h, nb = size
    k = pset["filter_size"]
    return [ch, _out_extent(w, k, pset["stride_x"], pset["dilation_x"]),
            _out_extent(h, k, pset["stride_y"], pset["dilation_y"]), nb]


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    a, f, bias, iz, fz, dm, sx, sy, dx, dy, mult, shift, oz, lo, hi = values
    a, f = np.asarray(a, np.int64), np.asarray(f, np.int64)
    nb, h, w, _ = a.shape
    fh, fw, ch = f.shape
    ow, oh = _out_extent(w, fw, sx, dx), _out_extent(h, fh, sy, dy)
    src = a[..., np.arange(ch) // dm] - iz  # [b][y][x][c], the input channel of each output channel
    acc = np.broadcast_to(np.asarray(bias, np.int64), (nb, oh, ow, ch)).copy()
    for j in range(fh):
        for i in range(fw):
            tap = src[:, j * dy: j * dy + (oh - 1) * sy + 1: sy, i * dx: i * dx + (ow - 1) * sx + 1: sx, :]
            acc += (f[j, i, :] - fz) * tap
    return np_requantize(acc, mult, shift, oz, lo, hi).astype(np.uint8)


_DRIVER = dict(in_zero=3, filter_zero=5, out_zero=3, out_min=5, out_max=250, out_mult=2**30, out_shift=8)
BENCHMARK = Benchmark(
    name="depthwise_conv", section=8, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference,
    param_sets=(
        dict(_DRIVER, filter_size=3, depth_multiplier=1, stride_x=1, stride_y=1, dilation_x=1, dilation_y=1),
        dict(_DRIVER, filter_size=5, depth_multiplier=2, stride_x=2, stride_y=2, dilation_x=2, dilation_y=2),
    ),
    test_size=(128, 20, 20, 2), odd_size=(37, 17, 15, 1), timing_size=(256, 114, 114, 4),
    quick_size=(256, 58, 58, 1),
    idioms=("widening_sub", "widening_mul", "extending_add", "rounding_mul_shr", "rounding_shr",
            "saturating_cast", "saturating_add"),
)
