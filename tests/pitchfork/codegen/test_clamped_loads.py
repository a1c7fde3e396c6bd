"""Clamped dense loads on HVX (codegen_memory._clamped_ramp_load): the border tiles of `repeat_edge`
and `clamp` boundary conditions read `buf[clamp(ramp(b, 1, L), lo, hi) + off]`; on hvx128 that is one
vector load plus two broadcasts instead of an L-lane gather loop. Bit-exact against Halide's
numpy on images narrower than a vector, tiles wholly outside the image, clamps whose
bounds cross (hi < lo, from runtime parameters) and 8/16/32-bit elements."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu toolchain for hvx128")]

x, y = hl.Var("x"), hl.Var("y")
RNG = np.random.default_rng(77)


def edge_sum(t: Any, lanes: int) -> tuple[hl.Func, list[Any]]:
    """out(x, y) = e(x - 3, y) + e(x + 5, y) with e = repeat_edge(input): border tiles clamp both ways."""
    inp = hl.ImageParam(t, 2, "input")
    e = hl.BoundaryConditions.repeat_edge(inp)
    f = hl.Func("f")
    f[x, y] = e[x - 3, y] + e[x + 5, y]
    f.vectorize(x, lanes, hl.TailStrategy.ShiftInwards)
    return f, [inp]


def param_clamp(lanes: int) -> tuple[hl.Func, list[Any]]:
    """out(x, y) = input(clamp(x + 1, lo, hi), y) with runtime lo and hi (they may cross)."""
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    lo, hi = hl.Param(hl.Int(32), "lo"), hl.Param(hl.Int(32), "hi")
    f = hl.Func("g")
    f[x, y] = inp[hl.clamp(x + 1, lo, hi), y] ^ hl.u8(7)
    f.vectorize(x, lanes, hl.TailStrategy.GuardWithIf)
    return f, [inp, lo, hi]


def edge_reference(a: np.ndarray, out_w: int) -> np.ndarray:
    w = a.shape[1]
    xs = np.arange(out_w)
    left = a[:, np.clip(xs - 3, 0, w - 1)].astype(np.int64)
    right = a[:, np.clip(xs + 5, 0, w - 1)].astype(np.int64)
    return ((left + right) % (1 << (8 * a.itemsize))).astype(a.dtype)


@pytest.mark.parametrize(("dtype", "lanes"), [("uint8", 256), ("uint16", 64), ("int32", 32)])
@pytest.mark.parametrize("width", [5, 130, 301])
def test_repeat_edge_border_tiles(dtype: str, lanes: int, width: int) -> None:
    t = {"uint8": hl.UInt(8), "uint16": hl.UInt(16), "int32": hl.Int(32)}[dtype]
    f, args = edge_sum(t, lanes)
    prog = pitchfork.compile(f, args, target="hvx128", name="edge_sum")
    assert "lanes_end" not in prog.llvm_ir()  # no gather lane loop: the fast path was taken
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, size=(3, width), endpoint=True, dtype=dtype)
    out_w = 2 * lanes + 7  # wider than the input: whole tiles right of the image
    got = prog(a, size=[out_w, 3])
    assert np.array_equal(got, edge_reference(a, out_w))


@pytest.mark.parametrize(("lo", "hi"), [(0, 199), (40, 90), (90, 40), (0, 0), (650, 699)])
def test_runtime_clamp_bounds(lo: int, hi: int) -> None:
    f, args = param_clamp(128)
    prog = pitchfork.compile(f, args, target="hvx128", name="param_clamp")
    a = RNG.integers(0, 255, size=(2, 700), endpoint=True, dtype=np.uint8)
    got = prog(a, lo, hi, size=[300, 2])
    xs = np.clip(np.arange(300) + 1, lo, hi) if lo <= hi else np.full(300, lo)
    want = a[:, xs] ^ np.uint8(7)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("target", ["hvx128", "x86-avx2"])
@pytest.mark.parametrize("width", [5, 40])
def test_narrow_image_tile_at_its_top_clamp(target: str, width: int) -> None:
    """A vector whose base B equals HI - n + 1 on an image narrower than the vector (HI - LO < n - 1):
    then s = clamp(B, LO, HI - n + 1) = B although B's first lanes lie below LO, so `B = s` alone does
    not mean "no lane clamped" (a small pyramid level of local_laplacian on hvx128 read its border
    unclamped after b9c951d took the unchecked dense load on `B = s` alone, before the range and bounds
    checks; that change is reverted, and this test fails with it on x86)."""
    lanes = 64
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    e = hl.BoundaryConditions.repeat_edge(inp)
    k = width - lanes  # the first tile's base is HI - n + 1 = width - 1 - lanes + 1
    f = hl.Func("narrow")
    f[x, y] = e[x + k, y] + hl.u16(1)
    f.vectorize(x, lanes)
    prog = pitchfork.compile(f, [inp], target=target, name="narrow")
    a = RNG.integers(0, 65535, size=(2, width), endpoint=True, dtype=np.uint16)
    got = prog(a, size=[2 * lanes, 2])
    want = a[:, np.clip(np.arange(2 * lanes) + k, 0, width - 1)] + np.uint16(1)
    assert np.array_equal(got, want)



@pytest.mark.parametrize("offset", [-3, 5])
@pytest.mark.parametrize("width", [5, 9, 16, 30, 301])
def test_x86_float_border_window_in_registers(width: int, offset: int) -> None:
    """x86-avx2, 8 float32 lanes: the border window of `_clamped_gather` is one lane permute
    (`llvm.x86.avx2.permps`, `_window_permute`) instead of a stack round trip; the result holds the
    image's own bits (-0.0, a NaN payload, random bit patterns), checked against numpy on images
    narrower than, equal to and wider than a vector, with tiles left and right of the image."""
    inp = hl.ImageParam(hl.Float(32), 2, "input")
    e = hl.BoundaryConditions.repeat_edge(inp)
    f = hl.Func("fedge")
    f[x, y] = e[x + offset, y]  # a lane move only: no arithmetic that could hide a wrong lane
    f.vectorize(x, 8, hl.TailStrategy.ShiftInwards)
    prog = pitchfork.compile(f, [inp], target="x86-avx2", name="fedge")
    if width >= 8:  # the window needs a whole vector inside the image; narrower images gather
        assert "llvm.x86.avx2.permps" in prog.llvm_ir()
    bits = RNG.integers(0, 2**32, size=(3, width), dtype=np.uint64).astype(np.uint32)
    bits[0, :2] = [0x80000000, 0x7FC12345]  # -0.0 and a NaN with a payload: compared as bits
    a = bits.view(np.float32)
    out_w = 40 + width
    got = prog(a, size=[out_w, 3])
    want = a[:, np.clip(np.arange(out_w) + offset, 0, width - 1)]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
