"""[1 2 1] windows of one stream regrouped out of 16-bit add trees (pitchfork/passes/stream_taps.py): the
rewrite on Halide IR (only a stream read at o, o+1, o+2 with weights a, 2a, a; only 16-bit trees), and
pipelines whose inlined sums hold such windows compiled for hvx128 with vtmpy, bit-exact under qemu."""

from __future__ import annotations

from typing import Any, Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend.capture import halide_target
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.passes.stream_taps import regroup, stream_fact

N = 128
I32 = HType("int", 32, 1)


def _load(buf: str, off: int, base: str = "t") -> H.Load:
    b: H.Expr = H.Variable(base, I32)
    if off:
        b = H.BinOp("+", b, H.IntImm(off, I32), I32)
    return H.Load(buf, H.Ramp(b, H.IntImm(1, I32), N, I32.with_lanes(N)), HType("uint", 8, N))


def _tree(weights: dict[tuple[str, int], int], bits: int = 16) -> H.Expr:
    t = HType("int", bits, N)
    out: H.Expr | None = None
    for (buf, off), w in weights.items():
        x: H.Expr = H.BinOp("*", H.Cast(t, _load(buf, off)), H.Broadcast(H.IntImm(w, t.elem), N, t), t)
        out = x if out is None else H.BinOp("+", out, x, t)
    assert out is not None
    return out


def _windows(e: H.Expr) -> int:
    return sum(1 for n in H.walk(e) if isinstance(n, H.Cast) and n.type.is_uint and n.type.bits == 16
               and isinstance(n.value, H.Load)) // 3


def test_stream_facts_compare_symbolic_index_and_offset() -> None:
    assert stream_fact(_load("p", 1)) == (("p", "uint8", H.Variable("t", I32)), 1)
    assert stream_fact(_load("p", 1))[0] != stream_fact(_load("p", 1, base="u"))[0]  # type: ignore[index]
    assert stream_fact(_load("p", 1), bound={"t"}) is None  # an expression-level let could rebind t


@pytest.mark.parametrize(("weights", "windows"), [
    ({("p", -1): 1, ("p", 0): 2, ("p", 1): 1}, 1),
    ({("p", 0): 2, ("p", 1): 1, ("p", -1): 1, ("q", 5): 3}, 1),             # any order, other leaves kept
    ({("p", 0): -3, ("p", 1): -6, ("p", 2): -3}, 1),                        # a, 2a, a with a = -3
    ({("p", 0): 1, ("p", 1): 3, ("p", 2): 1}, 1),                           # [1 q 1]
    ({("p", 0): 4, ("p", 1): 6, ("p", 2): 2}, 1),                           # 2 * [2 3 1]
    ({("p", 0): 3, ("p", 1): 2, ("p", 2): 2}, 0),                           # 3 not a multiple of 2
    ({("p", 0): 1, ("p", 1): -3, ("p", 2): 1}, 0),                          # a negative tap: a difference
    ({("p", 0): 1, ("p", 1): 200, ("p", 2): 1}, 0),                         # not a byte tap
    ({("p", 0): 1, ("p", 2): 2, ("p", 4): 1}, 0),                           # not consecutive
    ({("p", 0): 1, ("q", 1): 2, ("p", 2): 1}, 0),                           # two buffers
])
def test_regroup_takes_byte_tap_windows_of_one_stream(weights: dict, windows: int) -> None:
    e = _tree(weights)
    out = regroup(e)
    assert _windows(out) == windows
    if not windows:
        assert out is e


def test_regroup_leaves_products_of_two_variables_alone() -> None:
    t = HType("int", 16, N)
    e = H.BinOp("*", H.Cast(t, _load("p", 0)), H.Cast(t, _load("p", 1)), t)
    assert regroup(e) is e


def test_regroup_leaves_32_bit_trees_alone() -> None:
    e = _tree({("p", 0): 1, ("p", 1): 2, ("p", 2): 1}, bits=32)  # nsw arithmetic: not regrouped
    assert regroup(e) is e


