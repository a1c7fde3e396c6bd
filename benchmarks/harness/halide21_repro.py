"""Reproductions of Halide 21's own wrong HVX code (the harness's missing Halide 21 rows on hvx128).

    python -m benchmarks.harness.halide21_repro

Two benchmarks' Halide 21 HVX code computes a wrong answer under qemu-hexagon while our two isels'
code for the same schedule is bit-exact. Both faults are in Halide's own Hexagon code generation,
visible in the statements Halide itself logs between its Hexagon passes (`HL_DEBUG_CODEGEN=3`), i.e.
before any LLVM option, llc run, buffer, runtime shim or emulator of ours is involved:

* matmul p1 (`row_sums_A`, a u32 sum of u8 rows vectorized across rows): Halide's pass "optimizing
  Hexagon instructions" rewrites `acc + u32(u8 load)` into `interleave.vw(acc + zxt.vuh(unpack.vub(load)))`:
  the interleave that belongs to the widened load alone is hoisted over the sum, so the accumulator,
  stored in natural lane order, is permuted each iteration (lane y reads lane y/2 + 32*(y%2)). Ten lines
  reproduce it (`rowsum`): a Func r(y) += u32(a(k, y)) computed at root, vectorized by 128, read by
  another Func. One term (width 1) is right; from two on, 124 of 128 rows are wrong. matmul p0 has
  zero offsets, so its row sums are multiplied by 0 and its output is right.
* fully_connected (both parameter sets): Halide's "Carrying values across loop iterations" pass
  (LoopCarry) deletes the whole update loop over `rco` of the rfactor intermediates `multiplied_intm`
  and `sum_filter_intm` (after it the loop nest has two loops fewer and 36 fewer vector_reduce_add):
  the products are never computed, every output is requantized from bias and zero-point terms only.
  `loop_carry_case` shows it on the benchmark's own pipeline (no smaller pipeline found yet).
* softmax: Halide 21 raises an internal error on its own HVX schedule (halide21.KNOWN_FAILURES).

Each case returns what it found; `main` prints it. tests/benchmarks/harness/test_halide21_repro.py runs
them (a fixed Halide would fail that test, and the rows should then come back).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

HVX_TARGET = "hexagon-32-noos-no_bounds_query-no_asserts-hvx_128-hvx_v66-no_runtime"


@dataclass(frozen=True)
class RowsumResult:
    width: int
    height: int
    wrong_rows: int
    #: for width 2: the row whose first element lane y's sum used (y/2 + 32*(y%2) when the accumulator is permuted)
    first_term_rows: tuple[int, ...]


def rowsum_case(width: int = 2, height: int = 128) -> RowsumResult:
    """Halide 21's HVX code for r(y) = sum_k u32(a(k, y)) (r at root, vectorized by 128, read by out),
    run once under qemu-hexagon by the harness, against numpy."""
    import halide as hl

    from benchmarks.harness import halide21, static

    a = hl.ImageParam(hl.UInt(8), 2, "a")
    x, y = hl.Var("x"), hl.Var("y")
    k = hl.RDom([(0, width)], "k")
    r, out = hl.Func("r"), hl.Func("out")
    r[y] = hl.u32(0)
    r[y] += hl.u32(a[k, y])
    out[x, y] = hl.i32(r[y])
    r.compute_root().vectorize(y, 128)
    r.update().vectorize(y, 128)
    out.bound(x, 0, 32).bound(y, 0, height).vectorize(x, 32)
    with tempfile.TemporaryDirectory(prefix="pf-halide21-repro-") as d:
        ll, s = os.path.join(d, "rowsum.ll"), os.path.join(d, "rowsum.s")
        out.compile_to_llvm_assembly(ll, [a], "rowsum", hl.Target(HVX_TARGET))
        p = subprocess.run(halide21.llc_command(ll, s), capture_output=True, text=True)
        if p.returncode:
            raise static.StaticError(f"llc failed: {p.stderr[-500:]}")
        asm = open(s).read()
    arr = np.random.default_rng(1).integers(0, 256, (height, width), dtype=np.uint8)
    spec = static.halide_kernel_spec("rowsum", [arr], [a], np.dtype(np.int32), [32, height])
    got = static.counted_run(asm, "rowsum", "hvx128", spec).outputs[0][:, 0].astype(np.int64)
    ref = arr.astype(np.int64).sum(1)
    first: tuple[int, ...] = ()
    if width == 2:  # which row's first element each lane's sum holds (-1: none)
        rest = got - arr[:, 1]
        first = tuple(int(np.flatnonzero(arr[:, 0] == v)[0]) if (arr[:, 0] == v).any() else -1 for v in rest[:8])
    return RowsumResult(width, height, int((got != ref).sum()), first)


@dataclass(frozen=True)
class PassCounts:
    """Loops and vector_reduce_add nodes in the statement Halide logs after one of its Hexagon passes."""

    after: str
    loops: int
    vector_reduce_adds: int


_CHILD = """
import halide as hl, sys
from benchmarks import registry
from benchmarks.harness.halide21 import _pipeline
b = registry.get(sys.argv[1]); out, args = b.build("hvx128", b.param_sets[int(sys.argv[2])])
_pipeline(out).compile_to_llvm_assembly(sys.argv[3], list(args), "f", hl.Target(sys.argv[4]))
"""


def hexagon_pass_counts(bench: str, pset: int = 0) -> list[PassCounts]:
    """Compile `bench` for HVX with Halide 21 at HL_DEBUG_CODEGEN=3 (in a child: Halide reads the level
    once) and count loops and vector_reduce_add in the statement after each Hexagon pass."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(prefix="pf-halide21-repro-") as d:
        p = subprocess.run([sys.executable, "-c", _CHILD, bench, str(pset), os.path.join(d, "f.ll"), HVX_TARGET],
                           capture_output=True, text=True, cwd=root,
                           env=dict(os.environ, HL_DEBUG_CODEGEN="3", PYTHONPATH=root))
    log = (p.stdout + p.stderr).splitlines()
    heads = [i for i, ln in enumerate(log) if ln.startswith("Hexagon: Lowering after")]
    out = []
    for h, nxt in zip(heads, heads[1:] + [next((i for i, ln in enumerate(log) if ln.startswith("Hexagon: function body")),
                                               len(log))]):
        body = log[h + 1:nxt]
        out.append(PassCounts(log[h][len("Hexagon: Lowering after "):].rstrip(":"),
                              sum(1 for ln in body if re.match(r"\s*for \(", ln)),
                              sum(ln.count("vector_reduce_add") for ln in body)))
    return out


def loop_carry_case() -> tuple[PassCounts, PassCounts]:
    """fully_connected p0: the statement before and after Halide's LoopCarry ("forwarding stores")."""
    counts = hexagon_pass_counts("fully_connected", 0)
    i = next(k for k, c in enumerate(counts) if c.after.startswith("forwarding stores"))
    return counts[i - 1], counts[i]


def main() -> int:
    for w in (1, 2):
        r = rowsum_case(w)
        print(f"rowsum (matmul p1's row sums), width {w}: Halide 21 HVX rows wrong: {r.wrong_rows} of {r.height}"
              + (f"; lane y holds row {list(r.first_term_rows)}'s first element (y = 0..7)" if r.first_term_rows else ""))
    before, after = loop_carry_case()
    print(f"fully_connected p0, Halide's Hexagon passes: after {before.after}: {before.loops} loops, "
          f"{before.vector_reduce_adds} vector_reduce_add; after {after.after}: {after.loops} loops, "
          f"{after.vector_reduce_adds} vector_reduce_add (the rco update loop deleted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
