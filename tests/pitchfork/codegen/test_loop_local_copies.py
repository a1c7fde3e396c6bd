"""Issue 10: a straight-line gather in a loop reads the kernel's arguments through copies made in the
loop's preheader (codegen_memory.MemoryMixin._loop_local_gather), so a spilled argument is reloaded
once per entry to the loop instead of in every iteration.

* the IR facts on a small pipeline (the copies exist for the base pointer and the stride the loop
  steps by; the loop-invariant channel division reads the argument itself, so LLVM can still take it
  out of the loop nest), and the result is bit-exact (x86 JIT);
* the assembly fact on depthwise_conv p1 (depth_multiplier 2), where the spill happened: the
  16-lane gather loop loads nothing from the stack frame on x86 and arm64 (it reloaded the input
  pointer on x86, 61 instructions against Halide 21's 60; the row stride on arm64).
"""

from __future__ import annotations

import re
import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.machine import find_loops

RNG = np.random.default_rng(10)


def channel_gather() -> tuple[hl.Func, list]:
    """out[c, x, y] = input[c / dm, x, y], 16 channels a vector, loops co { y { x } }: a 16-lane
    gather of `input` inside the x loop, as depthwise_conv's resampled_input."""
    inp = hl.ImageParam(hl.UInt(8), 3, "input")
    dm = hl.Param(hl.Int(32), "dm")
    c, x, y, co, ci = hl.Var("c"), hl.Var("x"), hl.Var("y"), hl.Var("co"), hl.Var("ci")
    inp.dim(0).set_min(0).set_stride(1)
    out = hl.Func("out")
    out[c, x, y] = inp[c / dm, x, y] + hl.u8(1)
    out.split(c, co, ci, 16, hl.TailStrategy.ShiftInwards).reorder(ci, x, y, co).vectorize(ci)
    return out, [inp, dm]


@pytest.fixture(scope="module")
def gather_prog() -> pitchfork.api.CompiledPipeline:
    func, args = channel_gather()
    return pitchfork.compile(func, args, target="x86-avx2", name="channel_gather", fallback=False)


def test_gather_loop_reads_preheader_copies_of_pointer_and_stride(gather_prog) -> None:
    src = gather_prog.module.source_ir
    copied = set(re.findall(r'call (?:i8\*|ptr|i32) asm\s+"", "=r,0"\((?:i8\*|ptr|i32) %"?([\w.]+)"?\)', src))
    assert {"input", "input.stride.1"} <= copied, copied
    assert "dm" not in copied  # c / dm does not vary in the x loop: it must stay free to be hoisted
    # each copy sits at the end of a block that enters a loop, and says it touches no visible memory
    assert src.count("memory(inaccessiblemem: readwrite)") >= 2
    # after optimisation the division is still outside the x loop: no sdiv in a block of it
    opt = gather_prog.llvm_ir()
    # Halide names the Func out$<n> (a quoted label) when another Func "out" exists in the process
    xloop = re.search(r'\n("?for_out(?:\$\d+)?\.s0\.x[\w.]*"?):.*?\n\n', opt, re.S)
    assert xloop is not None and "sdiv" not in xloop.group(0)


@pytest.mark.parametrize("dm", [1, 2, 3])
def test_gather_loop_is_bit_exact(gather_prog, dm: int) -> None:
    ch, w, h = 48, 7, 5
    a = RNG.integers(0, 256, size=(h, w, -(-ch // dm)), dtype=np.uint8)
    got = gather_prog(a, dm, size=[ch, w, h])
    want = (a[:, :, np.arange(ch) // dm].astype(np.int64) + 1).astype(np.uint8)
    assert np.array_equal(got, want)


#: a load from the stack frame: x86 `N(%rbx|%rbp|%rsp)` as a source operand, arm64 `ldr x/w, [x19|x29|sp, ...]`
FRAME_LOAD = {
    "x86-avx2": re.compile(r"^mov\w*\s+-?\d*\(%r(bx|bp|sp)\)"),
    "arm64": re.compile(r"^ldr\s+[xw]\d+,\s*\[(x19|x29|sp)\b"),
}
#: a byte loaded into a vector lane, and a load addressed by base + a per-lane index register: a
#: gather has both (a predicated tail's lane-by-lane load uses constant offsets)
LANE_LOAD = {"x86-avx2": re.compile(r"^vpinsrb\s"), "arm64": re.compile(r"^ld1\s+\{\s*v\d+\.b\s*\}\[")}
INDEXED = {"x86-avx2": re.compile(r"^vpinsrb\s+\$\d+, \(%r\w+,%r\w+\)"),
           "arm64": re.compile(r"^ldr\s+b\d+, \[x\d+, w\d+, sxtw\]")}


@pytest.mark.parametrize("target", ["x86-avx2", "arm64"])
def test_depthwise_conv_gather_loop_reloads_nothing(target: str) -> None:
    from benchmarks.registry import get

    bench = get("depthwise_conv")
    func, args = bench.build(target, bench.param_sets[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(func, args, target=target, name="dw_gather", fallback=False)
    loops = [lp for lp in find_loops(prog.assembly(), target=target) if lp.innermost]
    gathers = [lp for lp in loops if sum(bool(LANE_LOAD[target].search(i)) for i in lp.instructions) >= 14
               and any(INDEXED[target].search(i) for i in lp.instructions)]
    assert gathers  # the 16-lane byte gathers of resampled_input
    reloads = [[i for i in lp.instructions if FRAME_LOAD[target].search(i)] for lp in gathers]
    assert not any(reloads), reloads
