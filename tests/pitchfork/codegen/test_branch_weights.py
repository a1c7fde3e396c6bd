"""Halide's very-likely branch weights (codegen.base.VERY_LIKELY; the "branch_weights" pass: x86): every
loop's entry test and every check inside a loop (an assertion, a halide_malloc result) is marked as all
but always going on, so LLVM's block-frequency estimate of a loop body is not halved by each check
before it; the argument checks ahead of the loop nest keep even weights.

* the IR facts on a small pipeline whose row buffer is allocated in the y loop (one heap allocation
  checked inside the loop), and the result is bit-exact (x86 JIT);
* the assembly fact on camera_pipe x86, where the even weights cost the most: the denoise loop (the
  innermost loop of vpmaxuw/vpminuw) loads nothing from the stack frame. With even weights it
  reloaded 7 loop-invariant values (the raw pointer, two row offsets, ...) in every iteration,
  44 instructions against Halide 21's 36; now 37, no reload.
"""

from __future__ import annotations

import re
import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.machine import find_loops

#: the metadata node of VERY_LIKELY as llvmlite prints it
_WEIGHTS = re.compile(r'^(!\d+) = !\{ !"branch_weights", i32 1073741824, i32 0 \}$', re.M)
_BRANCH = re.compile(r'br i1 %"?[\w.]+"?, label %"?([\w.$]+)"?, label %"?([\w.$]+)"?(?:, !prof (!\d+))?')


def row_buffer() -> tuple[hl.Func, list]:
    """g[x, y] = f[x, y] + f[x + 1, y] with f computed per row of g: an allocation of the row's
    size (dynamic: a heap buffer and its null check) inside the y loop."""
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    x, y = hl.Var("x"), hl.Var("y")
    f, g = hl.Func("f"), hl.Func("g")
    f[x, y] = inp[x, y] + hl.u8(1)
    g[x, y] = f[x, y] + f[x + 1, y]
    f.compute_at(g, y).vectorize(x, 16)
    g.vectorize(x, 16)
    return g, [inp]


@pytest.fixture(scope="module")
def row_prog() -> pitchfork.api.CompiledPipeline:
    func, args = row_buffer()
    return pitchfork.compile(func, args, target="x86-avx2", name="row_buffer", fallback=False)


def test_loop_entries_and_in_loop_checks_are_very_likely(row_prog) -> None:
    src = row_prog.module.source_ir
    likely = set(_WEIGHTS.findall(src))
    assert likely, "no very-likely weights in the module"
    branches = _BRANCH.findall(src)
    # each loop's entry test (its back edge, `next != end`, keeps LLVM's own loop estimate)
    # Halide uniquifies a Func name already used in the process (`f` -> `f$1`), so the label's
    # suffix depends on which tests ran before this one in the same worker
    loops = [(re.sub(r"\$\d+", "", t), prof) for t, f, prof in branches
             if t.startswith("for_") and f.startswith("end_")]
    assert {t for t, prof in loops if prof in likely} == {t for t, _ in loops} \
        == {"for_g.s0.y.rebased", "for_f.s0.x.x", "for_g.s0.x.x"}, loops
    # the allocation inside the y loop: its check says the allocation succeeds
    allocs = [(t, prof) for t, f, prof in branches if t.startswith("alloc_") and f.endswith("_fail")]
    assert len(allocs) == 1 and allocs[0][1] in likely, allocs
    # the argument checks ahead of the loop nest keep even weights
    asserts = [prof for t, f, prof in branches if t.startswith("assert_") and f.endswith("_fail")]
    assert asserts and not any(asserts), asserts


def test_row_buffer_is_bit_exact(row_prog) -> None:
    a = np.random.default_rng(3).integers(0, 256, size=(9, 70), dtype=np.uint8)
    got = row_prog(a, size=[69, 9])
    f = a.astype(np.int64) + 1
    assert np.array_equal(got, ((f[:, :69] + f[:, 1:70]) % 256).astype(np.uint8))


#: a load from the stack frame as a source operand (x86: `N(%rsp|%rbp|%rbx)`)
_FRAME_LOAD = re.compile(r"^\w+\s+-?\d*\(%r(sp|bp|bx)\)")


def test_camera_pipe_denoise_loop_reloads_nothing() -> None:
    from benchmarks import registry

    bench = registry.get("camera_pipe")
    out, args = bench.build("x86-avx2", bench.param_sets[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Halide's prefetch warnings
        prog = pitchfork.compile(out, args, target="x86-avx2", name="camera_pipe_bw", fallback=False)
    loops = [lp for lp in find_loops(prog.assembly(), target="x86-avx2") if lp.innermost
             and any(i.startswith("vpmaxuw") for i in lp.instructions)
             and any(i.startswith("vpminuw") for i in lp.instructions)]
    assert len(loops) == 1, [lp.label for lp in loops]
    body = [i.strip() for i in loops[0].instructions]
    assert not [i for i in body if _FRAME_LOAD.match(i) or re.search(r"\(%rsp\), %r", i)], body
    assert len(body) <= 37, len(body)
