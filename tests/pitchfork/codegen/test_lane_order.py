"""pitchfork/codegen/lane_order.py: the i32 operand of an x86 32 -> 16-bit pack computed in the order the
in-lane vpackssdw consumes (in-lane unpacks instead of cross-lane widenings and vpermq fix-ups).

* conv3x3a32 (its hot loop was 0.86x of Halide 21's speed at the timing size): the hot loop widens
  every tap from memory (vpmovzxbw m128) and unpacks in-lane; no vextracti128, no vpmovsxwd from a
  register, one vpermq (the final byte pack's); bit-exact against the numpy reference with extreme
  masks and pixels;
* a pipeline with every cheap leaf kind (a signed 8-bit interleave into vpmaddwd, a signed and an
  unsigned 16 -> 32-bit widening, a repeated pair of taps): no vpermq or vextracti128 in the loop,
  bit-exact against Halide's realize() on edge values, odd width (tail) included;
* a pack whose operand has a leaf that is not cheap (a plain i32 input) keeps the natural order and is
  bit-exact.
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from benchmarks import registry
from pitchfork.backend.machine import find_loops

ISA = "x86-avx2"


def _hot_loop(asm: str, mnemonic: str) -> list[str]:
    """The innermost loop with the most `mnemonic` instructions."""
    loops = [lp for lp in find_loops(asm, target=ISA) if lp.innermost]
    best = max(loops, key=lambda lp: sum(i.startswith(mnemonic) for i in lp.instructions))
    return [i.split()[0] for i in best.instructions]


def _realize(func: hl.Func, args: list, values: list[np.ndarray], size: list[int]) -> np.ndarray:
    for p, v in zip(args, values):
        p.set(hl.Buffer(v))
    return np.asarray(func.realize(size))


@pytest.mark.parametrize("pset", [0, 1])
def test_conv3x3a32_unpacks_in_lane_and_is_bit_exact(pset: int) -> None:
    b = registry.get("conv3x3a32")
    func, args = b.build(ISA, b.param_sets[pset])
    prog = pitchfork.compile(func, args, target=ISA, name=f"conv_lane_order{pset}", fallback=False)
    ops = _hot_loop(prog.assembly(), "vpmaddwd")
    assert ops.count("vpmaddwd") == 16, ops
    assert ops.count("vpermq") == 1 and "vextracti128" not in ops and "vpmovsxwd" not in ops, ops
    assert ops.count("vpunpcklwd") + ops.count("vpunpckhwd") == 20, ops
    rng = np.random.default_rng(7 + pset)
    for w, h in ((256, 8), (67, 7)):
        img, mask = b.make_inputs(rng, (w, h), b.param_sets[pset])
        img[0, :5] = [0, 255, 255, 0, 255]
        img[1, :3] = 255
        if pset == 0:
            mask = np.array([[-128, 127, -128], [127, -128, 127], [-128, -128, 127]], dtype=np.int8)
        got = prog(img, mask, size=[w, h])
        np.testing.assert_array_equal(got, b.reference([img, mask], b.param_sets[pset]))


def _every_leaf_kind() -> tuple[hl.Func, list]:
    """i16(clamp((a[x] * w0 + a[x+1] * w1 + c[x] - d[x]) >> 1)), a, w i8, c i16, d u16."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(8), 1, "a")
    w = hl.ImageParam(hl.Int(8), 1, "w")
    c = hl.ImageParam(hl.Int(16), 1, "c")
    d = hl.ImageParam(hl.UInt(16), 1, "d")
    acc = hl.i32(hl.i16(a[x]) * hl.i16(w[0])) + hl.i32(hl.i16(a[x + 1]) * hl.i16(w[1])) \
        + hl.i32(c[x]) - hl.i32(d[x])
    out = hl.Func("lane_order_leaves")
    out[x] = hl.i16(hl.clamp(acc >> 1, -32768, 32767))
    out.vectorize(x, 32)
    return out, [a, w, c, d]


def test_every_cheap_leaf_kind_in_pack_order() -> None:
    func, args = _every_leaf_kind()
    prog = pitchfork.compile(func, args, target=ISA, name="lane_order_leaves", fallback=False)
    ops = _hot_loop(prog.assembly(), "vpackssdw")
    assert "vpmaddwd" in ops and ops.count("vpackssdw") == 2, ops
    assert "vpermq" not in ops and "vextracti128" not in ops, ops
    rng = np.random.default_rng(3)
    for n in (128, 77):
        a = rng.integers(-128, 128, n + 1, dtype=np.int8)
        a[:4] = [-128, -128, 127, 127]
        c = rng.integers(-32768, 32768, n, dtype=np.int16)
        c[:4] = [-32768, 32767, 32767, -32768]
        d = rng.integers(0, 65536, n, dtype=np.uint16)
        d[:4] = [65535, 0, 0, 65535]
        for wv in ((-128, -128), (127, -128), (3, -7)):
            wa = np.array(wv, dtype=np.int8)
            got = prog(a, wa, c, d, size=[n])
            acc = a[:n].astype(np.int64) * wv[0] + a[1:n + 1].astype(np.int64) * wv[1] + c - d.astype(np.int64)
            np.testing.assert_array_equal(got, np.clip(acc >> 1, -32768, 32767).astype(np.int16))
            np.testing.assert_array_equal(got, _realize(func, args, [a, wa, c, d], [n]))


def test_pack_of_a_plain_i32_input_keeps_natural_order() -> None:
    x = hl.Var("x")
    c = hl.ImageParam(hl.Int(16), 1, "c")
    e = hl.ImageParam(hl.Int(32), 1, "e")
    out = hl.Func("lane_order_natural")
    out[x] = hl.i16(hl.clamp(hl.i32(c[x]) + e[x], -32768, 32767))
    out.vectorize(x, 32)
    prog = pitchfork.compile(out, [c, e], target=ISA, name="lane_order_natural", fallback=False)
    ops = _hot_loop(prog.assembly(), "vpackssdw")
    assert "vpackssdw" in ops and "vpermq" in ops, ops  # the natural-order pack and its fix-up
    rng = np.random.default_rng(5)
    n = 99
    cv = rng.integers(-32768, 32768, n, dtype=np.int16)
    # (a signed i32 sum never overflows in Halide: inputs stay clear of it)
    ev = rng.integers(-2**30, 2**30, n, dtype=np.int64).astype(np.int32)
    ev[:3] = [2**31 - 32769, -2**31 + 32768, 40000]
    got = prog(cv, ev, size=[n])
    np.testing.assert_array_equal(got, np.clip(cv.astype(np.int64) + ev, -32768, 32767).astype(np.int16))


def test_disabling_x86_lane_order_brings_back_the_natural_order_and_stays_exact() -> None:
    func, args = _every_leaf_kind()
    off = pitchfork.compile(func, args, target=ISA, name="lane_order_off", fallback=False,
                            disable_passes=["x86_lane_order"])
    ops = _hot_loop(off.assembly(), "vpackssdw")
    assert "vpackssdw" in ops and "vpermq" in ops, ops  # the natural-order pack and its fix-up
    rng = np.random.default_rng(4)
    n = 77
    a = rng.integers(-128, 128, n + 1, dtype=np.int8)
    wa = np.array([-128, 127], dtype=np.int8)
    c = rng.integers(-32768, 32768, n, dtype=np.int16)
    d = rng.integers(0, 65536, n, dtype=np.uint16)
    np.testing.assert_array_equal(off(a, wa, c, d, size=[n]), _realize(func, args, [a, wa, c, d], [n]))
