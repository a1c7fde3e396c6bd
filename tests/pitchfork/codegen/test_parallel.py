"""`.parallel()` on Halide's own runtime (pitchfork/codegen/parallel.py, pitchfork/backend/halide_runtime.py):
the loop body is a task function run by the runtime's `halide_do_par_for`, on x86 (JIT) and arm64
(qemu-aarch64, Halide's aarch64 runtime linked into the test binary), bit-exact against Halide's
realize at 1 and 2 threads; HL_NUM_THREADS reaches the runtime; hvx128 runs the loop serially and says
so; `.hexagon()` compiles in place on hvx128 and is refused elsewhere, as Halide refuses it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.errors import PipelineError
from pitchfork.codegen.parallel import PitchforkSerialNote

ROOT = Path(__file__).resolve().parents[3]


def _blur(split: int = 8):
    """benchmarks/parallel_scaling.py's 5x5 box filter, rows in strips of `split` run in parallel."""
    from benchmarks.parallel_scaling import blur5

    return blur5(split)


def _reference(out, inp, arr: np.ndarray, size: list[int]) -> np.ndarray:
    import halide as hl

    inp.set(hl.Buffer(arr))
    return np.asarray(out.realize(size))


def test_x86_par_for_one_and_two_threads() -> None:
    from pitchfork.backend.halide_runtime import set_num_threads

    out, inp = _blur()
    prog = pitchfork.compile(out, [inp], target="x86-avx2", name="blur5_par", fallback=False)
    ir_text = prog.llvm_ir()
    assert re.search(r"call i32 @halide_do_par_for\(ptr null, ptr nonnull @blur5_par\.par_for\.blur5\.s0\.y\.yo,", ir_text)
    assert re.search(r"define internal .*i32 @blur5_par\.par_for\.blur5\.s0\.y\.yo\(ptr .*, i32 .*, ptr noalias", ir_text)
    rng = np.random.default_rng(3)
    arr = rng.integers(0, 256, (141, 1204), dtype=np.uint8)  # blur_x strip: 12 rows x 1200 x 2 bytes, heap
    size = [1200, 133]  # 133 rows: the last strip overlaps (Halide's ShiftInwards)
    ref = _reference(out, inp, arr, size)
    try:
        for threads in (2, 1):
            set_num_threads(threads)
            assert np.array_equal(prog(arr, size=size), ref), threads
            assert np.array_equal(prog(arr, size=size, check=True), ref), threads  # guard bytes, inputs kept
    finally:
        set_num_threads(0)  # back to the default (HL_NUM_THREADS, or the number of cores)


