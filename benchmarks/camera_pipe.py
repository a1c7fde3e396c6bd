"""camera_pipe (SPEC section 12): an FCam-style ISP from a u16 Bayer image to u8 RGB: hot-pixel
suppression, deinterleave, edge-aware demosaic (u16), a Q8.8 colour matrix computed in f32, a tone
curve LUT computed in f32, and an unsharp-mask sharpen.

The f32 parts are the colour matrix `M` (12 values), the LUT `curve` and the sharpen strength `k`,
each computed once at root from f32 parameters and then used by integer code. HVX uses the source's
HVX variant of the curve: a 128-entry LUT indexed by v/8 with linear interpolation (lutResample = 8);
CPU targets index the 1024-entry LUT directly.

The numpy reference computes those f32 tables in numpy float32 in the source's operation order, with
`pow` by the numpy twin of the powf pitchfork emits on hvx128 (pitchfork/codegen/powf.py; on x86 and
arm64 pitchfork emits Halide 21's own exp/log expansion of pow, as Halide's code does: relative error
~1e-6 against the exact power, far inside the margins below); everything after the
tables is exact int64 arithmetic with the wraps of SPEC 12. Pitchfork compiles the float code of
Halide's simplified statement (constants folded, operations reassociated by Halide) as plain IEEE
operations, so float intermediates may differ from the reference's in the last ulp; only the integer
tables (M, the u8 LUT, k) reach the output, and the tests require them, hence the output, to be
bit-exact, against this reference and against Halide's own realize (libm powf, maybe contracted).
With the driver parameters M's entries are >= 0.009 and the 1024-entry LUT's z*255+0.5 >= 0.003 away
from an integer, so last-ulp differences cannot change them; the HVX 128-entry LUT has one entry on a
boundary (v = 34: g = 0.5 exactly, z*255+0.5 = 128), where all three agree.
"""

from __future__ import annotations

from typing import Any, Sequence

import halide as hl
import numpy as np

from benchmarks.common import V16, Benchmark, ParamSet, as_type, sat, wrap
from pitchfork.codegen.powf import powf_numpy

#: The N900 matrices of the driver, as [r][i] (numpy layout of the Halide [4, 3] buffers).
M3200 = np.array([[1.6697, -0.2693, -0.4004, -42.4346], [-0.3576, 1.0615, 1.5949, -37.1158],
                  [-0.2175, -1.8751, 6.9640, -26.6970]], dtype=np.float32)
M7000 = np.array([[2.2997, -0.4478, 0.1706, -39.0923], [-0.3826, 1.5906, -0.2080, -25.4311],
                  [-0.0888, -0.7344, 2.2832, -20.0826]], dtype=np.float32)


def _lut_resample(isa: str) -> int:
    return 8 if isa == "hvx128" else 1


def _avg(a: Any, b: Any) -> hl.Expr:
    """rounding_halving_add written as the source does: T((widen(a) + b + 1) / 2)."""
    a = a if isinstance(a, hl.Expr) else hl.Expr(a)
    t = a.type()
    return hl.cast(t, (hl.cast(t.with_bits(t.bits() * 2), a) + b + 1) / 2)


def _mux(c: hl.Var, items: Sequence[Any]) -> hl.Expr:
    """hl.mux over Exprs (a FuncRef would select the Tuple overload)."""
    return hl.mux(c, [e if isinstance(e, hl.Expr) else hl.Expr(e) for e in items])


def _blur121(a: Any, b: Any, c: Any) -> hl.Expr:
    return _avg(_avg(a, c), b)


