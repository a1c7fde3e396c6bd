"""pitchfork/passes/strided_stores.py: consecutive stores at stride f and offsets b0..b0+f-1 become one
dense store of their interleave, only when no value reads what an earlier store of the group writes.

* on the parsed statement: fully_connected's `sum_filter_intm[ramp(j, 4, 32)]` updates merge (their own
  reads become slices of one dense load); a group whose later value reads an element an earlier store
  wrote, or whose offsets are not consecutive, is left alone;
* end to end on hvx128: an rfactor intermediate stored with the reduction lanes outermost compiles with
  no lane loop in its update and runs bit-exactly under qemu-hexagon against Halide's realize.
"""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.frontend.printer import to_text
from pitchfork.passes.strided_stores import rewrite_stmt

I32 = HType("int", 32)
U32 = HType("uint", 32)


def _ramp(base: int, stride: int, n: int) -> H.Ramp:
    return H.Ramp(H.IntImm(base, I32), H.IntImm(stride, I32), n, I32.with_lanes(n))


def _update(j: int, read: int, n: int = 8, f: int = 4) -> H.Store:
    """buf[ramp(j, f, n)] = x[ramp(0, 1, n)] + slice_vectors(buf[ramp(read, 1, f*n)], 0, f, n)"""
    t = U32.with_lanes(n)
    own = H.Shuffle("slice", (H.Load("buf", _ramp(read, 1, f * n), U32.with_lanes(f * n)),),
                    tuple(f * i for i in range(n)), t)
    return H.Store("buf", _ramp(j, f, n), H.BinOp("+", H.Load("x", _ramp(0, 1, n), t), own, t))


def test_group_merges_and_reads_share_one_dense_load() -> None:
    block = H.Block(tuple(_update(j, j) for j in range(4)))
    out = rewrite_stmt(block)
    assert isinstance(out, H.Block) and len(out.stmts) == 1
    st = out.stmts[0]
    assert isinstance(st, H.Store) and st.index == _ramp(0, 1, 32)
    assert isinstance(st.value, H.Shuffle) and st.value.kind == "interleave"
    assert st.value.indices[:5] == (0, 8, 16, 24, 1)  # lane 4i + k = value k, lane i
    text = to_text(out)
    assert text.count("buf[ramp(0, 1, 32)") == 5, text  # the store and the four reads
    for k in range(4):
        assert f"slice_vectors((uint32x32)buf[ramp(0, 1, 32) aligned(65536, 0)], {k}, 4, 8)" in text, text


def test_group_is_left_alone_when_a_value_reads_an_earlier_store() -> None:
    # store 1's value reads residue 0 (written by store 0 just before): merging would change it
    racy = H.Block((_update(0, 0), _update(1, 0), _update(2, 2), _update(3, 3)))
    assert rewrite_stmt(racy) is racy
    gap = H.Block((_update(0, 0), _update(1, 1), _update(3, 3), _update(2, 2)))  # not b0 + j in order
    assert rewrite_stmt(gap) is gap
    short = H.Block(tuple(_update(j, j) for j in range(3)))  # three stores cannot fill stride 4
    assert rewrite_stmt(short) is short


def _rfactor_pipeline() -> tuple[hl.Func, list]:
    """out[c] = sum_k 3 * in[k, c], summed in 32 partial sums g[c, co] (k = 32 r + co) whose storage
    has c innermost: with co vectorized and c unrolled, g's update stores `g[ramp(c, 4, 32)]` for
    c = 0..3, fully_connected's sum_filter_intm on hvx128."""
    c, co, cb = hl.Var("c"), hl.Var("co"), hl.Var("cb")
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    inp.dim(0).set_min(0)
    r, ro = hl.RDom([(0, 8)], "r"), hl.RDom([(0, 32)], "ro")
    g = hl.Func("g")
    g[c, co] = hl.u32(0)
    g[c, co] += hl.u32(inp[r.x * 32 + co, c]) * hl.u32(3)
    out = hl.Func("out")
    out[c] = hl.u32(0)
    out[c] += g[c, ro.x]
    out.compute_root()
    out.update().split(c, cb, c, 4)
    g.compute_at(out, cb).vectorize(co).unroll(c)
    g.update().reorder(co, c, r.x).vectorize(co).unroll(c)
    return out, [inp]


def test_rfactor_intermediate_update_is_dense_and_bit_exact_on_hvx() -> None:
    out, args = _rfactor_pipeline()
    prog = pitchfork.compile(out, args, target="hvx128", name="strided_intm", fallback=False)
    ir_text = prog.llvm_ir()
    assert "lanes:" not in ir_text, "a lane-by-lane scatter loop is left"
    if not tools_available("hvx128"):
        pytest.skip("qemu-hexagon not available")
    rng = np.random.default_rng(9)
    x = rng.integers(0, 256, (8, 256), dtype=np.uint8)
    x[0] = 255
    got = prog(x, size=[8])
    args[0].set(hl.Buffer(x))
    np.testing.assert_array_equal(got, np.asarray(out.realize([8])))
