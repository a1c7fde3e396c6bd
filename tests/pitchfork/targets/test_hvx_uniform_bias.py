"""HVX: a uniform bias added to a chain of i16 x i16 multiply-accumulates by uniform taps (camera_pipe's
colour correction, `i16((i32(r) m0 + i32(g) m1 + i32(b) m2 + m3) / 256)` with a runtime matrix) is the
chain's initial accumulator (rules/lower/hvx.rules `vmpy_acc_uniform_root*`), and the taps go to Rt
(vmpyh.acc): three multiplies per register pair, not four; bit-exact under qemu on full-range data."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.asm import main_vector_loop
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu, pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")]


def _pipeline(taps: int) -> tuple[hl.Func, list[Any]]:
    x = hl.Var("x")
    ins = [hl.ImageParam(hl.Int(16), 1, f"c{k}") for k in range(taps)]
    m = [hl.Param(hl.Int(16), f"m{k}") for k in range(taps + 1)]
    acc = sum((hl.i32(ins[k][x]) * hl.i32(m[k]) for k in range(taps)), hl.i32(0)) + hl.i32(m[taps])
    f = hl.Func("correct")
    f[x] = hl.i16(acc / 256)
    f.vectorize(x, 64)
    for p in ins:
        p.dim(0).set_min(0)
    ob = f.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // 64) * 64)
    return f, [*ins, *m]


@pytest.mark.parametrize("taps", [1, 3])
def test_uniform_bias_starts_the_chain_and_runs_bit_exactly(taps: int) -> None:
    f, args = _pipeline(taps)
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="correct", fallback=False)
    assert prog.stats.rules_fired.get(f"vmpy_acc_uniform_root{taps}", 0) == 1, prog.stats.rules_fired
    loop = main_vector_loop(prog.assembly(), "correct", target="hvx128")
    products = [i for i in loop.instructions if "vmpy(" in i]
    assert len(products) == taps and all(",r" in p for p in products), loop.instructions  # by Rt, no * 1
    n = 256
    rng = np.random.default_rng(9)
    chans = [rng.integers(-32768, 32768, n, dtype=np.int16) for _ in range(taps)]
    chans[0][:4] = [-32768, 32767, -32768, 32767]
    m = [-300, 127, -5000][:taps] + [12345]  # no i32 overflow (Halide's signed arithmetic never wraps)
    got = prog(*chans, *m, size=[n])
    acc = sum(c.astype(np.int64) * w for c, w in zip(chans, m)) + m[taps]
    want = (np.floor_divide(acc, 256) + 32768) % 65536 - 32768
    assert np.array_equal(got, want.astype(np.int16))
