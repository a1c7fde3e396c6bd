"""Halide expression -> FPIR term (pitchfork/codegen/to_fpir.py): broadcasts of widened scalars.

A broadcast of a widening cast of a narrower scalar (`i16(zero_u8)`, Halide's quantized zero points)
becomes a vector cast of the narrow broadcast, so lifting sees the narrow operand: `i16(in_u8) -
i16(zero_u8)` is a widening_sub (Neon usubl, as Halide 21 selects it), and the result still runs
bit-exactly against Halide's own realize().
"""

from __future__ import annotations

import warnings
from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.machine import main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as hir
from pitchfork.api import CompiledPipeline, PitchforkFallbackWarning
from pitchfork.codegen.loop_nest import LoopNestCodegen

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
SIZE = 256
x = hl.Var("x")


def _build(lanes: int) -> tuple[hl.Func, list[Any]]:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    z = hl.Param(hl.UInt(8), "z")
    m = hl.Param(hl.Int(8), "m")
    f = hl.Func("zero_point")
    # (a - z) * m with both scalars widened from 8 bits: a widening_sub, and a multiply by a
    # widened i8 scalar, over a 16-bit result
    f[x] = (hl.i16(a[x]) - hl.i16(z)) * hl.i16(m)
    f.vectorize(x, lanes)
    return f, [a, z, m]


def _compile(target: str) -> CompiledPipeline:
    f, args = _build(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        return pitchfork.compile(f, args, target=target, name="zero_point")


def _stored_fpir(prog: CompiledPipeline) -> list[str]:
    cap = prog.captured
    assert cap is not None
    cg = LoopNestCodegen(cap, cap.parse(), prog.target, "pitchfork", prog.name)
    cg.build()
    return [str(sel.fpir) for node, sel in cg.selections if isinstance(node, hir.Store)]


def _run(prog: CompiledPipeline) -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, SIZE, dtype=np.uint8)
    a[:4] = [0, 255, 1, 254]
    for z, m in ((0, 1), (255, -128), (128, 127), (7, -3)):
        f, args = _build(16)
        args[0].set(hl.Buffer(a))
        args[1].set(z)
        args[2].set(m)
        want = np.asarray(f.realize([SIZE], X86))
        got = prog(a, z, m, size=[SIZE])
        assert got.dtype == want.dtype and np.array_equal(got, want), (z, m)


def test_widened_scalar_broadcast_lifts_to_widening_sub_x86() -> None:
    prog = _compile("x86-avx2")
    fpir = _stored_fpir(prog)
    assert any("widening_sub(" in t and "_u8" in t for t in fpir), fpir
    _run(prog)


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64"), reason="no qemu-aarch64 toolchain")
def test_widened_scalar_broadcast_is_usubl_on_arm64() -> None:
    prog = _compile("arm64")
    loop = "\n".join(main_vector_loop(prog.assembly(), "zero_point", target="arm64").instructions)
    assert "usubl" in loop, loop
    _run(prog)
