"""A broadcast of a widened narrow buffer element (`i32(matrix[k])`, camera_pipe's color matrix) reaches
lifting as a cast of a narrow splat, so the product with it is a widening multiply: vpmaddwd on x86
rather than sign extensions + vpmulld. Bit-exact against Halide's own realize, including the extreme
matrix values."""

from __future__ import annotations

import halide as hl
import numpy as np
import pitchfork


def _pipeline() -> tuple[hl.Func, list]:
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(16), 1, "a")
    m = hl.ImageParam(hl.Int(16), 1, "m")
    out = hl.Func("out")
    # One product (a lone tap: no pair for the dot-product grouping to take) plus a widened constant.
    acc = hl.i32(a[x]) * hl.i32(m[0]) + hl.i32(m[1])
    out[x] = hl.i16(acc >> 8)
    out.vectorize(x, 16)
    return out, [a, m]


def test_widened_matrix_element_multiplies_narrow() -> None:
    out, args = _pipeline()
    prog = pitchfork.compile(out, args, target="x86-avx2", name="widened_splat", fallback=False)
    asm = prog.assembly()
    assert "vpmaddwd" in asm and "vpmulld" not in asm
    assert prog.stats.rules_fired.get("wmul_pmaddwd")
    rng = np.random.default_rng(5)
    a = rng.integers(-32768, 32768, 514, dtype=np.int16)
    a[:4] = [-32768, 32767, -32768, 32767]
    for matrix in ([300, 77], [-32768, 32767], [32767, -32768]):
        m = np.array(matrix, dtype=np.int16)
        got = prog(a, m, size=[514])
        args[0].set(hl.Buffer(a))
        args[1].set(hl.Buffer(m))
        want = np.asarray(out.realize([514]))
        np.testing.assert_array_equal(got, want, err_msg=f"matrix {matrix}")
