"""Sliding 3-tap groups of 16-bit windows (pitchfork/passes/stream_taps.py `_tap_groups`, lowered by
rules/lower/hvx.rules `vtmpy_h*` to vtmpyhb): the split of a window's weights into (a, b, 1) byte-tap
groups on Halide IR; i16 windows compiled for hvx128 with vtmpy, bit-exact under qemu on full-range
data; and gaussian5x5's two hvx128 loops against Halide 21's, as static packet counts (no timing)."""

from __future__ import annotations

from typing import Any

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.passes.stream_taps import _tap_groups, regroup

N = 128
I32 = HType("int", 32, 1)


def _load(off: int, code: str = "int", buf: str = "p") -> H.Load:
    b = H.BinOp("+", H.Variable("t", I32), H.IntImm(off, I32), I32)
    return H.Load(buf, H.Ramp(b, H.IntImm(1, I32), N, I32.with_lanes(N)), HType(code, 16, N))


def _groups(taps: list[int], code: str = "int") -> tuple[list[tuple[int, int, int, int, int]], dict[int, int]]:
    loads = {o: _load(o, code) for o in range(len(taps))}
    weights: dict[H.Expr, int] = {loads[o]: w % 65536 for o, w in enumerate(taps) if w}
    offset = {id(v): o for o, v in loads.items()}
    groups = _tap_groups(weights)
    return ([(offset[id(x)], offset[id(y)], offset[id(z)], a, b) for x, y, z, a, b in groups],
            {offset[id(k)]: w for k, w in weights.items()})


@pytest.mark.parametrize(("taps", "groups", "left"), [
    ([1, 4, 6, 4, 1], [(0, 1, 2, 1, 4), (2, 3, 4, 5, 4)], {}),                            # gaussian5x5's row
    ([1, 6, 15, 20, 15, 6, 1], [(0, 1, 2, 1, 6), (2, 3, 4, 14, 20), (4, 5, 6, 14, 6)], {}),
    ([3, -7, 100, 2, 5], [(0, 1, 2, 3, -7), (2, 3, 4, 99, 2)], {4: 4}),                  # last tap not 1
    ([1, 200, 1], [], {0: 1, 1: 200, 2: 1}),                                             # not a byte tap
    ([1, 2, 1, 300, 1], [(0, 1, 2, 1, 2)], {3: 300, 4: 1}),                              # a = 0 next: stops
    ([1, 2], [], {0: 1, 1: 2}),                                                          # two taps: no group
])
def test_windows_split_into_byte_tap_groups(taps: list[int], groups: list, left: dict) -> None:
    got, rest = _groups(taps)
    assert got == groups
    assert rest == {o: w % 65536 for o, w in left.items()}


def test_unsigned_halfwords_are_not_grouped() -> None:
    assert _groups([1, 4, 6, 4, 1], code="uint")[0] == []  # vtmpyhb reads signed halfwords; no rule for u16


def test_regroup_of_an_i16_window_truncates_one_i32_sum() -> None:
    t = HType("int", 16, N)
    e: H.Expr | None = None
    for o, w in enumerate([1, 4, 6, 4, 1]):
        x: H.Expr = H.BinOp("*", _load(o), H.Broadcast(H.IntImm(w, t.elem), N, t), t)
        e = x if e is None else H.BinOp("+", e, x, t)
    out = regroup(e)  # type: ignore[arg-type]
    assert isinstance(out, H.Cast) and out.type == t and out.value.type.bits == 32
    assert sum(1 for n in H.walk(out) if isinstance(n, H.Load)) == 6  # 3 per group, x of group 2 = z of group 1


def _window(taps: list[int]) -> tuple[hl.Func, list[Any]]:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Int(16), 2, "input")
    f = hl.Func("window")
    f[x, y] = sum((inp[x + k, y] * hl.i16(w) for k, w in enumerate(taps)), hl.i16(0))
    f.vectorize(x, N)
    inp.dim(0).set_min(0)
    inp.dim(1).set_min(0)
    ob = f.output_buffer()
    ob.dim(0).set_min(0).set_extent((ob.dim(0).extent() // N) * N)
    return f, [inp]


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
@pytest.mark.parametrize(("taps", "rules"), [
    # (vtmpy_h_vmpa: vmpa_h makes vtmpy_h's inner two products one vmpa first, bottom-up)
    ([1, 6, 15, 20, 15, 6, 1], {"vtmpy_h_a1": 1, "vtmpy_h_vmpa": 2}),
    ([3, -7, 100, 2, 5], {"vtmpy_h_vmpa": 2}),
    ([4, 1, 2, 1, 1], {"vtmpy_h_b1": 1, "vtmpy_h_ab1": 1}),
])
def test_i16_windows_select_vtmpy_and_run_bit_exactly(taps: list[int], rules: dict[str, int]) -> None:
    w, h = 2 * N, 3
    rng = np.random.default_rng(5)
    a = rng.integers(-32768, 32768, (h, w + len(taps)), dtype=np.int16)
    a[0, :8] = [-32768, 32767, -32768, 32767, -1, 0, -32768, -32768]
    f, args = _window(taps)
    prog = pitchfork.compile(f, args, target="hvx128", isel="pitchfork", name="window", fallback=False)
    for rule, n in rules.items():
        assert prog.stats.rules_fired.get(rule, 0) == n, prog.stats.rules_fired
    assert "vtmpy(" in prog.assembly()
    want = sum(k * a[:, j:j + w].astype(np.int64) for j, k in enumerate(taps))
    got = prog(a, size=[w, h])
    assert np.array_equal(got, ((want + 32768) % 65536 - 32768).astype(np.int16))


def _loop_packets(asm: str, function: str, mnemonic: str) -> list[int]:
    from pitchfork.backend.machine import find_loops

    return [len(lp.packets) for lp in find_loops(asm, function, target="hvx128")
            if lp.innermost and any(mnemonic in i for i in lp.instructions)]


@pytest.mark.skipif(not tools_available("hvx128"), reason="no Hexagon llc")
def test_gaussian5x5_loops_take_fewer_packets_than_halide21() -> None:
    """The horizontal pass (the loop that narrows with vpacko): Halide 21 has 41 packets (32 valign,
    4 vpacko and 4 unaligned stores share the one permute slot); ours, two vtmpyhb per 64 results on
    4 valigned registers a row, at most 30. The vertical pass (the loop with vmpa): Halide 19, ours 16
    (three multiplies a row: vmpa.acc by (1, 1) through the relabel, reinterpret_round_trip)."""
    from benchmarks import registry
    from benchmarks.harness.halide21 import halide_assembly

    bench = registry.get("gaussian5x5")
    out, args = bench.build("hvx128", {})
    prog = pitchfork.compile(out, args, target="hvx128", isel="pitchfork", name="g5", fallback=False)
    ha = halide_assembly(bench, {}, "hvx128", "g5_halide21")
    ours_h, h21_h = _loop_packets(prog.assembly(), "g5", "vpacko"), _loop_packets(ha.asm, "g5_halide21", "vpacko")
    ours_v, h21_v = _loop_packets(prog.assembly(), "g5", "vmpa"), _loop_packets(ha.asm, "g5_halide21", "vmpa")
    assert "vtmpy" in prog.assembly() and len(ours_h) == len(h21_h) == 1 and len(ours_v) == len(h21_v) == 1
    assert ours_h[0] <= 30 < h21_h[0], (ours_h, h21_h)
    assert ours_v[0] <= 16 < h21_v[0], (ours_v, h21_v)
