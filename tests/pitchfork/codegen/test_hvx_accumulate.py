"""HVX accumulation chains and stencil sums as lean as Halide 21's (issue 10, gaussian7x7 hvx128):

* `start_from_fresh` starts a chain of `hvx.vmpyi_acc` / `add` from a summand nothing else reads
  (same value: checked with the interpreter), and leaves other terms alone;
* in gaussian7x7's column pass the chain starts from a valigned tap, its 4-register adds are one
  `vadd` per register pair, and the valigned taps are emitted at their first use: the steady-state
  loop is no longer than Halide 21's and the kernel is bit-exact under qemu-hexagon;
* paired subtracts of valigned taps are bit-exact too.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
import pitchfork.targets.hvx  # noqa: F401 (registers hvx.vmpyi_acc)
from fpir.interp import evaluate
from fpir.ops import make
from fpir.term import Term, const, var
from fpir.types import ScalarType
from pitchfork.backend.machine import find_loops
from pitchfork.backend.run import tools_available
from pitchfork.codegen.hvx_accumulate import start_from_fresh

I32 = ScalarType(True, 32)
needs_qemu = pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")


def _taps() -> tuple[Term, dict[str, Term]]:
    """gaussian7x7's selected column sum: vmpyi_acc(add(acc^4(t0, ...), t6), t5, 6)."""
    t = {f"t{k}": var(f"t{k}", I32) for k in range(7)}
    acc = t["t0"]
    for k, c in ((1, 6), (2, 15), (3, 20), (4, 15)):
        acc = make("hvx.vmpyi_acc", acc, t[f"t{k}"], const(c, I32))
    acc = make("add", acc, t["t6"], flags=("nsw",))
    return make("hvx.vmpyi_acc", acc, t["t5"], const(6, I32)), t


def _first_accumulator(t: Term) -> Term:
    while t.op in ("add", "hvx.vmpyi_acc") and t.args[0].op in ("add", "hvx.vmpyi_acc"):
        t = t.args[0]
    return t.args[0]


def test_chain_starts_from_a_fresh_summand_with_the_same_value() -> None:
    term, t = _taps()
    fresh = start_from_fresh(term, lambda x: int(x is t["t0"]))  # t0: the aligned (shared) tap
    assert _first_accumulator(term) is t["t0"] and _first_accumulator(fresh) is t["t6"]
    assert sum(1 for n in fresh.walk() if n.op == "hvx.vmpyi_acc") == 5
    rng = np.random.default_rng(7)
    env = {k: rng.integers(-2**31, 2**31, 64, dtype=np.int64) for k in t}
    env["t0"][:4] = 2**31 - 1  # partial sums wrap in either order
    assert np.array_equal(evaluate(fresh, env), evaluate(term, env))


def test_other_terms_are_left_alone() -> None:
    term, t = _taps()
    assert start_from_fresh(term, lambda x: 0) is term  # already starts from a lowest-rank summand
    assert start_from_fresh(term, lambda x: int(x.is_var)) is term  # nothing better to start from
    plain = make("add", make("add", t["t0"], t["t1"]), t["t2"])  # no product: an add makes a new register
    assert start_from_fresh(plain, lambda x: int(x is t["t0"])) is plain
    # a partial sum read twice is not taken apart
    shared = make("hvx.vmpyi_acc", t["t0"], t["t1"], const(3, I32))
    both = make("add", make("add", shared, t["t2"]), make("hvx.vmpyi", shared, const(2, I32)))
    out = start_from_fresh(both, lambda x: int(x is t["t0"]))
    assert shared in set(out.walk())


@pytest.mark.parametrize("op", ["hvx.vmpy_acc", "hvx.vasr_acc", "hvx.vadd_w_acc"])
def test_any_accumulating_instruction_starts_from_a_fresh_summand(op: str) -> None:
    """Every lane-wise wrapping accumulate (acc + f(args) at the accumulator's type) is a chain link,
    not only vmpyi_acc: a chain of widening multiply-, shift- or add-accumulates onto u16 starts from
    the summand of lowest rank, with the same value."""
    u8, u16 = ScalarType(False, 8), ScalarType(op == "hvx.vasr_acc", 16)  # vasr.acc: signed halves
    d = [var(f"d{k}", u8) for k in range(3)]
    s = [var(f"s{k}", u16) for k in range(3)]

    def link(acc: Term, k: int) -> Term:
        if op == "hvx.vmpy_acc":
            return make(op, acc, d[k], const(3 + k, u8))
        if op == "hvx.vasr_acc":
            return make(op, acc, s[k], const(k + 1, u16))
        return make(op, acc, d[k], d[(k + 1) % 3])

    acc = s[0]
    for k in range(3):
        acc = link(acc, k)
    term = make("add", acc, s[2])
    fresh = start_from_fresh(term, lambda x: int(x is s[0]))
    assert _first_accumulator_of(term, op) is s[0] and _first_accumulator_of(fresh, op) is s[2]
    rng = np.random.default_rng(3)
    env = {v.name: rng.integers(v.type.min, v.type.max + 1, 64, dtype=np.int64) for v in d + s}
    env["s0"][:4] = u16.max  # partial sums wrap in either order
    assert np.array_equal(evaluate(fresh, env), evaluate(term, env))


