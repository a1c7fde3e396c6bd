"""`.atomic()` updates (LoopNestCodegen._s_Atomic): inside a parallel loop each read-modify-write of
the stored element is one atomic RMW instruction (a histogram over many rows on 2 threads loses no
count), any other integer update is a compare-and-swap loop, outside a task the block is its body,
a float sum is atomicrmw fadd, and what is not compiled (other float atomic updates) is a one-line fallback reason at compile time,
never a race."""

from __future__ import annotations

import os
import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.backend.run import tools_available
from pitchfork.codegen.base import Unsupported

x = hl.Var("x")
ROWS, COLS = 64, 512


def _histogram(parallel: bool, op: str = "add") -> tuple[hl.Func, list]:
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    r = hl.RDom([(0, COLS), (0, ROWS)])
    h = hl.Func(f"hist_{op}_{int(parallel)}")
    h[x] = hl.u32(0) if op != "max" else hl.u32(0)
    key = hl.i32(a[r.x, r.y]) % 16
    if op == "add":
        h[key] += hl.u32(1)
    elif op == "max":
        h[key] = hl.max(h[key], hl.u32(r.y * 7 + r.x % 5))
    elif op == "max_reload":  # Halide loads a[] twice (for the index and for the value)
        h[key] = hl.max(h[key], hl.u32(a[r.x, r.y]) * hl.u32(r.y + 1))
    else:  # a product: no RMW instruction, a compare-and-swap loop
        h[key] = h[key] * hl.u32(3)
    u = h.update().atomic()
    if parallel:
        u.parallel(r.y)
    return h, [a]


def _check(h: hl.Func, args: list, target: str):  # type: ignore[no-untyped-def]
    v = np.random.default_rng(8).integers(0, 256, (ROWS, COLS), dtype=np.uint8)
    args[0].set(hl.Buffer(v))
    want = np.asarray(h.realize([16]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(h, args, target=target, fallback=False)
    for _ in range(3):  # a race would lose counts in some runs
        assert np.array_equal(prog(v, size=[16], check=True), want)
    return prog


@pytest.mark.parametrize("op", ["add", "max", "max_reload"])
def test_parallel_atomic_update_is_an_atomic_rmw(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    prog = _check(*_histogram(True, op), "x86-avx2")
    assert f"atomicrmw {'add' if op == 'add' else 'umax'}" in prog.module.source_ir


def test_parallel_atomic_tuple_update(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Tuple update (count and sum per bin): one RMW per element, each Halide writes in its own
    atomic block, reading the key from the input twice."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    r = hl.RDom([(0, COLS), (0, ROWS)])
    h = hl.Func("hist_tuple")
    h[x] = (hl.u32(0), hl.u32(0))
    k = hl.i32(a[r.x, r.y]) % 8
    h[k] = (h[k][0] + 1, h[k][1] + hl.u32(a[r.x, r.y]))
    h.update().atomic().parallel(r.y)
    v = np.random.default_rng(10).integers(0, 256, (ROWS, COLS), dtype=np.uint8)
    a.set(hl.Buffer(v))
    want = [np.asarray(b) for b in h.realize([8])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(h, [a], target="x86-avx2", fallback=False)
    for _ in range(3):
        got = prog(v, size=[8], check=True)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert prog.module.source_ir.count("atomicrmw add") >= 2


def test_serial_atomic_update_is_its_body() -> None:
    prog = _check(*_histogram(False), "x86-avx2")
    assert "atomicrmw" not in prog.module.source_ir


def test_atomic_update_with_no_rmw_instruction_is_a_compare_and_swap_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    prog = _check(*_histogram(True, "other"), "x86-avx2")
    ir_text = prog.module.source_ir
    assert "cmpxchg" in ir_text and "atomicrmw" not in ir_text


def test_float_atomic_sum_and_float_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A float sum per bin is `atomicrmw fadd` (compared within float tolerance: the order of the
    additions differs between runs, as in Halide's own parallel code); a float product falls back."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    r = hl.RDom([(0, 4096)])
    h = hl.Func("hist_fsum")
    h[x] = hl.f32(0)
    h[hl.i32(a[r] * 8.0) % 8] += a[r]
    h.update().atomic().parallel(r)
    v = np.random.default_rng(12).random(4096, dtype=np.float32)
    a.set(hl.Buffer(v))
    want = np.asarray(h.realize([8]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(h, [a], target="x86-avx2", fallback=False)
    assert "atomicrmw fadd" in prog.module.source_ir
    np.testing.assert_allclose(prog(v, size=[8], check=True), want, rtol=1e-4)
    g = hl.Func("hist_fprod")
    g[x] = hl.f32(1)
    g[hl.i32(a[r] * 8.0) % 8] *= a[r]
    g.update().atomic().parallel(r)
    with pytest.raises(Unsupported, match="atomic update of .* not a scalar integer store or float sum"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pitchfork.compile(g, [a], target="x86-avx2", fallback=False)
    with pytest.warns(PitchforkFallbackWarning, match="atomic update of"):
        assert pitchfork.compile(g, [a], target="x86-avx2").is_fallback


def test_parallel_atomic_update_under_qemu_arm64() -> None:
    if not tools_available("arm64"):
        pytest.skip("no qemu-aarch64")
    prog = _check(*_histogram(True), "arm64")
    assert "atomicrmw add" in prog.module.source_ir


def test_embedded_buffer_read_in_a_parallel_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedded table's pointer and shape reach a parallel loop's task through its closure."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    y = hl.Var("y")
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    lut = hl.Buffer((np.arange(256) * 13 % 256).astype(np.uint8), "lut_par")
    f = hl.Func("lut_parallel")
    f[x, y] = lut[hl.i32(a[x, y])] + a[x, y]
    f.vectorize(x, 32).parallel(y)
    v = np.random.default_rng(9).integers(0, 256, (8, 64), dtype=np.uint8)
    a.set(hl.Buffer(v))
    want = np.asarray(f.realize([64, 8]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, [a], target="x86-avx2", fallback=False)
    assert np.array_equal(prog(v, check=True), want)
    assert os.environ["HL_NUM_THREADS"] == "2"
