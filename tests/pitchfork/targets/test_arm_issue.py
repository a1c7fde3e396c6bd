"""The AArch64 issue-rate table (pitchfork/targets/arm_issue_rates.py, generated from llvm-mca by
pitchfork/targets/arm_issue_gen.py) and the per-node cycles it gives (pitchfork/targets/arm_issue.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import pitchfork.targets.arm as arm
from fpir.text import parse
from pitchfork.targets.arm_issue import CPU, node_cycles
from pitchfork.targets.arm_issue_gen import CPUS, TABLE_PATH, generic_rows, instruction_rows, main, measure
from pitchfork.targets.arm_issue_rates import GENERIC, INSTRUCTIONS


def test_every_declared_arm64_signature_has_a_row_for_each_core() -> None:
    declared = {f"arm.{row.mnemonic} {sig}" for row in arm.TABLE for sig in row.signatures}
    for cpu in CPUS:
        assert {k for k in INSTRUCTIONS[cpu] if "#" not in k} == declared
        assert set(GENERIC[cpu]) == set(generic_rows())
        assert all(v > 0 for v in INSTRUCTIONS[cpu].values())


def test_the_table_orders_instructions_as_cortex_a76_issues_them() -> None:
    a76, g = INSTRUCTIONS[CPU], GENERIC[CPU]
    smlal, smull = a76["arm.smlal i16, i8, i8 -> i16"], a76["arm.smull i8, i8 -> i16"]
    assert g["mul:16:s"] > smlal >= g["add:16:s"]  # a Q-form mla/mul issues slower than smlal
    assert smull == smlal and a76["arm.ushll u8, u8 -> u16"] == g["add:8:u"]
    assert a76["arm.srshl i16, i16 -> i16"] > a76["arm.sqxtn i16 -> i8"] > g["add:16:u"]


def test_node_cycles_count_the_registers_sixteen_lanes_take() -> None:
    """A widening umull u8 -> u16 is umull + umull2, a 32-bit add four adds, a narrowing sqxtn
    sqxtn + sqxtn2; an instruction emitted as its generic meaning costs those instructions."""
    a76 = INSTRUCTIONS[CPU]
    assert node_cycles(parse("arm.umull(x_u8, y_u8)"), 1) == round(100 * 2 * a76["arm.umull u8, u8 -> u16"])
    assert node_cycles(parse("x_u32 + y_u32"), 1) == 4 * node_cycles(parse("x_u8 + y_u8"), 1)
    assert node_cycles(parse("arm.sqxtn(x_i16)"), 1) == round(100 * 2 * a76["arm.sqxtn i16 -> i8"])
    assert node_cycles(parse("arm.sshll(1, y_i16)"), 8) == 8 * 4 * round(100 * GENERIC[CPU]["add:8:u"])
    # a register shift by a constant is the immediate shift LLVM selects; a constant accumulator a mov
    assert node_cycles(parse("arm.srshl(x_i16, -4)"), 1) == round(200 * a76["arm.srshl i16, i16 -> i16 #r"])
    assert a76["arm.srshl i16, i16 -> i16 #r"] < a76["arm.srshl i16, i16 -> i16"]
    assert node_cycles(parse("arm.srsra(0, x_i16, 4)"), 1) == node_cycles(parse("arm.srsra(y_i16, x_i16, 4)"), 1) + 100


@pytest.mark.skipif(shutil.which("llvm-mca") is None, reason="llvm-mca not installed")
def test_the_committed_table_is_what_llvm_mca_reports(tmp_path: Path) -> None:
    """A few rows measured again; the generator writes into the folder named, never the source tree."""
    rows = instruction_rows()
    keys = ["arm.smlal i16, i8, i8 -> i16", "arm.sqrdmulh i16, i16 -> i16", "arm.udot u32, u8, u8 -> u32"]
    mca = shutil.which("llvm-mca")
    assert mca is not None
    for cpu in CPUS:
        rt = measure([line for k in keys for line in rows[k]], cpu, mca)
        for k in keys:
            assert INSTRUCTIONS[cpu][k] == round(sum(rt[x] for x in rows[k]) / len(rows[k]), 3), (cpu, k)
    before = TABLE_PATH.read_text()
    assert main(["-o", str(tmp_path)]) == 0
    assert (tmp_path / TABLE_PATH.name).read_text() == before and TABLE_PATH.read_text() == before
