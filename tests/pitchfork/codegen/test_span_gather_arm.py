"""Byte gathers with a lane-monotone index on arm64 (codegen_span._arm_span_gather): `input[c / d + o]`
(depthwise_conv's channel multiplier) and `input[c * d + o]` with runtime d are `tbl` lookups in the
aligned blocks around their span when it is under 16 bytes, and the lane-by-lane gather otherwise.
Bit-exact under qemu-aarch64 against Halide's own realize() (its division: d = 0 gives 0) for divisors and
strides on both sides of the threshold, negative ones, rows starting at every alignment (the span
crossing a block boundary or not), at 16 and 32 lanes (one `tbl` per register), for both isels."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from benchmarks.common import halide_realize
from pitchfork.backend.machine import asm_instructions
from pitchfork.backend.run import tools_available
from pitchfork.api import run_many

pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(not tools_available("arm64"), reason="no qemu toolchain for arm64")]

c, y = hl.Var("c"), hl.Var("y")
#: divisors / strides: spans under 16 bytes (tbl) and wider (the lane gather), signs, zero
D = {"div": (1, 2, 3, 16, 200, 0, -1, -5), "stride": (0, 1, 2, 3, -1)}


def span_pipeline(kind: str, lanes: int) -> tuple[hl.Func, list[Any]]:
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    d = hl.Param(hl.Int(32), "d")
    o = hl.Param(hl.Int(32), "o")
    f = hl.Func("f")
    f[c, y] = inp[c / d + o if kind == "div" else c * d + o, y] + hl.u8(1)
    f.vectorize(c, lanes)
    return f, [inp, d, o]


def test_span_gathers_are_exact() -> None:
    rng = np.random.default_rng(7)
    w, rows = 96, 5
    a = rng.integers(0, 256, size=(rows, 3 * w + 13), dtype=np.uint8)  # odd row length: every alignment
    runs, want = [], []
    for kind in ("div", "stride"):
        for lanes in (16, 32):
            for isel in ("pitchfork", "llvm"):
                f, args = span_pipeline(kind, lanes)
                prog = pitchfork.compile(f, args, target="arm64", isel=isel, name=f"span_{kind}{lanes}_{isel}",
                                         fallback=False)
                ops = [i.split()[0] for i in asm_instructions(prog.assembly(), prog.name)]
                assert ops.count("tbl") >= lanes // 16, (kind, lanes, isel)  # one lookup per register
                for d in D[kind]:
                    o = 2 * w + 1 if d < 0 else 3
                    runs.append((prog, [a, d, o], [w, rows]))
                    want.append((kind, d, halide_realize(f, args, [a, d, o], [w, rows])))
    for got, (kind, d, exp) in zip(run_many(runs), want):
        assert np.array_equal(np.asarray(got), exp), (kind, d)
