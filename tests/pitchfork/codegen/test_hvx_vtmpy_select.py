"""HVX vtmpy selected from Halide code: a [1 2 1] sum of one row's u8 pixels at x, x+1, x+2 (sobel's
horizontal pass) reaches the lowering with the frontend's stream facts (codegen_expr: dense loads of one
buffer at one symbolic index plus constant offsets), so `vtmpy_121` turns it into one vtmpybus; the same
sum down a column (different rows: no stream) keeps the widening add + multiply-accumulate. Both run
bit-exactly under qemu-hexagon."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu, pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")]


def _pipeline(horizontal: bool) -> tuple[hl.Func, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    v = lambda dx, dy: hl.u16(inp[x + dx, y + dy])  # noqa: E731
    f = hl.Func("tap3")
    f[x, y] = v(0, 0) + 2 * v(1, 0) + v(2, 0) if horizontal else v(0, 0) + 2 * v(0, 1) + v(0, 2)
    f.vectorize(x, 128)
    inp.dim(0).set_min(0)
    inp.dim(1).set_min(0)
    ob = f.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // 128) * 128)
    return f, [inp]


@pytest.mark.parametrize("horizontal", [True, False], ids=["row", "column"])
def test_121_sum_of_a_row_selects_vtmpy_and_runs_bit_exactly(horizontal: bool) -> None:
    w, h = 256, 3
    a = np.random.default_rng(11).integers(0, 256, (h + 2, w + 3), dtype=np.uint8)  # rows not 128-aligned
    p = a.astype(np.uint16)
    want = p[:h, :w] + 2 * p[:h, 1:w + 1] + p[:h, 2:w + 2] if horizontal else p[:h, :w] + 2 * p[1:h + 1, :w] + p[2:h + 2, :w]
    f, args = _pipeline(horizontal)
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="tap3", fallback=False)
    assert ("vtmpy_121" in prog.stats.rules_fired) == horizontal
    asm = prog.assembly()
    assert ("vtmpy(" in asm) == horizontal
    got = prog(a, size=[w, h])
    assert np.array_equal(got, want)
