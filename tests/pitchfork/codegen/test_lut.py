"""Byte lookup tables on HVX (codegen_lut._hvx_lut): a gather from a compute_root table of at most 256
u8 entries, with an index of proven range, is vlut32 lookups instead of a lane loop. Bit-exact under
qemu-hexagon for one segment, whole registers, two table registers, tables at an unaligned offset and
several registers of lanes; gathers that do not qualify keep the lane loop and stay exact."""

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


def table_values(i: np.ndarray) -> np.ndarray:
    return ((i * 37 + 11) % 251).astype(np.uint8)


def lut_pipeline(lo: int, n: int, lanes: int) -> tuple[hl.Func, list[Any]]:
    """out(x, y) = lut(clamp(input(x, y) / 4, lo, lo + n - 1)), lut computed at root (an allocation)."""
    inp = hl.ImageParam(hl.Int(16), 2, "input")
    lut = hl.Func("lut")
    lut[x] = hl.u8((x * 37 + 11) % 251)
    lut.compute_root()
    f = hl.Func("f")
    f[x, y] = lut[hl.clamp(inp[x, y] / 4, lo, lo + n - 1)]
    f.vectorize(x, lanes)
    return f, [inp]


@pytest.mark.parametrize(("lo", "n", "lanes"), [(0, 32, 128), (0, 128, 128), (0, 256, 128), (30, 100, 256),
                                                (100, 200, 128)])
def test_vlut_is_exact(lo: int, n: int, lanes: int) -> None:
    f, args = lut_pipeline(lo, n, lanes)
    prog = pitchfork.compile(f, args, target="hvx128", name="lut_f")
    text = prog.llvm_ir()
    assert "vlutvvb" in text and "lanes_end" not in text  # looked up, no gather loop
    # one plain lookup and (segments - 1) OR-ing ones per register of lanes (in each copy of the loop)
    first, more = text.count("call <32 x i32> @llvm.hexagon.V6.vlutvvb.128B"), \
        text.count("call <32 x i32> @llvm.hexagon.V6.vlutvvb.oracc.128B")
    assert first > 0 and more == first * ((n - 1) // 32)
    a = np.random.default_rng(lo + n).integers(-2000, 2000, size=(3, 2 * lanes + 128), dtype=np.int16)
    got = prog(a, size=[2 * lanes + 128, 3])
    want = table_values(np.clip(a.astype(np.int64) // 4, lo, lo + n - 1))
    assert np.array_equal(got, want)


def test_wide_index_keeps_the_gather() -> None:
    """A proven range of 300 entries does not fit two registers: the lane loop, still exact."""
    f, args = lut_pipeline(0, 300, 128)
    prog = pitchfork.compile(f, args, target="hvx128", name="lut_wide")
    assert "vlutvvb" not in prog.llvm_ir()
    a = np.random.default_rng(3).integers(-2000, 2000, size=(2, 256), dtype=np.int16)
    got = prog(a, size=[256, 2])
    assert np.array_equal(got, table_values(np.clip(a.astype(np.int64) // 4, 0, 299)))


def span_pipeline(kind: str) -> tuple[hl.Func, list[Any]]:
    """out(c, x) = input(c / d, x) + 1 (depthwise_conv's channel multiplier) or input(c * d + 3, x) + 1,
    with a runtime d: a lane-monotone index (codegen_lut._hvx_span_gather)."""
    c = hl.Var("c")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    d = hl.Param(hl.Int(32), "d")
    f = hl.Func("f")
    f[c, y] = inp[c / d if kind == "div" else c * d + 3, y] + hl.u8(1)
    f.vectorize(c, 128)
    return f, [inp, d]


@pytest.mark.parametrize("kind", ["div", "stride"])
def test_span_gather_is_exact(kind: str) -> None:
    """Spans under 128 bytes take vlut32 (d >= 1 for a division; d in {0, 1} for a stride), wider ones
    (stride 2, 3) the lane loop: both exact."""
    f, args = span_pipeline(kind)
    prog = pitchfork.compile(f, args, target="hvx128", name=f"span_{kind}", fallback=False)
    assert "vlutvvb" in prog.llvm_ir()
    rng = np.random.default_rng(11)
    w = 3 * 128
    a = rng.integers(0, 256, size=(2, 3 * w + 8), dtype=np.uint8)
    cs = np.arange(w)
    for d in ((1, 2, 3, 64, 200, 0) if kind == "div" else (0, 1, 2, 3)):
        idx = (cs // d if d else 0 * cs) if kind == "div" else cs * d + 3
        got = prog(a, d, size=[w, 2])
        assert np.array_equal(got, (a[:, idx].astype(np.int64) + 1).astype(np.uint8)), d
