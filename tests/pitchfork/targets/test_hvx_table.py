"""The HVX instruction table (pitchfork/targets/hvx.py) as data: one `TABLE` of rows, every hvx.* instruction
declared by it and by nothing else, in table order, with the lane layout its emitters choose forms by
(pitchfork/targets/hvx_lanes.py). What the instructions compute is run under qemu-hexagon in
test_hvx.py (every instruction at every signature against its semantics)."""

from __future__ import annotations

from fpir.opspec import spec
from fpir.text import parse
from pitchfork.targets.base import semantics_check, target_ops
from pitchfork.targets.hvx import TABLE
from pitchfork.targets.hvx_lanes import ANY, DEINT, DEINT_RESULT, LANEWISE, NATURAL, layout


def test_every_hvx_instruction_is_one_row_of_the_table_in_order() -> None:
    names = [f"hvx.{row.mnemonic}" for row in TABLE]
    assert len(names) == len(set(names))
    assert [s.name for s in target_ops("hvx")] == names


def test_rows_carry_their_declaration() -> None:
    for row in TABLE:
        s = spec(f"hvx.{row.mnemonic}")
        assert s.meta["emit"] is row.emit and s.meta["cost"] == row.cost and s.meta["layout"] == row.layout
        assert tuple(s.meta["signatures"]) == tuple(row.signatures) and s.arg_lanes == tuple(row.lanes)
        assert semantics_check(s.name)  # every signature's semantics parses and has the result type


def test_declared_layouts_are_what_the_emitters_assume() -> None:
    for row in TABLE:
        assert row.layout in ("", DEINT_RESULT, LANEWISE), row.mnemonic
        for sg, _ in semantics_check(f"hvx.{row.mnemonic}"):
            widths = {a.bits for a in sg.args}
            if row.layout == DEINT_RESULT:  # a pair result: twice as wide as some operand
                assert sg.result.bits // 2 in widths, (row.mnemonic, sg)
            if row.layout == LANEWISE:  # one register in, one out: its lanes follow its operands'
                assert not row.lanes and sg.result.bits in widths, (row.mnemonic, sg)


def test_layout_follows_widening_results_through_lane_wise_ops() -> None:
    assert layout(parse("hvx.vmpy(x_u8, y_u8)")) == DEINT
    assert layout(parse("hvx.vmpy(x_u8, y_u8) + hvx.vmpy(z_u8, y_u8)")) == DEINT
    assert layout(parse("hvx.vavg(hvx.vmpy(x_u8, y_u8), hvx.vmpy(z_u8, y_u8))")) == DEINT  # a lane-wise row
    assert layout(parse("hvx.vsat_ub(reinterpret<i16>(hvx.vmpy(x_u8, y_u8)))")) == NATURAL  # narrows
    assert layout(parse("u16(x_u8) + 3")) == NATURAL
    assert layout(parse("x_u8"), frozenset({"x"})) == ANY  # a splat of the emitter's environment
