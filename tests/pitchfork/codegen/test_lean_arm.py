"""Issue 10 on arm64: hot loops as short as Halide 21's where both select the same instructions.

* fully_connected: the sum_filter rfactor accumulators (stored at stride 4) stay in vector registers
  (LLVM's SLP vectorizer, on for arm64 as in Halide's backend), and each filter row is loaded once
  (the `filter.min.0 == 0` constraint reaches the captured statement, so equal addresses print
  equal): 20 udot and 8 loads per iteration, no lane moves (before: 70 instructions, 32 of them
  lane inserts/extracts);
* scalar stores of fixed-point values go through instruction selection at one lane: the
  requantization of each fully_connected output is sqrdmulh/srshl/sqxtn/sqadd/sqxtun, as in Halide's
  code, instead of generic expansions (4x longer);
* a broadcast of a widened scalar, `x8(int32(c[k]))`, is the narrow broadcast widened in FPIR
  (isel=pitchfork), so it multiplies by element
  (`smull`/`smlal v.4s, v.4h, v.h[i]`), as Halide's narrowed broadcasts do, instead of one `dup` register
  per coefficient (camera_pipe's colour matrix: 12 dups, spilled and reloaded in the hot loop).

Compile-only checks of the assembly (bit-exactness is tests/benchmarks, under qemu-aarch64).
"""

from __future__ import annotations

import re

import halide as hl
import pytest

import pitchfork
from benchmarks.registry import get
from pitchfork.backend.machine import find_loops


def _loops_with(asm: str, mnemonic: str) -> list[tuple[str, ...]]:
    return [lp.instructions for lp in find_loops(asm, target="arm64")
            if lp.innermost and any(i.split()[0] == mnemonic for i in lp.instructions)]


@pytest.fixture(scope="module")
def fc_asm() -> str:
    fc = get("fully_connected")
    func, args = fc.build("arm64", fc.param_sets[0])
    return pitchfork.compile(func, args, target="arm64", fallback=False).assembly()


def test_fully_connected_udot_loop_keeps_accumulators_in_registers(fc_asm: str) -> None:
    hot = max(_loops_with(fc_asm, "udot"), key=lambda body: sum(i.startswith("udot") for i in body))
    assert sum(i.startswith("udot") for i in hot) == 20  # 16 products + 4 filter-row sums
    lane_moves = [i for i in hot if re.match(r"(mov|ins|umov|fmov)\s", i) or "ld1\t{" in i or "st1\t{" in i]
    assert not lane_moves, lane_moves
    loads = [i for i in hot if re.match(r"ld(r|p|ur)\s+q", i)]
    assert len(loads) <= 8, loads  # 4 input rows + 4 filter rows (Halide 21: 8)
    # the loop bound input.extent.0 / 16 is a shift, so LSR counts bytes: no `lsl` per iteration
    assert not [i for i in hot if i.startswith("lsl")], hot
    assert len(hot) <= 31, hot  # Halide 21: 31


def test_scalar_requantization_selects_neon(fc_asm: str) -> None:
    loops = _loops_with(fc_asm, "sqrdmulh")
    assert loops, "the per-output requantization loop selects sqrdmulh"
    for body in loops:
        ops = {i.split()[0] for i in body}
        assert {"sqrdmulh", "srshl", "sqadd", "sqxtun"} <= ops, ops
    # the tiled specialization's loop over 4 outputs: load, requantize, store (Halide 21: 31)
    assert min(len(body) for body in loops) <= 16, loops


def test_broadcast_of_widened_load_multiplies_by_element() -> None:
    a, b = hl.ImageParam(hl.Int(16), 1, "a"), hl.ImageParam(hl.Int(16), 1, "b")
    c = hl.ImageParam(hl.Int(16), 1, "c")
    x = hl.Var("x")
    f = hl.Func("f")
    f[x] = hl.i16((hl.i32(a[x]) * hl.i32(c[0]) + hl.i32(b[x]) * hl.i32(c[1]) + hl.i32(c[2])) >> 8)
    f.vectorize(x, 16)
    prog = pitchfork.compile(f, [a, b, c], target="arm64", fallback=False)
    # the bias may start the accumulation chain (smlal onto the broadcast bias, no smull)
    asm = prog.assembly()
    loops = {lp for m in ("smull", "smull2", "smlal", "smlal2") for lp in _loops_with(asm, m)}
    body = [i for lp in loops for i in lp]
    widening = [i for i in body if re.match(r"sm(ull|lal)2?\s", i)]
    assert widening and all(re.search(r"\.h\[\d\]$", i) for i in widening), widening
    assert not [i for i in body if i.startswith("dup")]