def test_hl_num_threads_reaches_the_runtime() -> None:
    """HL_NUM_THREADS is read by Halide's runtime when its pool starts (a fresh process)."""
    code = ("import numpy as np, pitchfork, sys; sys.path.insert(0, sys.argv[1]);"
            "from test_parallel import _blur; from pitchfork.backend.halide_runtime import get_num_threads;"
            "out, inp = _blur(); p = pitchfork.compile(out, [inp], fallback=False);"
            "p(np.zeros((40, 260), np.uint8), size=[256, 36]); print(get_num_threads())")
    env = {**os.environ, "HL_NUM_THREADS": "3", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    got = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], env=env, capture_output=True,
                         text=True, check=True, timeout=300)
    assert got.stdout.split()[-1] == "3", got.stderr


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64"), reason="needs aarch64 gcc + qemu-aarch64")
@pytest.mark.parametrize("threads", ["2", "1"])
def test_arm64_par_for_under_qemu(threads: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HL_NUM_THREADS", threads)  # passed on to the qemu process
    out, inp = _blur()
    prog = pitchfork.compile(out, [inp], target="arm64", name="blur5_par_arm", fallback=False)
    assert "halide_do_par_for" in prog.llvm_ir()
    arr = np.random.default_rng(4).integers(0, 256, (45, 300), dtype=np.uint8)
    size = [288, 41]
    assert np.array_equal(prog(arr, size=size), _reference(out, inp, arr, size))


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="needs clang/lld + qemu-hexagon")
def test_hvx_parallel_runs_serially_with_a_note() -> None:
    import halide as hl

    x, y = hl.vars("x y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    hl.Func("avg")  # Halide renames a second Func "avg" in one process (avg$1): as under xdist, where one ran before
    f = hl.Func("avg")
    f[x, y] = hl.u8((hl.u16(inp[x, y]) + inp[x + 1, y] + 1) // 2)
    f.parallel(y).vectorize(x, 128)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prog = pitchfork.compile(f, [inp], target="hvx128", name="avg_hvx_par", fallback=False)
    notes = [str(w.message) for w in caught if issubclass(w.category, PitchforkSerialNote)]
    assert len(notes) == 1 and f"{f.name()}.s0.y" in notes[0] and "serially" in notes[0] and "\n" not in notes[0]
    assert "halide_do_par_for" not in prog.llvm_ir()
    arr = np.random.default_rng(5).integers(0, 256, (6, 257), dtype=np.uint8)
    assert np.array_equal(prog(arr, size=[256, 6]), _reference(f, inp, arr, [256, 6]))


def _offloaded(hexagon: bool = True):
    import halide as hl

    x, y = hl.vars("x y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    g = hl.Func("g_hex")
    g[x, y] = hl.u8((hl.u16(inp[x, y]) + inp[x + 1, y] + 1) // 2)
    if hexagon:
        g.hexagon()
    g.vectorize(x, 128)
    return g, inp


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="needs clang/lld + qemu-hexagon")
def test_hexagon_schedule_compiles_in_place_on_hvx() -> None:
    g, inp = _offloaded()
    prog = pitchfork.compile(g, [inp], target="hvx128", name="g_hex", fallback=False)
    assert "for<Hexagon>" in prog.captured.text  # the offloaded loop Halide 21 lowers .hexagon() to
    arr = np.random.default_rng(6).integers(0, 256, (5, 385), dtype=np.uint8)
    ref = _reference(*_offloaded(hexagon=False), arr, [384, 5])  # (Halide's JIT here has no Hexagon)
    assert np.array_equal(prog(arr, size=[384, 5]), ref)


@pytest.mark.parametrize("target", ["x86-avx2", "arm64"])
def test_hexagon_schedule_refused_without_hvx_as_halide_refuses_it(target: str) -> None:
    g, inp = _offloaded()
    with pytest.raises(PipelineError, match="requires <Hexagon> but no compatible target feature"):
        pitchfork.compile(g, [inp], target=target, name="g_hex")


def test_nested_parallel_loops() -> None:
    """Parallel loops inside a task (c, then y, then x tiles): tasks calling halide_do_par_for."""
    import halide as hl

    x, y, c, xo, xi = hl.vars("x y c xo xi")
    inp = hl.ImageParam(hl.UInt(8), 3, "input")
    f = hl.Func("nested")
    f[x, y, c] = hl.u8((hl.u16(inp[x, y, c]) * 3 + inp[x + 1, y, c]) >> 2)
    f.split(x, xo, xi, 64).parallel(c).parallel(y).parallel(xo).vectorize(xi, 32)
    prog = pitchfork.compile(f, [inp], target="x86-avx2", name="nested_par", fallback=False)
    assert len(re.findall(r"call i32 @halide_do_par_for\(", prog.llvm_ir())) == 3
    arr = np.random.default_rng(9).integers(0, 256, (3, 20, 257), dtype=np.uint8)
    assert np.array_equal(prog(arr, size=[256, 20, 3], check=True), _reference(f, inp, arr, [256, 20, 3]))


def _async(kind: str):
    """h reads g (async producer) and g2: "fold" g at h's rows in a 2-row folded buffer (producer and
    consumer in lock step on semaphores), "two" g as in "fold" and g2 at root, both async, "rootpar" g at root, async and
    parallel, consumed by parallel rows (loop tasks inside the task system)."""
    import halide as hl

    x, y = hl.vars("x y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    g, g2, h = hl.Func("g_" + kind), hl.Func("g2_" + kind), hl.Func("h_" + kind)
    g[x, y] = inp[x, y] + 1
    g2[x, y] = inp[x, y] * 3
    h[x, y] = g[x, y] + g[x, y + 1] + g2[x, y]
    h.vectorize(x, 32)
    if kind == "fold":
        g.compute_at(h, y).store_root().async_()
    elif kind == "two":
        g.compute_at(h, y).store_root().async_()
        g2.compute_root().async_()
    else:
        g.compute_root().async_().parallel(y)
        h.parallel(y)
    return h, inp


@pytest.mark.parametrize("kind", ["fold", "two", "rootpar"])
def test_async_producers_on_halide_task_system(kind: str) -> None:
    from pitchfork.backend.halide_runtime import set_num_threads

    h, inp = _async(kind)
    prog = pitchfork.compile(h, [inp], target="x86-avx2", name=f"async_{kind}", fallback=False)
    assert "call i32 @halide_do_parallel_tasks(" in prog.llvm_ir()
    arr = np.random.default_rng(10).integers(0, 255, (70, 130), dtype=np.uint8)
    ref = _reference(h, inp, arr, [128, 64])
    try:
        for threads in (2, 1):  # one thread: the runtime adds what min_threads asks for
            set_num_threads(threads)
            assert np.array_equal(prog(arr, size=[128, 64], check=True), ref), threads
    finally:
        set_num_threads(0)


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64"), reason="needs aarch64 gcc + qemu-aarch64")
def test_async_producers_arm64_under_qemu() -> None:
    from pitchfork.api import run_many

    arr = np.random.default_rng(11).integers(0, 255, (18, 66), dtype=np.uint8)
    runs, refs = [], []
    for kind in ("fold", "rootpar"):
        h, inp = _async(kind)
        runs.append((pitchfork.compile(h, [inp], target="arm64", name=f"async_arm_{kind}", fallback=False),
                     [arr], [64, 16]))
        refs.append(_reference(h, inp, arr, [64, 16]))
    for got, ref in zip(run_many(runs), refs):  # one harness, one qemu run
        assert np.array_equal(got, ref)


def test_async_producer_on_hvx_falls_back_naming_it() -> None:
    from pitchfork.api import PitchforkFallbackWarning

    h, inp = _async("fold")
    with pytest.warns(PitchforkFallbackWarning, match=r"async\(\) producer \(fork"):
        prog = pitchfork.compile(h, [inp], target="hvx128", name="h_async_hvx")
    assert prog.is_fallback
