"""`.atomic()` updates (LoopNestCodegen._s_Atomic): inside a parallel loop each read-modify-write of
the stored element is what Halide 21's module has: an integer sum one `atomicrmw add` (a histogram over
many rows on 2 threads loses no count), any other update (float sums included) a compare-and-swap loop
(on the bits of a float), a vector store one of those per lane, an
update Halide guards with a mutex array takes Halide's runtime locks where threads run it; outside a
task the block is its body. Never a race."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

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


def _atomics(llvm_ir: str) -> list[str]:
    return sorted(set(re.findall(r"atomicrmw \w+|cmpxchg|load atomic", llvm_ir)))


def _halides_atomics(f: hl.Func, args: list, prog, tmp_path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    """The atomic instructions in Halide 21's own module for the same pipeline and target."""
    path = tmp_path / f"{f.name()}.ll"
    target = hl.Target(prog.halide_target).with_feature(hl.TargetFeature.NoRuntime)
    f.compile_to_llvm_assembly(str(path), args, f.name(), target)
    return _atomics(path.read_text())


@pytest.mark.parametrize("op", ["add", "max", "max_reload", "other"])
def test_parallel_atomic_update_is_halides_atomic_instruction(op: str, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """An integer sum is one `atomicrmw add`; a max or a product a compare-and-swap loop from a
    `load atomic` (Halide's RMW test is `value - element` free of the element: adds only)."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    h, args = _histogram(True, op)
    prog = _check(h, args, "x86-avx2")
    ours = _atomics(prog.module.source_ir)
    assert ours == (["atomicrmw add"] if op == "add" else ["cmpxchg", "load atomic"])
    assert ours == _halides_atomics(h, args, prog, tmp_path)


@pytest.mark.parametrize("target, op", [("x86-avx2", "add"), ("x86-avx2", "max"), ("arm64", "max")])
def test_parallel_vector_atomic_update_is_one_atomic_operation_per_lane(target: str, op: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`f(x) op= a(x, r)` with `.atomic().vectorize(x, 8).parallel(r)`: Halide scalarises the vector
    store, one `atomicrmw add` or one compare-and-swap loop per lane; exact on every run."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    a = hl.ImageParam(hl.UInt(32), 2, f"vatomic_{op}_{target[:3]}_in")
    r = hl.RDom([(0, ROWS)])
    f = hl.Func(f"vatomic_{op}_{target[:3]}")
    f[x] = hl.u32(0)
    f[x] = (f[x] + a[x, r]) if op == "add" else hl.max(f[x], a[x, r] * hl.u32(r + 1))
    f.update().atomic().vectorize(x, 8).parallel(r)
    v = np.random.default_rng(4).integers(0, 1 << 20, (ROWS, 32), dtype=np.uint32)
    a.set(hl.Buffer(v))
    want = np.asarray(f.realize([32]))
    if not tools_available(target):
        pytest.skip(f"no runner for {target}")
    prog = _compile_quietly(f, [a], target)
    for _ in range(3):
        assert np.array_equal(prog(v, size=[32], check=True), want)
    src = prog.module.source_ir
    assert _atomics(src) == _halides_atomics(f, [a], prog, tmp_path)
    assert src.count("atomicrmw add" if op == "add" else "cmpxchg") == 8


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


def _float_bins(name: str) -> tuple[hl.ImageParam, hl.RDom, np.ndarray]:
    a = hl.ImageParam(hl.Float(32), 1, f"{name}_in")
    v = np.random.default_rng(12).random(4096, dtype=np.float32)
    a.set(hl.Buffer(v))
    return a, hl.RDom([(0, 4096)]), v


def _compile_quietly(f: hl.Func, args: list, target: str):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pitchfork.compile(f, args, target=target, fallback=False)


def test_float_atomic_sum_is_a_compare_and_swap_loop(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A float sum per bin is a compare-and-swap loop on the element's bits, as Halide's CPU code
    (its atomicrmw is for integer adds only); compared within float tolerance: the order of the
    additions differs between runs, as in Halide's own parallel code."""
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    a, r, v = _float_bins("fsum")
    h = hl.Func("hist_fsum")
    h[x] = hl.f32(0)
    h[hl.i32(a[r] * 8.0) % 8] += a[r]
    h.update().atomic().parallel(r)
    want = np.asarray(h.realize([8]))
    prog = _compile_quietly(h, [a], "x86-avx2")
    assert _atomics(prog.module.source_ir) == ["cmpxchg", "load atomic"] == _halides_atomics(h, [a], prog, tmp_path)
    np.testing.assert_allclose(prog(v, size=[8], check=True), want, rtol=1e-4)


@pytest.mark.parametrize("target", ["x86-avx2", "arm64"])
def test_other_float_atomic_updates_are_compare_and_swap_loops(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A float max and a float product per bin have no RMW instruction: a compare-and-swap loop on
    the element's bits, as Halide emits it (the max is exact whatever the order; the product within
    float tolerance)."""
    if not tools_available(target):
        pytest.skip(f"no runner for {target}")
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    a, r, v = _float_bins("fcas")
    for kind in ("max", "prod"):
        g = hl.Func(f"hist_f{kind}")
        g[x] = hl.f32(1)
        k = hl.i32(a[r] * 8.0) % 8
        if kind == "max":
            g[k] = hl.max(g[k], a[r] * 3.0)
        else:
            g[k] = g[k] * a[r]
        g.update().atomic().parallel(r)
        want = np.asarray(g.realize([8]))
        prog = _compile_quietly(g, [a], target)
        assert "cmpxchg" in prog.module.source_ir and "atomicrmw" not in prog.module.source_ir
        for _ in range(3):
            got = prog(v, size=[8], check=True)
            if kind == "max":
                assert np.array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-4)


def _locked_max(parallel: bool) -> tuple[hl.Func, hl.ImageParam, np.ndarray]:
    """`g[k] = select(g[k] > a[r], g[k], a[r])`: Halide reads g[k] through a let, so the update is
    no single atomic operation: it locks the element in a mutex array (`atomic (g, g.mutex)`)."""
    a = hl.ImageParam(hl.UInt(32), 1, f"locked_in_{int(parallel)}")
    v = np.random.default_rng(3).integers(0, 1 << 30, 1 << 14, dtype=np.uint32)
    a.set(hl.Buffer(v))
    r = hl.RDom([(0, 1 << 14)])
    g = hl.Func(f"locked_max_{int(parallel)}")
    g[x] = hl.u32(0)
    k = hl.i32(a[r] % 8)
    g[k] = hl.select(g[k] > a[r], g[k], a[r])
    u = g.update().atomic()
    if parallel:
        u.parallel(r)
    return g, a, v


@pytest.mark.parametrize("target", ["x86-avx2", "arm64", "hvx128"])
def test_atomic_update_under_a_mutex(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where threads run the update (x86 JIT, arm64 under qemu) the mutex array is Halide's runtime's
    (created, each update between lock and unlock, destroyed); on hvx128, where the parallel loop is
    serial, no lock is taken. The result is exact on every ISA."""
    if not tools_available(target):
        pytest.skip(f"no runner for {target}")
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    g, a, v = _locked_max(True)
    want = np.asarray(g.realize([8]))
    prog = _compile_quietly(g, [a], target)
    src = prog.module.source_ir
    calls = ("halide_mutex_array_create", "halide_mutex_array_lock", "halide_mutex_array_unlock",
             "halide_mutex_array_destroy")
    if target == "hvx128":
        assert not any(c in src for c in calls)
    else:
        assert all(f'@"{c}"(' in src for c in calls)
    for _ in range(3):
        assert np.array_equal(prog(v, size=[8], check=True), want)


def test_serial_atomic_update_under_a_mutex_takes_no_lock() -> None:
    g, a, v = _locked_max(False)
    want = np.asarray(g.realize([8]))
    prog = _compile_quietly(g, [a], "x86-avx2")
    assert "halide_mutex_array" not in prog.module.source_ir
    assert np.array_equal(prog(v, size=[8], check=True), want)


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


_SCHEDULES = ("atomic", "parallel", "vectorize", "vectorize_parallel")


@pytest.mark.parametrize("target, schedule", [("x86-avx2", s) for s in _SCHEDULES]
                         + [("arm64", "vectorize_parallel"), ("hvx128", "vectorize_parallel")])
def test_image_histogram(target: str, schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hist[clamp(in(x, y), 0, 255)] += 1` with `hist.update().atomic()` alone, `.parallel(r.y)`,
    `.vectorize(r.x, 16)` and both: exact on every ISA (Halide runs the vectorized scatter lane by
    lane; inside a task each count is one `atomicrmw add`; hvx128 runs the parallel loop serially)."""
    if not tools_available(target):
        pytest.skip(f"no runner for {target}")
    monkeypatch.setenv("HL_NUM_THREADS", "2")
    name = f"image_hist_{schedule}_{target[:3]}"
    a = hl.ImageParam(hl.UInt(8), 2, f"{name}_in")
    r = hl.RDom([(0, COLS), (0, ROWS)])
    h = hl.Func(name)
    h[x] = hl.u32(0)
    h[hl.clamp(hl.i32(a[r.x, r.y]), 0, 255)] += hl.u32(1)
    u = h.update().atomic()
    if "vectorize" in schedule:
        u.vectorize(r.x, 16)
    if "parallel" in schedule:
        u.parallel(r.y)
    v = np.random.default_rng(11).integers(0, 256, (ROWS, COLS), dtype=np.uint8)
    a.set(hl.Buffer(v))
    want = np.asarray(h.realize([256]))
    assert np.array_equal(want, np.bincount(v.ravel(), minlength=256))
    prog = _compile_quietly(h, [a], target)
    for _ in range(3 if "parallel" in schedule else 1):
        assert np.array_equal(prog(v, size=[256], check=True), want)
    threaded = "parallel" in schedule and target != "hvx128"
    assert ("atomicrmw add" in prog.module.source_ir) == threaded
