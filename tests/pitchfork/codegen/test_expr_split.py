"""pitchfork/codegen/expr.py `split`: a widened value spanning several registers, cut into sub-register
pieces for a target instruction, is widened one register at a time.

depthwise_conv's `i32(filter_i16) * i32(input_u8)` at 16 lanes on arm64 is smull/smlal on 4-lane halves
of `zext <16 x i8> to <16 x i16>`. LLVM 22's VectorCombine rewrote the slices of the upper register
into zexts of 4-byte slices, selected as ext + zip1/zip2 + bic and smlal where Halide 21 (LLVM 21) has
one ushll2 and smlal2 (depthwise_conv p0's hot loop: 588 instructions, Halide's 445). Checked in the
assembly and bit-exactly under qemu-aarch64 against Halide's own realize.
"""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.machine import find_loops
from pitchfork.backend.run import tools_available


def _pipeline() -> tuple[hl.Func, list]:
    x = hl.Var("x")
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    f = hl.ImageParam(hl.Int(16), 1, "f")
    b = hl.ImageParam(hl.Int(32), 1, "b")
    out = hl.Func("out")
    out[x] = b[x] + hl.i32(f[x]) * hl.i32(a[x]) + hl.i32(f[x + 16]) * hl.i32(a[x + 1])
    out.vectorize(x, 16)
    return out, [a, f, b]


def test_widened_halves_are_widened_per_register() -> None:
    out, args = _pipeline()
    prog = pitchfork.compile(out, args, target="arm64", name="split_widen", fallback=False)
    body = [i for lp in find_loops(prog.assembly(), target="arm64") if lp.innermost for i in lp.instructions
            if re.match(r"sm(ull|lal)2?\s", i)]
    assert body, "the products select smull/smlal"
    loop = next(lp.instructions for lp in find_loops(prog.assembly(), target="arm64")
                if lp.innermost and any(re.match(r"sm(ull|lal)", i) for i in lp.instructions))
    ops = [i.split()[0] for i in loop]
    assert ops.count("ushll2") == 2 and ops.count("ushll") == 2, ops  # one per 8-byte half of each load
    assert not {"zip1", "zip2", "bic", "ext"} & set(ops), ops
    assert sum(o in ("smull2", "smlal2") for o in ops) == 4, ops  # the upper halves of both products

    if not tools_available("arm64"):
        pytest.skip("qemu-aarch64 not available")
    rng = np.random.default_rng(11)
    n = 96
    a = rng.integers(0, 256, n + 1, dtype=np.uint8)
    a[:3] = [0, 255, 255]
    f = rng.integers(-32768, 32768, n + 16, dtype=np.int16)
    f[:3] = [-32768, 32767, -32768]
    b = rng.integers(-2**20, 2**20, n, dtype=np.int32)
    got = prog(a, f, b, size=[n])
    for p, v in zip(args, (a, f, b)):
        p.set(hl.Buffer(v))
    np.testing.assert_array_equal(got, np.asarray(out.realize([n])))
