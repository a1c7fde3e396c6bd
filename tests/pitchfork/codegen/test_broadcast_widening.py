"""A broadcast of a widened scalar (`x128(int64(out_mult))`, what Halide writes for a runtime multiplier
of an i64 requantize) reaches lifting as a lane-wise widening of the broadcast narrow scalar
(codegen_expr._e_Broadcast), so matmul's srdhm, `i32(clamp((i64(a) * i64(m) + 2^30) >> 31))` with m a
Param, lifts to rounding_mul_shr: on hvx128 the vmpye/vmpyo sequence instead of lane-by-lane i64
arithmetic, bit-exact under qemu-hexagon (HVX only for now); and still bit-exact on x86 (JIT)."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available


def _srdhm(lanes: int) -> tuple[hl.Func, list[Any]]:
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(32), 1, "a")
    m = hl.Param(hl.Int(32), "m")
    f = hl.Func("srdhm")
    ab = hl.i64(a[x]) * hl.i64(m)
    f[x] = hl.i32(hl.clamp((ab + (1 << 30)) >> 31, hl.i64(-(2**31)), hl.i64(2**31 - 1)))
    f.vectorize(x, lanes)
    return f, [a, m]


def _want(av: np.ndarray, m: int) -> np.ndarray:
    v = (av.astype(object) * m + 2**30) >> 31
    return np.array([min(max(int(t), -2**31), 2**31 - 1) for t in v], dtype=np.int32)


@pytest.mark.parametrize("isa,lanes", [
    pytest.param("x86-avx2", 8, id="x86-avx2"),
    pytest.param("hvx128", 32, id="hvx128", marks=[pytest.mark.qemu, pytest.mark.skipif(
        not tools_available("hvx128"), reason="no qemu-hexagon")]),
])
def test_requantize_by_a_runtime_multiplier_lifts_to_rounding_mul_shr(isa: str, lanes: int) -> None:
    rng = np.random.default_rng(3)
    n = 4 * lanes
    av = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    av[:4] = [-2**31, 2**31 - 1, 0, -1]
    f, args = _srdhm(lanes)
    prog = pitchfork.compile(f, args, target=isa, isel="pitchfork", name="srdhm", fallback=False)
    for m in (2**30, -2**31, 65536, 12345):
        assert np.array_equal(prog(av, m, size=[n]), _want(av, m)), m
    if isa == "hvx128":
        asm = prog.assembly()
        assert "vmpyo" in asm and "vinsert" not in asm
