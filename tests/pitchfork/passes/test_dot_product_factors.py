"""Dot products written as Halide users write them (issue 27): a VectorReduce of u8 x u8 products into u32,
`f(x) += u32(a(F*x + r)) * u32(b(F*x + r))` over an RDom of F with `.atomic().vectorize(r)`, at every
factor F that is a multiple of the dot instructions' group of 4 (4, 8, 16), with and without a non-zero
initial value. Each pipeline, compiled by PITCHFORK, must equal Halide's own realize() bit for bit (the
inputs start with a block of 255s, the largest products) and select the dot instruction Halide selects:
vpmaddwd on x86 (the first pair level; the rest is the ordinary reduction), udot on arm64 (the default
target, arm-64-linux-arm_dot_prod, has the dot-product extension; without it, arm-64-linux, no udot),
vrmpy on hvx128."""

from __future__ import annotations

import re
from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
x = hl.Var("x")

#: target -> (output lanes per vector step, the dot instruction Halide selects; None: none may appear)
ISAS = {"x86-avx2": (8, "vpmaddwd"), "arm64": (4, "udot"), "hvx128": (32, "vrmpy"),
        "arm-64-linux": (4, None)}  # without arm_dot_prod: no udot (the rules using it are not loaded)


def dot(factor: int, lanes: int, init: int) -> tuple[hl.Func, list[Any]]:
    a, b = hl.ImageParam(hl.UInt(8), 1, "a"), hl.ImageParam(hl.UInt(8), 1, "b")
    r = hl.RDom([(0, factor)], "r")
    f = hl.Func("dot")
    f[x] = hl.cast(hl.UInt(32), init)
    f[x] += hl.cast(hl.UInt(32), a[factor * x + r]) * hl.cast(hl.UInt(32), b[factor * x + r])
    f.update().atomic().vectorize(r).vectorize(x, lanes)
    return f, [a, b]


def _check(isa: str, factor: int, init: int) -> None:
    lanes, mnemonic = ISAS[isa]
    n = 3 * lanes
    rng = np.random.default_rng(factor + init)
    a = rng.integers(0, 256, factor * n, dtype=np.uint8)
    b = rng.integers(0, 256, factor * n, dtype=np.uint8)
    a[:factor * lanes] = b[:factor * lanes] = 255
    f, (pa, pb) = dot(factor, lanes, init)
    pa.set(hl.Buffer(a))
    pb.set(hl.Buffer(b))
    want = np.asarray(f.realize([n], X86)).copy()
    f, args = dot(factor, lanes, init)
    prog = pitchfork.compile(f, args, target=isa, isel="pitchfork", fallback=False)
    got = prog(a, b, size=[n])
    assert np.array_equal(got, want), (isa, factor, init, got[:8], want[:8])
    asm = prog.assembly()
    if mnemonic is None:
        assert not re.search(r"\b[us]dot\b", asm), f"{isa} factor {factor}: a dot instruction without the feature"
    else:
        assert re.search(rf"\b{mnemonic}\b", asm), f"{isa} factor {factor}: no {mnemonic}"


def _isa(isa: str):  # type: ignore[no-untyped-def]
    if isa == "x86-avx2":
        return pytest.param(isa, id=isa)
    tools = "arm64" if isa.startswith("arm") else isa
    return pytest.param(isa, id=isa, marks=[pytest.mark.qemu,
                                            pytest.mark.skipif(not tools_available(tools), reason="no qemu")])


@pytest.mark.parametrize("isa", [_isa(i) for i in ISAS])
@pytest.mark.parametrize(("factor", "init"), [(4, 0), (8, 7), (16, 0), (16, 7)])
def test_dot_product_factor(isa: str, factor: int, init: int) -> None:
    _check(isa, factor, init)