def build(isa: str, pset: ParamSet) -> tuple[Any, list[Any]]:
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    raw = hl.ImageParam(hl.UInt(16), 2, "raw")
    m3200 = hl.ImageParam(hl.Float(32), 2, "matrix_3200")
    m7000 = hl.ImageParam(hl.Float(32), 2, "matrix_7000")
    color_temp = hl.Param(hl.Float(32), "color_temp")
    gamma = hl.Param(hl.Float(32), "gamma")
    contrast = hl.Param(hl.Float(32), "contrast")
    sharpen_strength = hl.Param(hl.Float(32), "sharpen_strength")
    black_level = hl.Param(hl.Int(32), "black_level")
    white_level = hl.Param(hl.Int(32), "white_level")

    # 1-2. Shift by the margin, then clip each pixel to the largest of its 4 same-colour neighbours.
    shifted = hl.Func("shifted")
    shifted[x, y] = raw[x + 16, y + 12]
    den = hl.Func("denoised")
    hot = hl.max(hl.max(shifted[x - 2, y], shifted[x + 2, y]), hl.max(shifted[x, y - 2], shifted[x, y + 2]))
    den[x, y] = hl.clamp(shifted[x, y], 0, hot)

    # 3. Deinterleave into half-resolution planes gr, r, b, gb.
    deint = hl.Func("deinterleaved")
    deint[x, y, c] = _mux(c, [den[2 * x, 2 * y], den[2 * x + 1, 2 * y], den[2 * x, 2 * y + 1],
                                den[2 * x + 1, 2 * y + 1]])
    g_gr, r_r, b_b, g_gb = (hl.Func(n) for n in ("g_gr", "r_r", "b_b", "g_gb"))
    g_gr[x, y] = deint[x, y, 0]
    r_r[x, y] = deint[x, y, 1]
    b_b[x, y] = deint[x, y, 2]
    g_gb[x, y] = deint[x, y, 3]

    # 4. Demosaic (u16; avg = rounding_halving_add, absd is u16, + - wrap).
    g_r, g_b = hl.Func("g_r"), hl.Func("g_b")
    g_r[x, y] = hl.select(hl.absd(g_gr[x + 1, y], g_gr[x, y]) < hl.absd(g_gb[x, y - 1], g_gb[x, y]),
                          _avg(g_gr[x + 1, y], g_gr[x, y]), _avg(g_gb[x, y - 1], g_gb[x, y]))
    g_b[x, y] = hl.select(hl.absd(g_gb[x - 1, y], g_gb[x, y]) < hl.absd(g_gr[x, y + 1], g_gr[x, y]),
                          _avg(g_gb[x - 1, y], g_gb[x, y]), _avg(g_gr[x, y + 1], g_gr[x, y]))
    r_gr = g_gr[x, y] - _avg(g_r[x, y], g_r[x - 1, y]) + _avg(r_r[x - 1, y], r_r[x, y])
    b_gr = g_gr[x, y] - _avg(g_b[x, y], g_b[x, y - 1]) + _avg(b_b[x, y], b_b[x, y - 1])
    r_gb = g_gb[x, y] - _avg(g_r[x, y], g_r[x, y + 1]) + _avg(r_r[x, y], r_r[x, y + 1])
    b_gb = g_gb[x, y] - _avg(g_b[x, y], g_b[x + 1, y]) + _avg(b_b[x, y], b_b[x + 1, y])
    r_b = hl.select(hl.absd(r_r[x, y], r_r[x - 1, y + 1]) < hl.absd(r_r[x - 1, y], r_r[x, y + 1]),
                    g_b[x, y] - _avg(g_r[x, y], g_r[x - 1, y + 1]) + _avg(r_r[x, y], r_r[x - 1, y + 1]),
                    g_b[x, y] - _avg(g_r[x - 1, y], g_r[x, y + 1]) + _avg(r_r[x - 1, y], r_r[x, y + 1]))
    b_r = hl.select(hl.absd(b_b[x, y], b_b[x + 1, y - 1]) < hl.absd(b_b[x + 1, y], b_b[x, y - 1]),
                    g_r[x, y] - _avg(g_b[x, y], g_b[x + 1, y - 1]) + _avg(b_b[x, y], b_b[x + 1, y - 1]),
                    g_r[x, y] - _avg(g_b[x + 1, y], g_b[x, y - 1]) + _avg(b_b[x + 1, y], b_b[x, y - 1]))
    planes = {}
    for name, e in (("r_gr", r_gr), ("b_gr", b_gr), ("r_gb", r_gb), ("b_gb", b_gb), ("r_b", r_b), ("b_r", b_r)):
        planes[name] = hl.Func(name)
        planes[name][x, y] = e

    def interleave(a: hl.Func, b: hl.Func, cc: hl.Func, d: hl.Func) -> hl.Expr:
        """The 2x2 block (a b / cc d) at full resolution, with selects on x%2 and y%2 as the source."""
        # (hl.Expr: a select of two FuncRefs would pick the Tuple overload)
        top = hl.select(x % 2 == 0, hl.Expr(a[x / 2, y / 2]), hl.Expr(b[x / 2, y / 2]))
        bottom = hl.select(x % 2 == 0, hl.Expr(cc[x / 2, y / 2]), hl.Expr(d[x / 2, y / 2]))
        return hl.select(y % 2 == 0, top, bottom)

    p = planes
    dem = hl.Func("demosaiced")
    dem[x, y, c] = hl.i16(_mux(c, [interleave(p["r_gr"], r_r, p["r_b"], p["r_gb"]),
                                     interleave(g_gr, g_r, g_b, g_gb),
                                     interleave(p["b_gr"], p["b_r"], b_b, p["b_gb"])]))

    # 5. Colour matrix: f32 interpolation between the two calibrations in inverse kelvin, Q8.8.
    matrix = hl.Func("matrix")
    alpha = (hl.f32(1) / color_temp - hl.f32(1 / 3200)) / (hl.f32(1 / 7000) - hl.f32(1 / 3200))
    matrix[x, y] = hl.i16((m3200[x, y] * alpha + m7000[x, y] * (hl.f32(1) - alpha)) * hl.f32(256))
    ir, ig, ib = (hl.i32(dem[x, y, k]) for k in range(3))
    chans = [hl.i16((matrix[3, r] + matrix[0, r] * ir + matrix[1, r] * ig + matrix[2, r] * ib) / 256)
             for r in range(3)]
    corr = hl.Func("corrected")
    corr[x, y, c] = _mux(c, chans)

    # 6. Tone curve LUT (f32), indexed directly (CPU) or every 8th value interpolated (HVX).
    res = _lut_resample(isa)
    lo = black_level / res if res > 1 else black_level + 0
    hi = white_level / res if res > 1 else white_level
    inv_range = hl.f32(1) / hl.f32(hi - lo)
    bc = hl.f32(2) - hl.pow(hl.f32(2), contrast / hl.f32(100))
    ac = hl.f32(2) - hl.f32(2) * bc
    xf = hl.clamp(hl.f32(x - lo) * inv_range, hl.f32(0), hl.f32(1))
    g = hl.pow(xf, hl.f32(1) / gamma)
    z = hl.select(g > hl.f32(0.5),
                  hl.f32(1) - (ac * (hl.f32(1) - g) * (hl.f32(1) - g) + bc * (hl.f32(1) - g)),
                  ac * g * g + bc * g)
    val = hl.u8(hl.clamp(z * hl.f32(255) + hl.f32(0.5), hl.f32(0), hl.f32(255)))
    curve = hl.Func("curve")
    curve[x] = hl.select(x <= lo, hl.u8(0), hl.select(x > hi, hl.u8(255), val))
    curved = hl.Func("curved")
    if res == 1:
        curved[x, y, c] = curve[hl.i32(hl.clamp(corr[x, y, c], 0, 1023))]
    else:
        v = hl.Expr(corr[x, y, c])
        u0 = v / res
        u = v % res
        y0 = curve[hl.i32(hl.clamp(u0, 0, 127))]
        y1 = curve[hl.i32(hl.clamp(u0 + 1, 0, 127))]
        curved[x, y, c] = hl.u8((hl.u16(y0) * res + (y1 - y0) * u) / res)

    # 7. Sharpen: unsharp mask weighted by k = u8_sat(strength * 32) in Q5.
    k = hl.Func("sharpen_strength_x32")
    k[()] = hl.u8_sat(sharpen_strength * hl.f32(32))
    unsharp_y = hl.Func("unsharp_y")
    unsharp_y[x, y, c] = _blur121(curved[x, y - 1, c], curved[x, y, c], curved[x, y + 1, c])
    unsharp = hl.Func("unsharp")
    unsharp[x, y, c] = _blur121(unsharp_y[x - 1, y, c], unsharp_y[x, y, c], unsharp_y[x + 1, y, c])
    mask = hl.Func("mask")
    mask[x, y, c] = hl.i16(curved[x, y, c]) - hl.i16(unsharp[x, y, c])
    out = hl.Func("camera_pipe")
    out[x, y, c] = hl.u8_sat(curved[x, y, c] + (mask[x, y, c] * k[()]) / 32)

    _schedule(isa, out, den, deint, g_r, g_b, dem, corr, curved, matrix, curve, k, raw)
    args = [raw, m3200, m7000, color_temp, gamma, contrast, sharpen_strength, black_level, white_level]
    return out, args


