"""HVX reductions to one lane of a value built in pieces (pitchfork/codegen/hvx_reduce.py).

* add / min / max over widening products (a widening multiply's pair, put back in lane order by a
  permutation the reduction does not need), at 16- and 32-bit lanes over two and four registers:
  bit-exact under qemu-hexagon against numpy (isel=pitchfork; the edge values first), with no
  vshuff/vdeal left in the reducing loop but the one l2norm's widening subtract needs;
* LLVM alone (isel=llvm) keeps LLVM's lowering of the whole value;
* a reduction with nothing to look through (a plain load) keeps the generic lowering, exact.
"""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.asm import find_loops
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")]

_HL = {"u8": hl.UInt(8), "i8": hl.Int(8), "u16": hl.UInt(16), "i16": hl.Int(16), "u32": hl.UInt(32),
       "i32": hl.Int(32)}
_NP = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32}


def _pipeline(kind: str, src: str, acc: str, lanes: int, square: bool) -> tuple[hl.Func, list]:
    """out[y] = kind over x of acc(in[x, y]) (squared if `square`; wrapping in `acc`), vectorized
    over x by `lanes`: Halide's VectorReduce of `lanes` lanes to one."""
    y = hl.Var("y")
    inp = hl.ImageParam(_HL[src], 2, "input")
    rx = hl.RDom([(inp.dim(0).min(), inp.dim(0).extent())], "rx")
    out = hl.Func("out")
    t = _HL[acc]
    out[y] = {"add": hl.cast(t, 0), "min": t.max(), "max": t.min()}[kind]
    v = hl.cast(t, inp[rx, y])
    v = v * v if square else v
    out[y] = {"add": lambda: out[y] + v, "min": lambda: hl.min(out[y], v), "max": lambda: hl.max(out[y], v)}[kind]()
    out.update().atomic().vectorize(rx, lanes)
    return out, [inp]


def _expected(kind: str, acc: str, a: np.ndarray, square: bool) -> np.ndarray:
    w = a.astype(np.int64).astype(_NP[acc])  # the cast, wrapping like Halide's
    if square:
        w = (w.astype(np.int64) * w.astype(np.int64)).astype(_NP[acc])
    if kind == "add":
        return w.astype(np.int64).sum(axis=1).astype(_NP[acc])
    return w.min(axis=1) if kind == "min" else w.max(axis=1)


def _input(src: str, w: int, h: int, seed: int) -> np.ndarray:
    info = np.iinfo(_NP[src])
    a = np.random.default_rng(seed).integers(info.min, int(info.max) + 1, (h, w), dtype=np.int64)
    a[0, :4] = [info.min, info.max, info.min, info.max]
    a[1, :] = info.max
    a[2, :] = info.min
    return a.astype(_NP[src])


# (kind, input type, accumulator type, lanes, squared)
CASES = [("add", "i16", "i32", 128, True), ("add", "u8", "u16", 128, True), ("add", "i8", "i16", 128, True),
         ("min", "u8", "u16", 128, True), ("max", "i8", "i16", 128, True), ("max", "i16", "i32", 64, True),
         ("min", "u16", "u32", 64, True)]


def _reduce_call(kind: str, ty: str, lanes: int) -> str:
    name = kind if kind == "add" else ("s" if ty.startswith("i") else "u") + kind
    return f"@llvm.vector.reduce.{name}.v{lanes}i{np.dtype(_NP[ty]).itemsize * 8}("


def _reduce_loop(prog: pitchfork.api.CompiledPipeline) -> list[str]:
    loops = [lp for lp in find_loops(prog.assembly(), target="hvx128")
             if lp.innermost and any("vmem" in i for i in lp.instructions)]
    assert loops
    return max(loops, key=lambda lp: len(lp.instructions)).instructions


@pytest.mark.parametrize("kind,src,acc,lanes,square", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_reduction_of_pieces_is_exact(kind: str, src: str, acc: str, lanes: int, square: bool) -> None:
    f, args = _pipeline(kind, src, acc, lanes, square)
    prog = pitchfork.compile(f, args, target="hvx128", name=f"red_{kind}_{src}_{acc}", fallback=False)
    bits = np.dtype(_NP[acc]).itemsize * 8
    assert _reduce_call(kind, acc, 1024 // bits) in prog.llvm_ir()  # one register left to reduce
    a = _input(src, 3 * lanes, 5, lanes)
    got = prog(a, size=[5], check=True)
    assert np.array_equal(got, _expected(kind, acc, a, square))


def test_l2norm_sum_of_squares_restores_no_lane_order() -> None:
    """The sum of squares of 128 i16 lanes (4 registers of i32 products): the products' pairs are
    reduced as they come out of vmpy (no vshuff after it); LLVM alone restores their order."""
    f, args = _pipeline("add", "i16", "i32", 128, True)
    ours = _reduce_loop(pitchfork.compile(f, args, target="hvx128", name="red_sq", fallback=False))
    f, args = _pipeline("add", "i16", "i32", 128, True)
    llvm = _reduce_loop(pitchfork.compile(f, args, target="hvx128", isel="llvm", name="red_sq_llvm",
                                          fallback=False))
    shuffles = [i for i in ours if re.search(r"= v(shuff|deal)\(", i)]
    assert not shuffles, ours
    assert len(ours) < len(llvm), (ours, llvm)


@pytest.mark.parametrize("kind,ty", [("add", "i32"), ("max", "u8")])
def test_nothing_to_look_through_stays_generic_and_exact(kind: str, ty: str) -> None:
    f, args = _pipeline(kind, ty, ty, 128, False)
    prog = pitchfork.compile(f, args, target="hvx128", name=f"red_{kind}_{ty}_g", fallback=False)
    assert _reduce_call(kind, ty, 128) in prog.llvm_ir()  # the whole value, as Halide's IR has it
    a = _input(ty, 2 * 128, 4, 7)
    got = prog(a, size=[4], check=True)
    assert np.array_equal(got, _expected(kind, ty, a, False))
