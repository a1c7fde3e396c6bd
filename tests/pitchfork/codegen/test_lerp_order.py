"""Session 16, x86 code laid out as Halide 21's: float `lerp` emitted in the order Halide's code
generator emits it (codegen/float_math.py `FloatOps.lerp`: the left product before the right operand
is computed, which freed the ymm register whose spill bilateral_grid's slicing loop reloaded every
iteration), checked in the emitted IR and by running against Halide's realize."""

from __future__ import annotations

import re
import warnings

import halide as hl
import numpy as np

import pitchfork


def _lerp3() -> tuple[hl.Func, list]:
    zero, one, w = (hl.ImageParam(hl.Float(32), 1, n) for n in ("zero", "one", "w"))
    x = hl.Var("x")
    out = hl.Func("out")
    out[x] = hl.lerp(zero[x], one[x], w[x])
    out.vectorize(x, 8)
    return out, [zero, one, w]


def test_lerp_left_product_before_right_operand_and_matches_halide() -> None:
    out, args = _lerp3()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(out, args, target="x86-avx2", name="lerp3", fallback=False)
    src = prog.module.source_ir
    body = src[src.index("define"):]
    ops = [m.group(1) for m in re.finditer(r"= (load|fsub|fmul|fadd) ", body)]
    # per vector: zero, w, 1 - w, zero * (1 - w), then one, one * w, the sum (Halide's order)
    seq = " ".join(ops)
    assert "load load fsub fmul load fmul fadd" in seq, seq
    assert "load load load fsub" not in seq, seq
    rng = np.random.default_rng(16)
    values = [rng.standard_normal(64).astype(np.float32) for _ in range(2)] + [rng.random(64, dtype=np.float32)]
    for a, v in zip(args, values):
        a.set(hl.Buffer(v))
    want = np.asarray(out.realize([64]))
    got = prog(*values, size=[64])
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6), np.abs(got - want).max()
