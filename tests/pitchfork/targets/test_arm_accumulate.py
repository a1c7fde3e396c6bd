"""AArch64 accumulation chains and sums of shifted terms (rules/lower/arm_neon.rules): adds moved into
the accumulator of umlal/smlal, two widen-right adds over a chain's root made one widening add, and
a shift by a constant moved up a sum until it merges with another by the same constant.

* near-variants of the new rules that would be wrong are INVALID (Z3; the rules themselves are
  proved by test_arm.py's test_every_rule_verifies);
* the cost's accumulation-order key orders an add below a multiply-accumulate, never above;
* the separable-blur columns of gaussian3x3/5x5/7x7 and gaussian5x5's row (a sum of widened u8 taps in i16, as the Halide
  frontend gives them) lower to uaddl + umlal chains with fewer instructions than before, and run
  bit-exactly under qemu-aarch64 against the FPIR interpreter.
"""

from __future__ import annotations

import re

import pytest

from fpir.term import Term
from fpir.text import parse
from pitchfork.selection.lower import select_instructions
from pitchfork.targets import ordered_target_cost as target_cost
from pitchfork.trs.rules import parse_rule
from synth.verify import verify_rule
from tests.pitchfork.targets.test_arm import Batch, mnemonics, natural_lanes, needs_qemu

TARGET = "arm64"

#: Unsound near-variants of the new rules: the shift amount taken as the multiplier, a root summed
#: with sign extension where the taps are unsigned, a multiply-subtract moved as if it added, a
#: widen-right add of the other signedness moved into the chain, a "round trip" through a narrower
#: type. (A multiplier 1 << c0 past the narrow type is no variant: such a constant stops the rewrite.)
UNSOUND = [
    "arm.uaddw(arm.uaddw(arm.ushll(y_T, c0_A), a_T), b_T) -> arm.umlal(arm.uaddl(a_T, b_T), y_T, c0)"
    " if T == u8 && bits(A) == bits(T) && c0 >= 0 && c0 < bits(T)",
    "arm.uaddw(arm.uaddw(arm.umull(y_T, z_T), a_T), b_T) -> arm.umlal(reinterpret<wide(T)>(arm.saddl("
    "reinterpret<signed(T)>(a_T), reinterpret<signed(T)>(b_T))), y_T, z_T)",
    "x_W + arm.umlsl(y_W, z_T, w_T) -> arm.umlal(x_W + y_W, z_T, w_T)",
    "arm.uaddw(arm.umlal(x_W, y_T, z_T), w_T) -> arm.umlal(reinterpret<W>(arm.saddw(reinterpret<signed(W)>(x_W), "
    "reinterpret<signed(T)>(w_T))), y_T, z_T)",
    "reinterpret<A>(cast<A>(cast<B>(x_A))) -> x_A if bits(B) < bits(A)",
    # FPIR's shl by a negative amount shifts right: merging needs the amount in [0, bits)
    "(x_T << c0) + (y_T << c0) -> (x_T + y_T) << c0 if T == i8",
    "(z_T + (x_T << c0)) + (y_T << c0) -> z_T + ((x_T + y_T) << c0) if T == i16",
    # a shift moved up past a subtraction
    "(z_T - (x_T << c0)) + w_T -> (z_T + w_T) + (x_T << c0)",
    # a widen-right add's narrow term shifted in the narrow type (wraps), not multiplied in the wide one
    "arm.uaddw(x_W, y_T) << c0 -> arm.uaddw(x_W << c0, y_T << c0) if T == u8",
]


@pytest.mark.parametrize("text", UNSOUND)
def test_unsound_variants_are_invalid(text: str) -> None:
    res = verify_rule(parse_rule(f"bad: {text}", "<unsound>", 1), rlimit=40_000_000)
    assert res.status == "INVALID", res.summary()