def _first_accumulator_of(t: Term, op: str) -> Term:
    while t.op in ("add", op) and t.args[0].op in ("add", op):
        t = t.args[0]
    return t.args[0]


def _column_loop(asm: str, function: str) -> list[str]:
    """The column pass's loop: the innermost loop with the most valigns (the row pass has none)."""
    loops = [lp for lp in find_loops(asm, function, target="hvx128") if lp.innermost]
    return max(loops, key=lambda lp: sum(1 for i in lp.instructions if "valign" in i)).instructions


def _halide_hvx_loop(func: hl.Func, args: list) -> int:
    """Halide 21's steady-state loop on hvx128, compiled as the benchmark harness does."""
    from benchmarks.common import HALIDE_TARGETS
    from benchmarks.harness.static import llvm_tool

    with tempfile.TemporaryDirectory() as d:
        ll, s = Path(d) / "h.ll", Path(d) / "h.s"
        target = hl.Target(HALIDE_TARGETS["hvx128"] + "-no_runtime")
        hl.Pipeline(func).compile_to_llvm_assembly(str(ll), args, "h", target)
        subprocess.run([llvm_tool("llc"), "-O3", "-mtriple=hexagon-unknown-linux-musl", "-mcpu=hexagonv66",
                        "-mattr=+hvxv66,+hvx-length128b", "-hexagon-small-data-threshold=0", "-hvc-vi=false",
                        "-relocation-model=static", str(ll), "-o", str(s)], check=True, capture_output=True)
        return len(_column_loop(s.read_text(), "h"))


@pytest.mark.qemu
@needs_qemu
def test_gaussian7x7_column_loop_no_longer_than_halides() -> None:
    from benchmarks.registry import get

    g = get("gaussian7x7")
    func, args = g.build("hvx128", g.param_sets[0])
    prog = pitchfork.compile(func, args, target="hvx128", isel="pitchfork", name="g7", fallback=False)
    assert re.search(r"= add <64 x i32>", prog.llvm_ir())  # register pairs
    loop = _column_loop(prog.assembly(), "g7")
    assert sum(1 for i in loop if "vmpyi" in i) == 80 and sum(1 for i in loop if "vadd" in i) == 8
    assert len(loop) <= _halide_hvx_loop(*g.build("hvx128", g.param_sets[0])), len(loop)
    img = np.random.default_rng(2).integers(0, 256, (8, 256), dtype=np.uint8)
    assert np.array_equal(prog(img, size=[256, 8]), g.reference([img], g.param_sets[0]))


def _difference_stencil() -> tuple[hl.Func, list[Any]]:
    """g = f(x) - f(x+1) + f(x+2) - f(x+3)*5 on i32 rows stored 128-aligned (4 registers a vector)."""
    x, y, xo, xi = hl.Var("x"), hl.Var("y"), hl.Var("xo"), hl.Var("xi")
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    f = hl.Func("f")
    f[x, y] = hl.i32(inp[x, y]) * 1000003
    g = hl.Func("diff")
    g[x, y] = f[x, y] - f[x + 1, y] + f[x + 2, y] - f[x + 3, y] * 5
    g.split(x, xo, xi, 128, hl.TailStrategy.RoundUp).vectorize(xi)
    f.compute_at(g, y).align_storage(x, 128).vectorize(x, 128, hl.TailStrategy.RoundUp)
    ob = g.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // 128) * 128)
    return g, [inp]


@pytest.mark.qemu
@needs_qemu
def test_paired_adds_and_subtracts_are_bit_exact() -> None:
    g, args = _difference_stencil()
    prog = pitchfork.compile(g, args, target="hvx128", isel="pitchfork", name="diff", fallback=False)
    assert re.search(r"= (add|sub) <64 x i32>", prog.llvm_ir())
    w, h = 256, 3
    a = np.random.default_rng(4).integers(0, 256, (h, w + 128), dtype=np.uint8)
    f = (a.astype(np.int64) * 1000003)
    want = f[:, :w] - f[:, 1:w + 1] + f[:, 2:w + 2] - f[:, 3:w + 3] * 5
    assert np.array_equal(prog(a, size=[w, h]), ((want + 2**31) % 2**32 - 2**31).astype(np.int32))
