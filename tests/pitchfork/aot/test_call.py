"""Binding arrays to a compiled pipeline (pitchfork/aot/call.py, pitchfork/backend/harness.py): a dense
array in any axis order keeps its layout (an interleaved image's transposed view is passed with its own
strides, as Halide's Buffer passes it), and an output whose strides the schedule constrains is allocated
in that layout; on x86 in process and through the checked harness (qemu for arm64 and hvx128)."""

from __future__ import annotations

import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.aot.call import new_output, output_layout, stride_constraints
from pitchfork.backend.harness import dense, from_raw_bytes, raw_bytes
from pitchfork.backend.run import tools_available

W, H, C = 64, 8, 3


def _interleaved() -> tuple[hl.Func, hl.ImageParam]:
    """RGB in, RGB out, both interleaved (channel innermost), as Halide's apps declare it."""
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    a = hl.ImageParam(hl.UInt(8), 3, "rgb")
    f = hl.Func("rgb_scale")
    f[x, y, c] = hl.u8((hl.u16(a[x, y, c]) * (c + 1) + a[x, y, 2 - c]) >> 1)
    f.reorder(c, x, y).bound(c, 0, C).unroll(c).vectorize(x, 16)
    a.dim(0).set_stride(C)
    a.dim(2).set_stride(1).set_bounds(0, C)
    out = f.output_buffer()
    out.dim(0).set_stride(C)
    out.dim(1).set_stride(C * W)
    out.dim(2).set_stride(1)
    return f, a


def _rgb() -> np.ndarray:
    """An interleaved (H, W, C) image seen as Halide's (x, y, c): numpy axes (c, y, x), strides (1, 3W, 3)."""
    return np.random.default_rng(4).integers(0, 256, (H, W, C), dtype=np.uint8).transpose(2, 0, 1)


def _halide(f: hl.Func, a: hl.ImageParam, v: np.ndarray) -> np.ndarray:
    a.set(hl.Buffer(v))
    ref = new_output([W, H, C], np.uint8, [2, 0, 1])
    f.realize(hl.Buffer(ref))
    return ref


@pytest.mark.parametrize("target,check", [("x86-avx2", False), ("x86-avx2", True), ("arm64", True),
                                          ("hvx128", True)])
def test_interleaved_input_and_output(target: str, check: bool) -> None:
    if not tools_available(target):
        pytest.skip(f"no runner for {target}")
    f, a = _interleaved()
    v = _rgb()
    want = _halide(f, a, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, [a], target=target, fallback=False)
    got = prog(v, size=[W, H, C], check=check)
    assert got.strides == (1, C * W, C)  # allocated interleaved, as the schedule asks
    assert np.array_equal(got, want)


def test_stride_constraints_and_layout() -> None:
    text = ('assert(f.stride.0 == 3, halide_error_constraint_violated("f.stride.0", f.stride.0, "3", 3))\n'
            'assert(f.stride.2 == 1, halide_error_constraint_violated("f.stride.2", f.stride.2, "1", 1))\n'
            'assert(g.stride.0 == g.extent.1, halide_error_constraint_violated("g.stride.0", g.stride.0, '
            '"g.extent.1", g.extent.1))\n')
    assert stride_constraints(text, "f") == {0: 3, 2: 1}
    assert stride_constraints(text, "g") == {0: ("extent", 1)}
    assert output_layout({0: 3, 2: 1}, [64, 8, 3]) == [2, 0, 1]
    assert output_layout({0: 1}, [64, 8, 3]) is None  # planar already meets it
    assert output_layout({0: 5, 2: 1}, [64, 8, 3]) is None  # no dense layout does: the kernel reports it
    arr = new_output([64, 8, 3], np.uint8, [2, 0, 1])
    assert arr.shape == (3, 8, 64) and arr.strides == (1, 192, 3)


def test_dense_layouts_round_trip_through_raw_bytes() -> None:
    base = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)
    for a in (base, base.transpose(2, 0, 1), base[:, ::2, :], base[:, ::-1, :]):
        d = dense(a)
        assert np.array_equal(d, a)
        if a is base or a.base is base and a.strides == base.transpose(2, 0, 1).strides:
            assert d is a  # a dense array keeps its memory: no copy
        back = from_raw_bytes(raw_bytes(d).copy(), d)
        assert np.array_equal(back, a) and back.strides == d.strides
