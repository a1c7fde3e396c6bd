"""Whole-register row windows shared across unrolled x steps (pitchfork/passes/hvx_windows.py): the
rewrite on captured Halide IR (fires only when the steps read each row as exactly one register), and
the rewritten dot product compiled for hvx128, bit-exact under qemu-hexagon, with the rows interleaved
by vshuff and no sub-register window (valign) left."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as H
from pitchfork.frontend.capture import capture_stmt
from pitchfork.passes.dot_products import rewrite_stmt as rewrite_dot_products
from pitchfork.passes.hvx_windows import rewrite_stmt


def _pipeline(steps: int, rows: int = 4) -> tuple[hl.Func, list[Any]]:
    """f(x, y) = sum_{i<rows} u32(u16(B(x, rows*y + i)) * u16(A(rows*y + i))), 32 lanes per vector,
    `steps` vectors of x unrolled (4 steps read 128 bytes of each of B's rows)."""
    x, y, xo, xi, xii = hl.Var("x"), hl.Var("y"), hl.Var("xo"), hl.Var("xi"), hl.Var("xii")
    a = hl.ImageParam(hl.UInt(8), 1, "A")
    b = hl.ImageParam(hl.UInt(8), 2, "B")
    f = hl.Func("dot4rows")
    f[x, y] = sum(hl.u32(hl.u16(b[x, rows * y + i]) * hl.u16(a[rows * y + i])) for i in range(rows))
    f.split(x, xo, xi, 32 * steps).split(xi, xi, xii, 32).vectorize(xii).unroll(xi)
    b.dim(0).set_min(0)
    f.output_buffer().dim(0).set_min(0).set_extent((f.output_buffer().dim(0).extent() // (32 * steps)) * (32 * steps))
    return f, [a, b]


def _windows(s: H.Stmt) -> list[str]:
    out: list[str] = []
    stack: list[Any] = [s]
    while stack:
        n = stack.pop()
        if isinstance(n, H.LetStmt) and ".hvx_window" in n.name:
            out.append(n.name)
        for v in (getattr(n, f, None) for f in ("body", "then_case", "else_case")):
            if isinstance(v, H.Stmt):
                stack.append(v)
        if isinstance(n, H.Block):
            stack.extend(n.stmts)
    return out


@pytest.mark.parametrize("steps,rows,windows", [(4, 4, 1), (2, 4, 0), (8, 4, 2), (4, 8, 2), (12, 4, 3)])
def test_rows_are_shared_only_when_the_steps_read_whole_registers(steps: int, rows: int, windows: int) -> None:
    """One window per whole register of each group of 4 rows: 8 steps read two registers per row, 8
    rows are two dot-product groups; 2 steps read half a register (nothing shared)."""
    f, args = _pipeline(steps, rows)
    s = rewrite_dot_products(capture_stmt(hl.Pipeline(f), args, "hvx128").parse(), "hvx128")
    out = rewrite_stmt(s)
    assert len(_windows(out)) == windows
    if not windows:
        assert out is s


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
@pytest.mark.parametrize("steps,rows", [(4, 4), (8, 4), (4, 8)])
def test_shared_rows_run_bit_exactly_with_vshuff(steps: int, rows: int) -> None:
    w, h = 256, 3
    rng = np.random.default_rng(5)
    av = rng.integers(0, 256, rows * h, dtype=np.uint8)
    bv = rng.integers(0, 256, (rows * h, w + 5), dtype=np.uint8)  # rows not 128-byte aligned
    want = (bv[:, :w].astype(np.uint64).reshape(h, rows, w) * av.astype(np.uint64).reshape(h, rows, 1)).sum(axis=1)
    f, args = _pipeline(steps, rows)
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="dot4rows", fallback=False)
    got = prog(av, bv, size=[w, h])
    assert np.array_equal(got, want.astype(np.uint32))
    asm = prog.assembly()
    assert "vshuff" in asm and "vrmpy" in asm and "valign" not in asm


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
@pytest.mark.parametrize("ht,dt", [(hl.UInt(8), np.uint8), (hl.Int(16), np.int16), (hl.Int(32), np.int32)])
def test_two_register_interleave_runs_bit_exactly(ht: Any, dt: Any) -> None:
    """f(x) = a(x/2) for even x, b(x/2) for odd x, vectorized over two registers: Halide writes
    interleave_vectors of two whole registers, emitted as one vshuff (codegen._hvx_interleave)."""
    x = hl.Var("x")
    a, b = hl.ImageParam(ht, 1, "a"), hl.ImageParam(ht, 1, "b")
    f = hl.Func("zip2")
    f[x] = hl.select(x % 2 == 0, a[x // 2], b[x // 2])
    lanes = 2 * 1024 // ht.bits()
    f.vectorize(x, lanes)
    f.output_buffer().dim(0).set_min(0).set_extent((f.output_buffer().dim(0).extent() // lanes) * lanes)
    n = 3 * lanes
    rng = np.random.default_rng(9)
    info = np.iinfo(dt)
    av, bv = (rng.integers(info.min, info.max, n // 2, endpoint=True, dtype=np.int64).astype(dt) for _ in range(2))
    want = np.empty(n, dt)
    want[0::2], want[1::2] = av, bv
    prog = pitchfork.compile(f, [a, b], target="hvx128", isel="pitchfork", name="zip2", fallback=False)
    assert np.array_equal(prog(av, bv, size=[n]), want)
