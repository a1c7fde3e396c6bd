"""hvx.vasl_acc (pitchfork/targets/hvx_shift.py): a stencil tap by a power of two added to a running
sum selects one shift-accumulate. Its semantics are run under qemu-hexagon with the other
instructions (test_hvx.py::test_every_instruction_matches_its_semantics_under_qemu, amounts in and
out of [0, bits)), and its rule is proved there (test_rule_verifies[vasl_acc])."""

from __future__ import annotations

import pytest

from fpir.text import parse
from fpir.types import parse_type
from pitchfork.lower import select_instructions


@pytest.mark.parametrize("t", ["i16", "u16", "i32", "u32"])
def test_tap_by_a_power_of_two_is_one_shift_accumulate(t: str) -> None:
    term = parse("x + y * 4 + z", env={"x": parse_type(t), "y": parse_type(t), "z": parse_type(t)})
    out = str(select_instructions(term, "hvx128", "pitchfork").final)
    assert "hvx.vasl_acc(" in out and "<<" not in out, out


def test_amount_outside_the_lane_is_not_a_shift_accumulate() -> None:
    # 8-bit lanes have no vasl.acc; neither does a shift by the full width (Rt is read modulo bits)
    for expr, ty in (("x + (y << 2)", "u8"), ("x + (y << 16)", "i16")):
        term = parse(expr, env={"x": parse_type(ty), "y": parse_type(ty)})
        assert "vasl_acc" not in str(select_instructions(term, "hvx128", "pitchfork").final)