def _stencil(expr: Callable[[Callable[[int, int], Any]], Any], t: Any) -> tuple[hl.Func, list[Any]]:
    x, y, yi = hl.Var("x"), hl.Var("y"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    f = hl.Func("stencil")
    f[x, y] = expr(lambda dx, dy: hl.cast(t, inp[x + dx, y + dy]))
    f.split(y, y, yi, 2).vectorize(x, N).unroll(yi)
    inp.dim(0).set_min(0)
    inp.dim(1).set_min(0)
    ob = f.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // N) * N)
    ob.dim(1).set_min(0).set_extent((ob.dim(1).extent() // 2) * 2)
    return f, [inp]


CASES = {
    # gaussian3x3 as Halide simplifies it: nine weighted pixels, three horizontal windows
    "gaussian": (lambda v: hl.u8((v(0, 0) + 2 * v(1, 0) + v(2, 0) + 2 * (v(0, 1) + 2 * v(1, 1) + v(2, 1))
                                  + v(0, 2) + 2 * v(1, 2) + v(2, 2) + 8) >> 4), hl.Int(16), 3,
                 lambda p: ((sum(kx * ky * p[dy:dy + 4, dx:dx + N] for dy, ky in enumerate((1, 2, 1))
                                 for dx, kx in enumerate((1, 2, 1))) + 8) >> 4).astype(np.uint8)),
    # a = -3 (wrapping u16), another pixel and a constant left over
    "weighted": (lambda v: v(0, 0) * 65533 + v(1, 0) * 65530 + v(2, 0) * 65533 + v(1, 1) - 7, hl.UInt(16), 1,
                 lambda p: ((p[:4, :N] * -3 + p[:4, 1:N + 1] * -6 + p[:4, 2:N + 2] * -3 + p[1:5, 1:N + 1] - 7)
                            % 65536).astype(np.uint16)),
}


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
@pytest.mark.parametrize("case", sorted(CASES))
def test_grouped_windows_select_vtmpy_and_run_bit_exactly(case: str) -> None:
    expr, t, windows, reference = CASES[case]
    f, args = _stencil(expr, t)
    a = np.random.default_rng(17).integers(0, 256, (6, N + 5), dtype=np.uint8)  # rows not 128-aligned
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="stencil", fallback=False)
    assert prog.stats.rules_fired.get("vtmpy_121", 0) == 2 * windows  # two unrolled rows
    assert "vtmpy(" in prog.assembly()
    got = prog(a, size=[N, 4])
    assert np.array_equal(got, reference(a.astype(np.int64)))


# Separable stencils that are none of the 16 benchmarks: horizontal taps (p, q, 1) times vertical
# (1, 2, 1), inlined into one 16-bit add tree of nine weighted pixels, as Halide simplifies them.
VARIANTS = {
    "131x121": ((1, 3, 1), "vtmpy_1q1"),
    "1_100_1x121": ((1, 100, 1), "vtmpy_1q1"),
    "231x121": ((2, 3, 1), "vtmpy_pq1"),
}


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
@pytest.mark.parametrize("case", sorted(VARIANTS))
def test_any_byte_tap_window_selects_vtmpy_and_runs_bit_exactly(case: str) -> None:
    (p, q, r), rule = VARIANTS[case]
    expr = lambda v: sum((v(0, dy) * p + v(1, dy) * q + v(2, dy) * r) * ky for dy, ky in enumerate((1, 2, 1)))
    f, args = _stencil(expr, hl.UInt(16))
    a = np.random.default_rng(29).integers(0, 256, (6, N + 5), dtype=np.uint8)
    args[0].set(hl.Buffer(a))
    want = np.asarray(f.realize([N, 4], halide_target("x86-avx2"))).copy()
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="stencil", fallback=False)
    assert prog.stats.rules_fired.get(rule, 0) >= 2, prog.stats.rules_fired  # a window per row at least
    assert "vtmpy(" in prog.assembly()
    assert np.array_equal(prog(a, size=[N, 4]), want)
