"""Vector reductions (Halide's VectorReduce, from atomic() vectorized updates and rfactor): every reduce op
Halide emits (add, mul, min, max) at several element types, to several lanes (split_reduce: strided
slices pushed into the expression) and to one lane (an FPIR vector_reduce term, lowered generically),
compiled by PITCHFORK and compared bit-exactly with Halide's own realize(); plus the unit behaviour of pitchfork.codegen.reduce."""

from __future__ import annotations

from typing import Any, Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as H
from pitchfork.codegen.reduce import check_reduce, split_reduce
from pitchfork.frontend.htypes import Int, UInt

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
x = hl.Var("x")

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "min": hl.min, "max": hl.max,
}
TYPES = {"u8": hl.UInt(8), "i16": hl.Int(16), "i32": hl.Int(32), "u32": hl.UInt(32)}


def reduction(op: str, t: hl.Type, factor: int, lanes: int) -> tuple[hl.Func, list[Any]]:
    """f(x) = op over r < factor of (a(r, x) * 3 + 1) in type t; x vectorized by `lanes` (1: scalar x)
    with r atomic-vectorized inside it, so each vector step is a vector_reduce from factor*lanes lanes."""
    inp = hl.ImageParam(t, 2, "a")
    r = hl.RDom([(0, factor)], "r")
    f = hl.Func("red")
    f[x] = hl.cast(t, 1 if op == "mul" else 0)
    f[x] = OPS[op](f[x], inp[r, x] * hl.cast(t, 3) + hl.cast(t, 1))
    st = f.update().atomic().vectorize(r)
    if lanes > 1:
        st.vectorize(x, lanes)
    return f, [inp]


def _run(op: str, tn: str, factor: int, lanes: int, target: str, isel: str) -> None:
    t = TYPES[tn]
    rng = np.random.default_rng(factor * 31 + lanes)
    n = 3 * max(lanes, 1)
    info = np.iinfo({"u8": np.uint8, "i16": np.int16, "i32": np.int32, "u32": np.uint32}[tn])
    a = rng.integers(info.min, info.max, (n, factor), dtype=info.dtype, endpoint=True)
    f, args = reduction(op, t, factor, lanes)
    args[0].set(hl.Buffer(a))
    want = np.asarray(f.realize([n], X86)).copy()
    f, args = reduction(op, t, factor, lanes)
    prog = pitchfork.compile(f, args, target=target, isel=isel, fallback=False)
    got = prog(a, size=[n])
    assert np.array_equal(got, want), (op, tn, factor, lanes, target, isel)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("tn", sorted(TYPES))
def test_reduce_to_lanes_x86(op: str, tn: str) -> None:
    _run(op, tn, 4, 8, "x86-avx2", "pitchfork")
    if tn == "i16":
        _run(op, tn, 4, 8, "x86-avx2", "llvm")


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize(("tn", "factor", "isel"), [("u8", 16, "pitchfork"), ("i32", 6, "llvm")])
def test_reduce_to_one_lane_x86(op: str, tn: str, factor: int, isel: str) -> None:
    _run(op, tn, factor, 1, "x86-avx2", isel)  # 6 lanes halve to an odd width (3), combined at once


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64"), reason="no qemu toolchain for arm64")
@pytest.mark.parametrize("op", ["add", "max"])
def test_reduce_arm64(op: str) -> None:
    _run(op, "i16", 4, 8, "arm64", "pitchfork")
    _run(op, "u8", 16, 1, "arm64", "pitchfork")


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu toolchain for hvx128")
@pytest.mark.parametrize("isel", ["pitchfork", "llvm"])
def test_reduce_to_one_lane_hvx128(isel: str) -> None:
    # Reductions to one lane go through FPIR on every ISA (generic lowering: llvm.vector.reduce.*).
    _run("add", "u8", 128, 1, "hvx128", isel)
    _run("min", "i16", 64, 1, "hvx128", isel)


def test_split_reduce_pushes_slices_into_lanewise_nodes() -> None:
    u8x8, u8x4 = UInt(8, 8), UInt(8, 4)
    ld = H.Load("a", H.Ramp(H.Variable("i", Int(32)), H.IntImm(1, Int(32)), 8, Int(32, 8)), u8x8)
    wide = H.Cast(UInt(16, 8), ld)
    prod = H.BinOp("*", wide, H.Broadcast(H.IntImm(3, UInt(16)), 8, UInt(16, 8)), UInt(16, 8))
    e = H.VectorReduce("add", prod, UInt(16, 4))
    got = split_reduce(e)
    # (cast(slice0(load)) * x4(3)) + (cast(slice1(load)) * x4(3))
    assert isinstance(got, H.BinOp) and got.op == "+" and got.type == UInt(16, 4)
    for j, part in enumerate((got.a, got.b)):
        assert isinstance(part, H.BinOp) and part.op == "*"
        assert part.b == H.Broadcast(H.IntImm(3, UInt(16)), 4, UInt(16, 4))
        assert isinstance(part.a, H.Cast) and isinstance(part.a.value, H.Shuffle)
        assert part.a.value.indices == (j, j + 2, j + 4, j + 6) and part.a.value.type == u8x4
    # a ramp is sliced exactly: lanes 1, 3 of ramp(b, 5, 4) = ramp(b + 5, 10, 2)
    rmp = H.Ramp(H.Variable("b", Int(32)), H.IntImm(5, Int(32)), 4, Int(32, 4))
    got = split_reduce(H.VectorReduce("max", rmp, Int(32, 2)))
    assert isinstance(got, H.BinOp) and got.op == "max"
    assert isinstance(got.b, H.Ramp) and got.b.count == 2


def test_signed_saturating_add_reduction_is_rejected() -> None:
    e = H.VectorReduce("saturating_add", H.Variable("v", Int(16, 8)), Int(16, 2))
    assert "saturating_add" in (check_reduce(e) or "")
    assert check_reduce(H.VectorReduce("saturating_add", H.Variable("v", UInt(16, 8)), UInt(16, 2))) is None
    assert check_reduce(H.VectorReduce("add", H.Variable("v", UInt(16, 8)), UInt(16, 2))) is None