def test_accumulation_order_breaks_the_tie() -> None:
    """Same instructions, same widths: the add inside the accumulator costs less than the add above."""
    above = parse("d_u16 + arm.umlal(c_u16, a_u8, b_u8)")
    below = parse("arm.umlal(d_u16 + c_u16, a_u8, b_u8)")
    assert target_cost(above)[0] == target_cost(below)[0] and target_cost(above)[2:] == target_cost(below)[2:]
    assert target_cost(below) < target_cost(above)
    buried = parse("(c_i16 + (a_i16 << 2)) + d_i16")
    raised = parse("(c_i16 + d_i16) + (a_i16 << 2)")
    assert target_cost(buried)[0] == target_cost(raised)[0] and target_cost(buried)[2:] == target_cost(raised)[2:]
    assert target_cost(raised) < target_cost(buried)
    # a shift of a chain moves to its root, though the umlal there reads wider operands than a uaddw
    shifted = parse("arm.uaddw(arm.uaddl(a_u8, b_u8), c_u8) << 1")
    at_root = parse("arm.umlal(arm.umlal(arm.ushll(a_u8, 1), b_u8, 2), c_u8, 2)")
    assert target_cost(at_root)[0] == target_cost(shifted)[0] and target_cost(at_root)[2] > target_cost(shifted)[2]
    assert target_cost(at_root) < target_cost(shifted)


#: Columns of the separable blurs as the Halide frontend gives them (i16 sums of widened u8 taps,
#: Halide's simplifier ordering the scaled taps first), and the target instructions per result
#: vector before the accumulation-chain rules (ushll + umlal + uaddw chains).
COLUMNS = [
    # gaussian5x5: a + 4b + 6c + 4d + e = uaddl, umlal, umlal, umlal (was ushll, 2 umlal, 2 uaddw)
    ("extending_add(extending_add(reinterpret<i16>(widening_shl(b_u8, 2)) + reinterpret<i16>(widening_shl(d_u8, 2))"
     " + reinterpret<i16>(widening_mul(c_u8, 6)), a_u8), e_u8)", 4, 5),
    # gaussian3x3 (its 3x3 sum): 2a + 2(2b + c + d + e) + f + g + h + i = uaddl(f, g), 2 uaddw, 5 umlal
    ("u8(rounding_shr(extending_add(extending_add(extending_add(extending_add(reinterpret<i16>(widening_shl(a_u8, 1))"
     " + (extending_add(extending_add(extending_add(reinterpret<i16>(widening_shl(b_u8, 1)), c_u8), d_u8), e_u8)"
     " << 1), f_u8), g_u8), h_u8), i_u8), 4))", 9, 11),
    # gaussian7x7-like: two products and two plain taps
    ("extending_add(extending_add(reinterpret<i16>(widening_mul(a_u8, 20)) + reinterpret<i16>(widening_mul(b_u8, 15)),"
     " c_u8), d_u8)", 3, 4),
    # gaussian5x5's row: u8((4a + b + 6c + d + 4e) >> 8) = addhn(b + 6c + d, (a + e) << 2) (was two shl)
    ("u8((a_i16 << 2) + b_i16 + c_i16 * 6 + d_i16 + (e_i16 << 2) >> 8)", 6, 7),
]


def _instructions(t: Term) -> int:
    """Instructions of a lowered term: its distinct operations, reinterprets being free."""
    return sum(1 for u in set(t.walk()) if u.args and u.op != "reinterpret")


@pytest.mark.parametrize("text,now,before", COLUMNS)
def test_columns_use_fewer_instructions(text: str, now: int, before: int) -> None:
    sel = select_instructions(parse(text), TARGET, "pitchfork")
    assert _instructions(sel.lowered) == now < before, str(sel.lowered)
    assert "arm.ushll" not in str(sel.lowered)


@needs_qemu
def test_columns_run_bit_exactly() -> None:
    batch = Batch()
    kernels = []
    for text, _, _ in COLUMNS:
        term = parse(text)
        for isel in ("pitchfork", "llvm"):
            kernels.append(batch.add(f"{isel}: {text}", select_instructions(term, TARGET, isel).final, term,
                                     natural_lanes(term)))
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    for k in kernels[:-2:2]:  # pitchfork's columns: a umlal chain from a uaddl root, no ushll
        ops = mnemonics(cm.asm, k.name)  # type: ignore[attr-defined]
        assert "umlal" in ops and any(re.fullmatch(r"uaddl2?", m) for m in ops), (k.label, ops)
        assert not any(re.fullmatch(r"ushll2?", m) for m in ops), (k.label, ops)
    row = mnemonics(cm.asm, kernels[-2].name)  # type: ignore[attr-defined]
    narrowed = sum(1 for m in row if re.fullmatch(r"addhn2?", m))
    assert narrowed and row.count("shl") == narrowed, row  # one shift per register for both 4x taps
