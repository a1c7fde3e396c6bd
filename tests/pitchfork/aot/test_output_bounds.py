"""Outputs grown as Halide's realize grows them (pitchfork/aot/output_bounds.py, aot/call.py): a
schedule that rounds the output's extent up (TailStrategy::RoundUp) or aligns its bounds makes the
bounds query ask for more than requested; a call that allocates its output allocates that, runs, and
returns the requested window, equal to Halide's realize of the same size. A caller's own `out=` array
is never grown: there the kernel's assertion still reports the size, as Halide's does."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.aot.output_bounds import _binop, queries, required_region
from pitchfork.backend.run import tools_available


def _roundup(name: str, fx: int = 16, fy: int = 4) -> tuple[hl.Func, hl.ImageParam, hl.Param]:
    x, y, xo, xi, yo, yi = hl.vars("x y xo xi yo yi")
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    k = hl.Param(hl.UInt(8), "k")
    f = hl.Func(name)
    f[x, y] = a[x, y] + a[x + 1, y + 1] * k
    f.split(x, xo, xi, fx, hl.TailStrategy.RoundUp).split(y, yo, yi, fy, hl.TailStrategy.RoundUp).vectorize(xi)
    return f, a, k


def _image() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (64, 100), dtype=np.uint8)


def _halide(f: hl.Func, a: hl.ImageParam, k: hl.Param, img: np.ndarray, kv: int, size: list[int],
            mins: list[int]) -> np.ndarray:
    a.set(hl.Buffer(img))
    k.set(kv)
    # Halide's realize of the requested window: a buffer of the requested extents at `mins`, grown by
    # the query as realize grows it (realize itself only takes sizes, with min 0).
    pad = [16, 4]
    big = np.asarray(f.realize([m + s + p for m, s, p in zip(mins, size, pad)]))
    return big[mins[1]:mins[1] + size[1], mins[0]:mins[0] + size[0]]


def test_euclidean_division_as_halide() -> None:
    assert [_binop("/", a, b) for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2), (5, 0)]] == [3, -4, -3, 4, 0]
    assert [_binop("%", a, b) for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2), (5, 0)]] == [1, 1, 1, 1, 0]


def test_query_read_from_the_statement() -> None:
    f, a, k = _roundup("ob_query")
    prog = pitchfork.compile(f, [a, k], target="x86-avx2", name="ob_query")
    assert prog.captured is not None
    q = queries(prog.captured.text, (("ob_query", 2),))
    assert [o.output for o in q.outputs] == ["ob_query"]
    known = {"ob_query.min.0": 3, "ob_query.extent.0": 37, "ob_query.min.1": 5, "ob_query.extent.1": 21}
    assert required_region(q, "ob_query", known) == [(3, 48), (5, 24)]
    # something it cannot evaluate: no answer, so the requested size is allocated
    assert required_region(q, "ob_query", {}) is None


def test_vectorized_output_narrower_than_a_vector() -> None:
    """Without a tail strategy, a vectorized output narrower than the vector is shifted inwards: the
    query asks for a full vector ending at the requested end; the call returns the requested part.
    Where that vector would read before the input's start, the input's bounds error is Halide's too."""
    x = hl.Var("x")
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    f = hl.Func("ob_narrow")
    f[x] = a[x] * 3 + 1
    f.vectorize(x, 16)
    prog = pitchfork.compile(f, [a], target="x86-avx2", name="ob_narrow")
    assert prog.captured is not None
    q = queries(prog.captured.text, (("ob_narrow", 1),))
    assert required_region(q, "ob_narrow", {"ob_narrow.min.0": 8, "ob_narrow.extent.0": 10}) == [(2, 16)]
    assert required_region(q, "ob_narrow", {"ob_narrow.min.0": 0, "ob_narrow.extent.0": 40}) == [(0, 40)]
    img = np.arange(64, dtype=np.uint8)
    np.testing.assert_array_equal(prog(img, size=[10], min=[8]), img[8:18] * 3 + 1)
    np.testing.assert_array_equal(prog(img, size=[40]), img[:40] * 3 + 1)
    a.set(hl.Buffer(img))
    with pytest.raises(hl.HalideError, match="accessed at -6"):
        f.realize([10])
    with pytest.raises(RuntimeError, match="Input buffer a"):
        prog(img, size=[10])


@pytest.mark.parametrize("size,mins", [([37, 21], [0, 0]), ([37, 21], [3, 5]), ([48, 24], [0, 0]), ([1, 1], [2, 1])])
def test_roundup_output_x86(size: list[int], mins: list[int]) -> None:
    f, a, k = _roundup("ob_x86")
    prog = pitchfork.compile(f, [a, k], target="x86-avx2", name="ob_x86")
    assert not prog.is_fallback
    img = _image()
    got = prog(img, 3, size=size, min=mins)
    assert got.shape == (size[1], size[0])
    np.testing.assert_array_equal(got, _halide(f, a, k, img, 3, size, mins))
    # the same again (a fresh grown array each call; the previous result is unchanged)
    again = prog(img, 5, size=size, min=mins)
    np.testing.assert_array_equal(got, _halide(f, a, k, img, 3, size, mins))
    np.testing.assert_array_equal(again, _halide(f, a, k, img, 5, size, mins))


def test_caller_out_array_is_not_grown() -> None:
    f, a, k = _roundup("ob_out")
    prog = pitchfork.compile(f, [a, k], target="x86-avx2", name="ob_out")
    out = np.zeros((21, 37), np.uint8)
    with pytest.raises(RuntimeError, match="Halide assertion"):
        prog(_image(), 3, out=out)


def test_align_bounds_moves_the_min() -> None:
    x = hl.Var("x")
    a = hl.ImageParam(hl.Int(16), 1, "a")
    f = hl.Func("ob_align")
    f[x] = a[x] * 3 - a[x + 2]
    f.align_bounds(x, 8).vectorize(x, 8)
    prog = pitchfork.compile(f, [a], target="x86-avx2", name="ob_align")
    img = np.arange(-200, 200, dtype=np.int16)
    got = prog(img, size=[13], min=[5])
    want = (img[5:18].astype(np.int32) * 3 - img[7:20]).astype(np.int16)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("isa", ["arm64", "hvx128"])
def test_roundup_output_under_qemu(isa: str) -> None:
    if not tools_available(isa):
        pytest.skip(f"no {isa} toolchain/qemu")
    f, a, k = _roundup(f"ob_{isa}", fx=64 if isa == "hvx128" else 16)
    prog = pitchfork.compile(f, [a, k], target=isa, name=f"ob_{isa}")
    assert not prog.is_fallback
    img = _image()
    got = prog(img, 3, size=[37, 21], min=[3, 5])
    np.testing.assert_array_equal(got, _halide(f, a, k, img, 3, [37, 21], [3, 5]))
