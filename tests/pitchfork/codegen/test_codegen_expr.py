"""The Halide -> FPIR converter (codegen_expr.py): a broadcast of a widened scalar
(`x128(int32(m_i16))`) is, on hvx128 with isel=pitchfork, a widening of the narrow splat in FPIR, so
lifting sees `i32(d_i16) * i32(m_i16)` as a widening_mul (one vmpy per 64 lanes). Bit-exact under
qemu-hexagon; isel=llvm keeps the splat of the wide scalar, as Halide's own codegen emits it."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu toolchain for hvx128")]

x, y = hl.Var("x"), hl.Var("y")


def scaled(lanes: int) -> tuple[hl.Func, list[object]]:
    """out = i32(d) * i32(m) + i32(k) with an i16 image d and i16 parameters m and k."""
    d = hl.ImageParam(hl.Int(16), 2, "d")
    m, k = hl.Param(hl.Int(16), "m"), hl.Param(hl.Int(16), "k")
    f = hl.Func("f")
    f[x, y] = hl.i32(d[x, y]) * hl.i32(m) + hl.i32(k)
    f.vectorize(x, lanes)
    return f, [d, m, k]


@pytest.mark.parametrize("isel", ["pitchfork", "llvm"])
def test_widened_broadcast(isel: str) -> None:
    f, args = scaled(128)
    prog = pitchfork.compile(f, args, target="hvx128", isel=isel, name="scaled")
    if isel == "pitchfork":
        assert prog.stats.rules_fired.get("widening_mul_of_casts", 0) > 0
        assert "vmpyieo" not in prog.assembly()  # no 32x32 multiply
    d = np.random.default_rng(5).integers(-32768, 32767, size=(2, 256), dtype=np.int16)
    for m, k in ((-32768, 32767), (1234, -7)):
        got = prog(d, m, k, size=[256, 2])
        assert np.array_equal(got, (d.astype(np.int64) * m + k).astype(np.int32))
