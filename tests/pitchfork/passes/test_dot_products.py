"""Add trees of widening products turned into vector reductions (pitchfork/passes/dot_products.py): the
rewrite on Halide IR (groups, free interleaves), and a matmul-shaped 4-tap dot product compiled for each
ISA with isel=pitchfork: bit-exact against numpy and selecting udot (arm64), vrmpy (hvx128), vpmaddwd
(x86), where isel=llvm selects none of them."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as H
from pitchfork.passes.dot_products import interleave, offset, rewrite_sum
from pitchfork.frontend.htypes import Int, UInt

N = 8


def _v(name: str) -> H.Variable:
    return H.Variable(name, Int(32))


def _plus(a: H.Expr, c: int) -> H.Expr:
    return a if c == 0 else H.BinOp("+", a, H.IntImm(c, Int(32)), Int(32))


def _term(k: int, row_stride: H.Expr) -> H.Expr:
    """u32(u16(B[ramp(t + k*stride, 1, N)]) * x N(u16(A[s + k])))  (matmul's P update, one tap)."""
    base = _plus(_v("t"), 0) if k == 0 else H.BinOp("+", H.BinOp("*", row_stride, H.IntImm(k, Int(32)), Int(32)),
                                                    _v("t"), Int(32))
    b = H.Load("B", H.Ramp(base, H.IntImm(1, Int(32)), N, Int(32, N)), UInt(8, N))
    a = H.Broadcast(H.Cast(UInt(16), H.Load("A", _plus(_v("s"), k), UInt(8))), N, UInt(16, N))
    return H.Cast(UInt(32, N), H.BinOp("*", H.Cast(UInt(16, N), b), a, UInt(16, N)))


def _sum(terms: list[H.Expr]) -> H.Expr:
    acc = terms[0]
    for t in terms[1:]:
        acc = H.BinOp("+", acc, t, acc.type)
    return acc


def _mixed_term(k: int) -> H.Expr:
    """i32(i16(u8 B[ramp(t + k, 4, N)]) * x N(i16(i8 M[k])))  (conv3x3a32's u8 pixels x i8 mask)."""
    b = H.Load("B", H.Ramp(_plus(_v("t"), k), H.IntImm(4, Int(32)), N, Int(32, N)), UInt(8, N))
    m = H.Broadcast(H.Cast(Int(16), H.Load("M", _plus(_v("s"), k), Int(8))), N, Int(16, N))
    return H.Cast(Int(32, N), H.BinOp("*", H.Cast(Int(16, N), b), m, Int(16, N)))


def test_mixed_sign_products_are_grouped_only_where_a_dot_instruction_takes_them() -> None:
    """u8 x i8: HVX has vrmpy (unsigned x signed); AArch64 has only udot/sdot (usdot needs i8mm, which
    apple-m1 lacks), so grouping there would only add interleaves."""
    acc = H.Load("P", H.Ramp(_v("p"), H.IntImm(1, Int(32)), N, Int(32, N)), Int(32, N))
    e = _sum([acc] + [_mixed_term(k) for k in range(4)])
    assert rewrite_sum(e, "arm64") is e
    out = rewrite_sum(e, "hvx128")
    assert isinstance(out, H.BinOp) and isinstance(out.b, H.VectorReduce)


def test_offset_sees_constant_differences() -> None:
    t = _v("t")
    assert offset(t, _plus(t, 3)) == 3
    assert offset(_plus(t, 1), _plus(t, 3)) == 2
    assert offset(t, _v("u")) is None


def test_four_taps_become_one_reduction_of_interleaves() -> None:
    acc = H.Load("P", H.Ramp(_v("p"), H.IntImm(1, Int(32)), N, Int(32, N)), UInt(32, N))
    e = _sum([acc] + [_term(k, _v("stride")) for k in range(4)])
    out = rewrite_sum(e, "arm64")
    assert isinstance(out, H.BinOp) and out.a == acc and isinstance(out.b, H.VectorReduce)
    prod = out.b.value
    assert prod.type == UInt(32, 4 * N) and out.b.type == UInt(32, N)
    mul = prod.value  # type: ignore[attr-defined]
    bside, aside = mul.a.value, mul.b.value
    # The B rows are not adjacent: an interleaving shuffle. The A taps are: one 4-byte load, repeated.
    assert isinstance(bside, H.Shuffle) and bside.kind == "interleave" and len(bside.vectors) == 4
    assert isinstance(aside, H.Shuffle) and aside.indices == (0, 1, 2, 3) * N
    (group,) = aside.vectors
    assert isinstance(group, H.Load) and group.type == UInt(8, 4) and group.index == H.Ramp(
        _v("s"), H.IntImm(1, Int(32)), 4, Int(32, 4))
    # x86 pairs the taps (pmaddwd), other targets keep the sum as it is.
    assert sum(isinstance(t, H.VectorReduce) for t in (rewrite_sum(e, "x86-avx2").a.b,  # type: ignore[attr-defined]
                                                      rewrite_sum(e, "x86-avx2").b)) == 2  # type: ignore[attr-defined]
    assert rewrite_sum(e, "unknown") is e


def test_three_taps_stay_lanewise_on_a_four_way_target() -> None:
    e = _sum([_term(k, _v("stride")) for k in range(3)])
    assert rewrite_sum(e, "hvx128") is e


def test_stride_f_loads_interleave_into_one_dense_load() -> None:
    loads = [H.Load("B", H.Ramp(_plus(_v("t"), k), H.IntImm(2, Int(32)), N, Int(32, N)), UInt(8, N)) for k in (0, 1)]
    dense = interleave(loads)
    assert dense == H.Load("B", H.Ramp(_v("t"), H.IntImm(1, Int(32)), 2 * N, Int(32, 2 * N)), UInt(8, 2 * N))
    swapped = interleave(loads[::-1])
    assert isinstance(swapped, H.Shuffle) and swapped.kind == "interleave"


# ---- end to end -----------------------------------------------------------------------------------
LANES = {"x86-avx2": 8, "arm64": 8, "hvx128": 32}
MNEMONIC = {"x86-avx2": "vpmaddwd", "arm64": "udot", "hvx128": "vrmpy"}


def _pipeline(isa: str) -> tuple[hl.Func, list[Any]]:
    """f(x, y) = sum_{i<4} u32(u16(B(x, 4y + i)) * u16(A(4y + i))), written out (no RDom)."""
    x, y = hl.Var("x"), hl.Var("y")
    a = hl.ImageParam(hl.UInt(8), 1, "A")
    b = hl.ImageParam(hl.UInt(8), 2, "B")
    f = hl.Func("dot4")
    f[x, y] = sum(hl.u32(hl.u16(b[x, 4 * y + i]) * hl.u16(a[4 * y + i])) for i in range(4))
    f.vectorize(x, LANES[isa])
    return f, [a, b]


def _isa(isa: str) -> Any:
    if isa == "x86-avx2":
        return pytest.param(isa, id=isa)
    return pytest.param(isa, id=isa, marks=[pytest.mark.qemu,
                                            pytest.mark.skipif(not tools_available(isa), reason="no qemu")])


@pytest.mark.parametrize("isa", [_isa(i) for i in ("x86-avx2", "arm64", "hvx128")])
def test_written_out_dot_product_selects_the_dot_instruction(isa: str) -> None:
    w, h = 3 * LANES[isa], 5
    rng = np.random.default_rng(12)
    av = rng.integers(0, 256, 4 * h, dtype=np.uint8)
    bv = rng.integers(0, 256, (4 * h, w), dtype=np.uint8)
    want = (bv.astype(np.uint64).reshape(h, 4, w) * av.astype(np.uint64).reshape(h, 4, 1)).sum(axis=1)
    asm = {}
    for isel in ("pitchfork", "llvm"):
        f, args = _pipeline(isa)
        prog = pitchfork.compile(f, args, target=isa, isel=isel, name=f"dot4_{isel}", fallback=False)
        got = prog(av, bv, size=[w, h])
        assert np.array_equal(got, want.astype(np.uint32)), isel
        asm[isel] = prog.assembly()
    assert MNEMONIC[isa] in asm["pitchfork"]
    assert MNEMONIC[isa] not in asm["llvm"]


# ---- HVX vrmpy by a runtime scalar: the broadcast operand as the Rt register ----------------------
def _by_word_pipeline(signed_a: bool, acc: bool) -> tuple[hl.Func, list[Any]]:
    """f(x, y) = [C(x, y) +] sum_{i<4} T(W(B(x, 4y + i)) * W(A(4y + i))) (W, T = u16, u32, or i16, i32
    for a signed A): the four A bytes of a row are one runtime 32-bit word, the same for every x
    (matmul's P update)."""
    x, y = hl.Var("x"), hl.Var("y")
    narrow, wide = (hl.i16, hl.i32) if signed_a else (hl.u16, hl.u32)
    a = hl.ImageParam(hl.Int(8) if signed_a else hl.UInt(8), 1, "A")
    b = hl.ImageParam(hl.UInt(8), 2, "B")
    c = hl.ImageParam(hl.Int(32) if signed_a else hl.UInt(32), 2, "C")
    f = hl.Func("dot4w")
    s = sum(wide(narrow(b[x, 4 * y + i]) * narrow(a[4 * y + i])) for i in range(4))
    f[x, y] = (c[x, y] + s) if acc else s
    f.vectorize(x, 32)
    return f, [a, b] + ([c] if acc else [])


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
@pytest.mark.parametrize("signed_a,acc,form", [(False, False, "ub,r\\d+\\.ub"), (False, True, "ub,r\\d+\\.ub"),
                                               (True, True, "ub,r\\d+\\.b")])
def test_vrmpy_by_a_runtime_word_on_hvx(signed_a: bool, acc: bool, form: str) -> None:
    """vrmpy(Vu.ub, Rt.ub) / vrmpy(Vu.ub, Rt.b) (and their += forms) with Rt a loaded word, bit-exact."""
    import re

    w, h = 96, 5
    rng = np.random.default_rng(7)
    dt = np.int32 if signed_a else np.uint32
    av = rng.integers(-128 if signed_a else 0, 128 if signed_a else 256, 4 * h).astype(
        np.int8 if signed_a else np.uint8)
    bv = rng.integers(0, 256, (4 * h, w), dtype=np.uint8)
    cv = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, (h, w), dtype=np.int64).astype(dt)
    want = (bv.astype(np.int64).reshape(h, 4, w) * av.astype(np.int64).reshape(h, 4, 1)).sum(axis=1)
    if acc:
        want = want + cv
    f, args = _by_word_pipeline(signed_a, acc)
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="dot4w", fallback=False)
    got = prog(av, bv, *([cv] if acc else []), size=[w, h])
    assert np.array_equal(got, (want % 2**32).astype(np.uint32).view(dt))
    assert re.search(r"vrmpy\(v\d+\." + form + r"\)", prog.assembly())
