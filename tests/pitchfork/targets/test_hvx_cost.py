"""The HVX lowering cost's lane-order tie-break (pitchfork/targets/hvx_cost.py): the conversions it counts,
the choice it makes on camera_pipe's curve interpolation (fewer packets, bit-exact under qemu), big terms,
and the other targets' costs untouched."""

from __future__ import annotations

import numpy as np
import pytest

from fpir.ops import make
from fpir.text import parse
from fpir.term import const, var
from fpir.types import i16, u8
import pitchfork.targets.hvx  # noqa: F401 - declares the hvx.* instructions
from pitchfork.backend.run import tools_available
from pitchfork.selection.lower import select_instructions
from pitchfork.targets import lane_order_target_cost, lowering_cost, ordered_target_cost, target_cost
from pitchfork.targets.hvx_cost import conversions, term_layout
from pitchfork.targets.hvx_lanes import DEINT, NATURAL, layout

#: camera_pipe's curve interpolation after lifting, its shifted term relabelled by a reinterpret (what the
#: synthesized lifting rule synth_lift_c1df1d2bfb makes of `i16(widening_shl(a_u8, 3))`)
INTERPOLATION = "u8((d_i16 & 7) * i16(b_u8 - a_u8) + reinterpret<i16>(widening_shl(a_u8, 3)) >> 3)"


def test_conversions_counted_per_node() -> None:
    a, b = var("a", u8), var("b", u8)
    d, e = var("d", i16), var("e", i16)
    product = make("hvx.vmpy", a, const(8, u8))  # a de-interleaved pair
    natural = make("hvx.vmpyi", d, e)  # lane-wise on natural operands
    assert term_layout(product) == DEINT and term_layout(natural) == NATURAL
    # a de-interleaved accumulator fed a natural value: a vdeal in and a vshuff of the sum back; fed a
    # de-interleaved one: none
    assert conversions(make("hvx.vmpy_acc", natural, b, const(8, u8))) == 2
    relabelled = make("reinterpret", product, type=i16)
    assert conversions(make("hvx.vmpy_acc", relabelled, b, const(8, u8))) == 0
    # a lane-wise op mixing both orders runs in natural order: the de-interleaved operand is shuffled
    assert conversions(make("hvx.vmpyi_acc", relabelled, d, e)) == 1
    assert conversions(make("add", relabelled, relabelled)) == 0  # stays de-interleaved
    # a splat (the frontend's uniform leaf) is in either order, as the emitter's environment holds it
    scaled = make("hvx.vmpyi", relabelled, var("s", i16, uniform=True))
    assert term_layout(scaled) == DEINT and conversions(scaled) == 0
    assert conversions(make("hvx.vmpyi", relabelled, d)) == 1
    # a generic truncation reads natural order; the interleaving narrowing (vshuffe) reads it as it is
    assert conversions(make("cast", relabelled, type=u8)) == 1
    assert conversions(make("hvx.vpacke", relabelled)) == 0
    # a widening instruction's own de-interleaved result is not counted (its user is not known yet)
    assert lane_order_target_cost(relabelled)[1] == 0 and lane_order_target_cost(natural)[1] == 0


def test_term_layout_is_the_emitters_analysis() -> None:
    t = parse("hvx.vmpyi_acc(reinterpret<i16>(hvx.vmpy(a_u8, 8)), d_i16 & 7, i16(b_u8 - a_u8)) >> 3")
    for u in t.walk():
        assert term_layout(u) == layout(u), u


def test_interpolation_takes_the_natural_order_form() -> None:
    lowered = select_instructions(parse(INTERPOLATION), "hvx128").lowered
    ops = {u.op for u in lowered.walk()}
    assert "hvx.vmpyi_acc" in ops and "hvx.vmpy_acc" not in ops, lowered
    # the instruction counts tie; the conversions decide (vdeal + vshuff against one vshuff)
    other = parse("u8(hvx.vmpy_acc(hvx.vmpyi(d_i16 & 7, i16(b_u8 - a_u8)), a_u8, u8(8)) >> 3)")
    mine, theirs = lane_order_target_cost(lowered), lane_order_target_cost(other)
    assert mine[0] == theirs[0] and mine[1] < theirs[1], (mine, theirs)
    # (the input-width tie-break alone preferred the other form)
    assert target_cost(other) < target_cost(lowered)


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
def test_interpolation_runs_bit_exactly_in_fewer_packets() -> None:
    from tests.pitchfork.targets.hvx_difftest import Case, loop_of, run_cases

    chosen = select_instructions(parse(INTERPOLATION), "hvx128").final
    other = parse("u8(hvx.vmpy_acc(hvx.vmpyi(d_i16 & 7, i16(b_u8 - a_u8)), a_u8, u8(8)) >> 3)")
    cases = [Case("chosen", chosen, 128), Case("other", other, 128)]
    assert run_cases(cases, np.random.default_rng(29)) == []
    packets = {c.name: len(loop_of(c).packets) for c in cases}
    deals = {c.name: sum("vdeal" in i for i in loop_of(c).instructions) for c in cases}
    assert packets["chosen"] < packets["other"], packets
    assert deals["chosen"] == 0 < deals["other"], deals


@pytest.mark.parametrize("text", ["u32(x_u8) * u32(y_u16)", "i32(x_i8) * i32(y_i16)"])
def test_widened_operands_keep_the_16bit_multiply(text: str) -> None:
    """vmpy on the operands widened once and vmpyie on them widened to words tie in instructions (a cast is
    one whatever its levels) and in conversions; the 16 x 16 multiply (13 loop packets to 14) stays."""
    lowered = select_instructions(parse(text), "hvx128").lowered
    assert lowered.op == "hvx.vmpy", lowered


def test_deep_terms_cost_without_recursion() -> None:
    t = var("x", i16)
    for k in range(10_000):
        t = make("add", t, var(f"y{k % 7}", i16))
    assert lane_order_target_cost(t)[0] == 10_000


def test_other_targets_keep_their_costs() -> None:
    assert lowering_cost("x86-avx2") is target_cost
    assert lowering_cost("arm64") is ordered_target_cost
    assert lowering_cost("hvx128") is lane_order_target_cost
