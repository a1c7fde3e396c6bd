"""Session 16: an x86 gather from a float buffer reads and inserts its lanes as floats, as Halide's
code does (`vmovss` + `vinsertps`), not as their integer bits (`vmovd` + `vpinsrd`, whose vector then
crosses into the float domain: bilateral_grid's slicing stage took 4.8% more CPU than Halide's).
codegen/memory.py `_gather`. The result stays bit-exact: a float gather only moves bits."""

from __future__ import annotations

import re
import warnings

import halide as hl
import numpy as np

import pitchfork


def float_lookup() -> tuple[hl.Func, list]:
    """out[x] = table[idx[x]] * 0.5: an 8-lane gather of a float32 table in the vectorized x loop."""
    table = hl.ImageParam(hl.Float(32), 1, "table")
    idx = hl.ImageParam(hl.UInt(8), 1, "idx")
    x = hl.Var("x")
    out = hl.Func("out")
    out[x] = table[hl.cast(hl.Int(32), idx[x])] * hl.f32(0.5)
    out.vectorize(x, 8)
    return out, [table, idx]


def test_x86_float_gather_is_float_inserts_and_bit_exact() -> None:
    func, args = float_lookup()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(func, args, target="x86-avx2", name="float_lookup", fallback=False)
    asm = prog.assembly()
    assert re.search(r"\bvinsertps\b", asm) and not re.search(r"\bvpinsrd\b", asm), asm
    rng = np.random.default_rng(16)
    table = rng.standard_normal(256).astype(np.float32)
    table[:4] = [np.nan, -0.0, np.inf, 1e-40]  # bits that must come through unchanged (x0.5 of each)
    idx = rng.integers(0, 256, 64, dtype=np.uint8)
    idx[:4] = [0, 1, 2, 3]
    got = prog(table, idx, size=[64])
    want = (table[idx.astype(np.int64)] * np.float32(0.5)).astype(np.float32)
    assert np.array_equal(got.view(np.uint32)[4:], want.view(np.uint32)[4:])
    assert np.isnan(got[0]) and np.array_equal(got[1:4].view(np.uint32), want[1:4].view(np.uint32))
