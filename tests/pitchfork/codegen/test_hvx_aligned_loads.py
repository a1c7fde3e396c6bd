"""HVX loads as Halide's Hexagon backend emits them (isel=pitchfork, hvx128), each run bit-exactly
under qemu-hexagon against numpy:

* a dense load of a 128-aligned allocation at a known misalignment (`aligned(128, r)`, a stencil's
  x+1, x+2, ...) is the aligned blocks holding its bytes combined with `valign`
  (codegen_memory._hvx_misaligned_load), so every load of the allocation is 128-byte aligned and
  the taps of one row share their blocks;
* a dot product by runtime taps that are not at consecutive addresses (conv3x3a32's mask) takes the
  taps as one repeated 32-bit word (dot_products._repeat_group): `vrmpy(Vu.ub, Rt.b)` by a scalar
  register, and the first product of a chain is the plain (non-accumulating) form.
"""

from __future__ import annotations

import re
from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu, pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")]

LANES = 128


def _stencil(ht: Any) -> tuple[hl.Func, list[Any]]:
    """g(x, y) = sum_k i32(f(x + k, y)) * (k + 2), k < 4, with f stored per row in a 128-aligned
    allocation (u8: one register per vector; i16: two)."""
    x, y, xo, xi = hl.Var("x"), hl.Var("y"), hl.Var("xo"), hl.Var("xi")
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    f = hl.Func("f")
    f[x, y] = hl.cast(ht, inp[x, y]) * 3 if ht.bits() > 8 else inp[x, y] + 1
    g = hl.Func("win")
    g[x, y] = sum(hl.i32(f[x + k, y]) * (k + 2) for k in range(4))
    g.split(x, xo, xi, LANES, hl.TailStrategy.RoundUp).vectorize(xi)
    f.compute_at(g, y).align_storage(x, 128).vectorize(x, LANES, hl.TailStrategy.RoundUp)
    ob = g.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // LANES) * LANES)
    return g, [inp]


def _allocation_loads(ir_text: str, name: str) -> list[str]:
    """The vector loads of the kernel's allocations (their alias scope), as IR lines."""
    meta = dict(re.findall(r"^(!\d+) = (.*)$", ir_text, re.M))
    scope = next(k for k, v in meta.items() if f'!"{name}.allocations"' in v)
    own = next(k for k, v in meta.items() if v == f"!{{{scope}}}")
    return [ln for ln in ir_text.splitlines() if "load <" in ln and f"!alias.scope {own}," in ln]


@pytest.mark.parametrize("ht", [hl.UInt(8), hl.Int(16)], ids=["u8", "i16"])
def test_misaligned_taps_are_aligned_blocks_and_valign(ht: Any) -> None:
    g, args = _stencil(ht)
    prog = pitchfork.compile(g, args, target="hvx128", isel="pitchfork", name="win", fallback=False)
    loads = _allocation_loads(prog.llvm_ir(), "win")
    assert loads and all("align 128" in ln for ln in loads), loads
    assert "valign" in prog.assembly()
    w, h = 256, 3
    a = np.random.default_rng(1).integers(0, 256, (h, w + LANES), dtype=np.uint8)
    fa = a.astype(np.int64) * 3 if ht.bits() > 8 else (a.astype(np.int64) + 1) % 256
    want = sum(fa[:, k:k + w] * (k + 2) for k in range(4))
    assert np.array_equal(prog(a, size=[w, h]), want.astype(np.int32))


def test_runtime_taps_are_one_scalar_word_of_vrmpy() -> None:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    mask = hl.ImageParam(hl.Int(8), 1, "mask")
    g = hl.Func("taps")
    # taps at mask[0], [2], [4], [6]: not one 4-byte load, so the word is built from four scalars
    g[x, y] = sum(hl.i32(hl.i16(inp[x + k, y]) * hl.i16(mask[2 * k])) for k in range(4))
    g.vectorize(x, LANES)
    ob = g.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // LANES) * LANES)
    prog = pitchfork.compile(g, [inp, mask], target="hvx128", isel="pitchfork", name="taps", fallback=False)
    asm = prog.assembly()
    assert re.search(r"= vrmpy\(v\d+\.ub,r\d+\.b\)", asm)  # by a scalar register, not accumulating
    assert not re.search(r"vrmpy\(v\d+\.ub,v\d+\.b\)", asm)  # no vector of taps
    assert "+= vrmpy" not in asm  # a zero accumulator takes the plain form
    w, h = 256, 3
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (h, w + 3), dtype=np.uint8)
    m = rng.integers(-128, 128, 8, dtype=np.int8)
    want = sum(a[:, k:k + w].astype(np.int64) * int(m[2 * k]) for k in range(4))
    assert np.array_equal(prog(a, m, size=[w, h]), want.astype(np.int32))