def _schedule(isa: str, out: hl.Func, den: hl.Func, deint: hl.Func, g_r: hl.Func, g_b: hl.Func, dem: hl.Func,
              corr: hl.Func, curved: hl.Func, matrix: hl.Func, curve: hl.Func, k: hl.Func,
              raw: hl.ImageParam) -> None:
    """SPEC 12's schedule (the CPU one; HVX with vec = 64), `parallel(yo)` dropped."""
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    xi, yi, yii, yo = hl.Var("xi"), hl.Var("yi"), hl.Var("yii"), hl.Var("yo")
    vec = V16[isa]
    v2 = 2 * vec
    rup = hl.TailStrategy.RoundUp
    matrix.compute_root()
    curve.compute_root()
    k.compute_root()
    out.compute_root().reorder(c, x, y).split(y, yi, yii, 2, rup).split(yi, yo, yi, 16) \
        .vectorize(x, v2, rup).unroll(c)
    den.compute_at(out, yi).store_at(out, yo).prefetch(raw, y, y, 2).fold_storage(y, 4) \
        .tile(x, y, x, y, xi, yi, v2, 2).vectorize(xi).unroll(yi)
    deint.compute_at(out, yi).store_at(out, yo).fold_storage(y, 4).reorder(c, x, y) \
        .vectorize(x, v2, rup).unroll(c)
    for f in (g_r, g_b):
        f.compute_at(out, yi).store_at(out, yo).vectorize(x, v2, rup).fold_storage(y, 4)
    g_b.compute_with(g_r, x, [(x, hl.LoopAlignStrategy.AlignStart), (y, hl.LoopAlignStrategy.AlignStart)])
    dem.compute_at(curved, x).vectorize(x).unroll(y).reorder(c, x, y).unroll(c)
    corr.compute_at(curved, x).reorder(c, x, y).vectorize(x).unroll(c)
    curved.compute_at(out, yi).store_at(out, yo).reorder(c, x, y) \
        .tile(x, y, x, y, xi, yi, v2, 2, rup).vectorize(xi).unroll(yi).unroll(c)
    ob = out.output_buffer()
    out.bound(c, 0, 3).bound(x, 0, (ob.width() / v2) * v2).bound(y, 0, (ob.height() / 32) * 32)


