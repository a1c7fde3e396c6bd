"""hvx.vasl_acc (pitchfork/targets/hvx_shift.py): a stencil tap by a power of two added to a running
sum selects one shift-accumulate. Its semantics are run under qemu-hexagon with the other
instructions (test_hvx.py::test_every_instruction_matches_its_semantics_under_qemu, amounts in and
out of [0, bits)), and its rule is proved there (test_rule_verifies[vasl_acc])."""

from __future__ import annotations

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from fpir.types import parse_type
from pitchfork.emit.run import tools_available
from pitchfork.lower import select_instructions

from .hvx_difftest import TARGET, Case, loop_of, run_cases

needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")


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


# Byte rounding shifts by a runtime amount (rules rounding_shr_b_var / _narrowed, proved by
# test_hvx.py::test_rule_verifies): Halide's clamped spellings, lifted, against the same text unlifted
# (isel=llvm). The lifted form must never lose: no more loop packets nor instructions.
BYTE_ROUNDING_SHIFTS = [
    "i8((i16(a_i8) + ((1 << max(min(i16(n_i8), 8), 0)) >> 1)) >> max(min(i16(n_i8), 8), 0))",
    "(i16(a_i8) + ((1 << max(min(n_i16, 8), 0)) >> 1)) >> max(min(n_i16, 8), 0)",
    "rounding_shr(a_u8, min(n_u8, 8))",
    "rounding_shr(a_i8, n_u8)",
]


@needs_qemu
@pytest.mark.qemu
def test_byte_rounding_shift_by_a_runtime_amount_never_loses_to_unlifted() -> None:
    cases, originals = [], []
    for text in BYTE_ROUNDING_SHIFTS:
        term = parse(text)
        for lanes in (64, 128):
            for isel in ("pitchfork", "llvm"):
                cases.append(Case(f"{isel} [{lanes}]: {text}", select_instructions(term, TARGET, isel).final, lanes))
                originals.append(term)
    failures = run_cases(cases, np.random.default_rng(8))
    assert not failures, "\n".join(failures)
    for c, term in zip(cases, originals):  # the reference: the text's own meaning
        vs = {v.name: v.type for v in term.walk() if v.is_var}
        want = np.asarray(evaluate(term, {k: a.astype(vs[k].np_dtype) for k, a in c.inputs.items()}))
        assert np.array_equal(np.asarray(c.expected).astype(np.int64), want.astype(np.int64)), c.name
    for ours, theirs in zip(cases[::2], cases[1::2]):
        a, b = loop_of(ours), loop_of(theirs)
        assert len(a.packets) <= len(b.packets) and len(a.instructions) <= len(b.instructions), \
            (ours.name, a.packets, b.packets)
    for i in (0, 1, 2):  # the clamped spellings take the rules (text 3's amount may be >= 16: generic)
        assert "hvx.vavg_rnd" in str(cases[4 * i].term), cases[4 * i].term