# ---- inputs and the numpy reference -----------------------------------------------------------------

DRIVER: ParamSet = {"color_temp": 3700.0, "gamma": 2.0, "contrast": 50.0, "sharpen_strength": 1.0,
                    "black_level": 25, "white_level": 1023}


def make_inputs(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    """A smooth pattern plus noise, clipped to 10 bits, with about 0.1 % hot pixels (SPEC 12)."""
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    smooth = 512 + 300 * np.sin(xx / 17.0) * np.cos(yy / 11.0) + 150 * np.sin((xx + yy) / 29.0)
    img = np.clip(smooth + rng.normal(0, 40, (h, w)), 0, 1023)
    img[rng.random((h, w)) < 0.001] = 1023
    p = {**DRIVER, **pset}
    return [img.astype(np.uint16), M3200.copy(), M7000.copy(), p["color_temp"], p["gamma"], p["contrast"],
            p["sharpen_strength"], p["black_level"], p["white_level"]]


def output_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    return [(size[0] - 32) // 32 * 32, (size[1] - 24) // 32 * 32, 3]


F = np.float32


def np_matrix(m3200: np.ndarray, m7000: np.ndarray, color_temp: float) -> np.ndarray:
    """M as [r][i], int64: i16((m3200·α + m7000·(1-α))·256) in float32, truncated."""
    t = F(color_temp)
    alpha = (F(1) / t - F(1 / 3200)) / (F(1 / 7000) - F(1 / 3200))
    val = (m3200.astype(F) * alpha + m7000.astype(F) * (F(1) - alpha)) * F(256)
    return np.trunc(val).astype(np.int64)


def _powf(a: Any, b: Any) -> np.ndarray:
    return powf_numpy(a, b)  # the twin of the powf pitchfork emits (within 1 ulp of libm's)


def np_curve(res: int, black: int, white: int, gamma: float, contrast: float) -> np.ndarray:
    """The u8 LUT (1024 entries, or 128 with lutResample 8), int64, in float32 like the pipeline."""
    n = 1024 // res
    lo = black // res
    hi = white // res
    v = np.arange(n, dtype=np.int64)
    inv_range = F(1) / F(hi - lo)
    bc = F(2) - _powf(F(2), F(contrast) / F(100))
    ac = F(2) - F(2) * bc
    xf = np.clip((v - lo).astype(F) * inv_range, F(0), F(1))
    g = _powf(xf, F(1) / F(gamma))
    one_g = F(1) - g
    z = np.where(g > F(0.5), F(1) - (ac * one_g * one_g + bc * one_g), ac * g * g + bc * g).astype(F)
    val = np.trunc(np.clip(z * F(255) + F(0.5), F(0), F(255))).astype(np.int64)
    return np.where(v <= lo, 0, np.where(v > hi, 255, val))


def np_avg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a + b + 1) >> 1  # exact for unsigned inputs; the result fits the input type


def reference_for(res: int, values: Sequence[Any], size_out: Sequence[int]) -> np.ndarray:
    raw, m3200, m7000, color_temp, gamma, contrast, sharpen, black, white = values
    W, H = size_out[0], size_out[1]
    a = np.asarray(raw).astype(np.int64)

    # Full-resolution coordinates X in [-8, W+8), Y in [-8, H+8) cover every stencil below.
    pad = 8
    def sh(dx: int, dy: int) -> np.ndarray:
        return a[12 - pad + dy: 12 + H + pad + dy, 16 - pad + dx: 16 + W + pad + dx]
    # den over [-8+2, ...) would need reads at +-2: compute on the padded window, valid where reads exist.
    hot = np.maximum(np.maximum(sh(-2, 0), sh(2, 0)), np.maximum(sh(0, -2), sh(0, 2)))
    den = np.clip(sh(0, 0), 0, hot)  # den[Y+pad, X+pad]
    # Half resolution: x in [-4, W/2+4), y in [-4, H/2+4); index j = x + 4.
    gr, r, b, gb = den[0::2, 0::2], den[0::2, 1::2], den[1::2, 0::2], den[1::2, 1::2]
    hp = pad // 2

    def at(p: np.ndarray, dx: int, dy: int, m: int = 3) -> np.ndarray:
        """p(x+dx, y+dy) for x in [-m, W/2+m), y in [-m, H/2+m)."""
        return p[hp - m + dy: hp + H // 2 + m + dy, hp - m + dx: hp + W // 2 + m + dx]

    def u16(v: np.ndarray) -> np.ndarray:
        return wrap(v, "u16")

    def absd(p: np.ndarray, q: np.ndarray) -> np.ndarray:
        return np.abs(p - q)

    # g_r, g_b over [-3, W/2+3): need neighbours at +-1 -> inside the 4-pixel margin.
    g_r = np.where(absd(at(gr, 1, 0), at(gr, 0, 0)) < absd(at(gb, 0, -1), at(gb, 0, 0)),
                   np_avg(at(gr, 1, 0), at(gr, 0, 0)), np_avg(at(gb, 0, -1), at(gb, 0, 0)))
    g_b = np.where(absd(at(gb, -1, 0), at(gb, 0, 0)) < absd(at(gr, 0, 1), at(gr, 0, 0)),
                   np_avg(at(gb, -1, 0), at(gb, 0, 0)), np_avg(at(gr, 0, 1), at(gr, 0, 0)))

    def at3(p: np.ndarray, dx: int, dy: int) -> np.ndarray:
        """p (given on [-3, W/2+3)) at (x+dx, y+dy) for x in [-2, W/2+2)."""
        return p[1 + dy: 1 + H // 2 + 4 + dy, 1 + dx: 1 + W // 2 + 4 + dx]

    def at2(p: np.ndarray, dx: int, dy: int) -> np.ndarray:
        return at(p, dx, dy, 2)

    r_gr = u16(at2(gr, 0, 0) - np_avg(at3(g_r, 0, 0), at3(g_r, -1, 0)) + np_avg(at2(r, -1, 0), at2(r, 0, 0)))
    b_gr = u16(at2(gr, 0, 0) - np_avg(at3(g_b, 0, 0), at3(g_b, 0, -1)) + np_avg(at2(b, 0, 0), at2(b, 0, -1)))
    r_gb = u16(at2(gb, 0, 0) - np_avg(at3(g_r, 0, 0), at3(g_r, 0, 1)) + np_avg(at2(r, 0, 0), at2(r, 0, 1)))
    b_gb = u16(at2(gb, 0, 0) - np_avg(at3(g_b, 0, 0), at3(g_b, 1, 0)) + np_avg(at2(b, 0, 0), at2(b, 1, 0)))
    r_b = np.where(absd(at2(r, 0, 0), at2(r, -1, 1)) < absd(at2(r, -1, 0), at2(r, 0, 1)),
                   u16(at3(g_b, 0, 0) - np_avg(at3(g_r, 0, 0), at3(g_r, -1, 1)) + np_avg(at2(r, 0, 0), at2(r, -1, 1))),
                   u16(at3(g_b, 0, 0) - np_avg(at3(g_r, -1, 0), at3(g_r, 0, 1)) + np_avg(at2(r, -1, 0), at2(r, 0, 1))))
    b_r = np.where(absd(at2(b, 0, 0), at2(b, 1, -1)) < absd(at2(b, 1, 0), at2(b, 0, -1)),
                   u16(at3(g_r, 0, 0) - np_avg(at3(g_b, 0, 0), at3(g_b, 1, -1)) + np_avg(at2(b, 0, 0), at2(b, 1, -1))),
                   u16(at3(g_r, 0, 0) - np_avg(at3(g_b, 1, 0), at3(g_b, 0, -1)) + np_avg(at2(b, 1, 0), at2(b, 0, -1))))
    gr2, r2, b2, gb2, g_r2, g_b2 = at2(gr, 0, 0), at2(r, 0, 0), at2(b, 0, 0), at2(gb, 0, 0), at3(g_r, 0, 0), at3(g_b, 0, 0)

    def interleave(p00: np.ndarray, p10: np.ndarray, p01: np.ndarray, p11: np.ndarray) -> np.ndarray:
        out = np.empty((2 * p00.shape[0], 2 * p00.shape[1]), np.int64)
        out[0::2, 0::2], out[0::2, 1::2], out[1::2, 0::2], out[1::2, 1::2] = p00, p10, p01, p11
        return out  # full resolution X in [-4, W+4)

    R = interleave(r_gr, r2, r_b, r_gb)
    G = interleave(gr2, g_r2, g_b2, gb2)
    B = interleave(b_gr, b_r, b2, b_gb)
    dem = [wrap(ch, "i16") for ch in (R, G, B)]

    M = np_matrix(np.asarray(m3200), np.asarray(m7000), color_temp)
    corr = [wrap(M[ch][3] + M[ch][0] * dem[0] + M[ch][1] * dem[1] + M[ch][2] * dem[2] // 1 * 1, "i32")
            for ch in range(3)]
    corr = [wrap(np.floor_divide(v, 256), "i16") for v in corr]

    lut = np_curve(res, black, white, gamma, contrast)
    if res == 1:
        curved = [lut[np.clip(v, 0, 1023)] for v in corr]
    else:
        curved = []
        for v in corr:
            u0, u = np.floor_divide(v, res), np.mod(v, res)
            y0, y1 = lut[np.clip(u0, 0, 127)], lut[np.clip(u0 + 1, 0, 127)]
            s = wrap(y0 * res + wrap(wrap(y1 - y0, "u8") * u, "i16"), "i16")
            curved.append(wrap(np.floor_divide(s, res), "u8"))

    kq = int(sat(np.trunc(np.clip(F(sharpen) * F(32), -1e9, 1e9)), "u8"))  # u8_sat of the f32 product
    out = np.empty((3, H, W), np.int64)
    for ch in range(3):
        cv = curved[ch]  # X, Y in [-4, W+4)
        n = cv.shape[0]
        uy = np_avg(np_avg(cv[0:n - 2], cv[2:n]), cv[1:n - 1])  # rows Y in [-3, H+3)
        un = np_avg(np_avg(uy[:, 0:-2], uy[:, 2:]), uy[:, 1:-1])  # X in [-3, W+3)
        c0 = cv[1:-1, 1:-1]
        mask = wrap(c0 - un, "i16")
        o = sat(wrap(c0 + np.floor_divide(wrap(mask * kq, "i16"), 32), "i16"), "u8")
        out[ch] = o[3: 3 + H, 3: 3 + W]
    return as_type(out, "u8")


def reference(values: Sequence[Any], pset: ParamSet) -> np.ndarray:
    """The CPU variant (lutResample 1)."""
    return reference_for(1, values, output_size(np.asarray(values[0]).shape[::-1], pset))


def isa_reference(values: Sequence[Any], pset: ParamSet, isa: str) -> np.ndarray:
    return reference_for(_lut_resample(isa), values, output_size(np.asarray(values[0]).shape[::-1], pset))


BENCHMARK = Benchmark(
    name="camera_pipe", section=12, build=build, make_inputs=make_inputs, output_size=output_size,
    reference=reference, isa_reference=isa_reference, param_sets=({},),
    # Output 128 x 32 x 3 (x a multiple of every ISA's 2·vec, y of the 32-row strips).
    test_size=(160, 56), odd_size=None,
    timing_size=(2592, 1968), quick_size=(672, 280),
    idioms=("rounding_halving_add", "absd", "min", "max", "widening_mul", "saturating_cast"),
)
