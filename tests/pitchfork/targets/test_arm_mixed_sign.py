"""AArch64 sums of mixed-sign products (rules/lower/arm_neon.rules, "products of mixed signs"): a u8
pixel times an i8 mask tap, summed in i16 (conv3x3a16) or i32 (conv3x3a32).

* near-variants of the rules that would be wrong are INVALID (Z3; the rules themselves are proved by
  test_arm.py's test_every_rule_verifies, and their widened forms fire in its EXAMPLES);
* the biased rule (`s8(y ^ 128)`, bias `i16(z) * 128`) fires only where the mask is uniform: with a
  varying mask its bias would cost more instructions than it saves;
* convolution-like sums with uniform masks lower to one smlal chain whose biases meet at the root, and
  run bit-exactly under qemu-aarch64 against the FPIR interpreter for masks at the i8 edges.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from fpir.ops import make
from fpir.term import Term, var
from fpir.types import parse_type
from pitchfork.codegen.kernel import storage_type
from pitchfork.selection.lower import select_instructions
from pitchfork.trs.rules import parse_rule
from synth.verify import verify_rule
from tests.pitchfork.targets.test_arm import Batch, mnemonics, needs_qemu

TARGET = "arm64"

#: Unsound near-variants: no bias; the bias subtracted; the pixel flipped by a subtraction of the
#: wrong constant; the mask zero-extended where it must be sign-extended; the pair root summed in
#: the narrow type (the sum of two u8 x i8 products overflows i16).
UNSOUND = [
    "x_W + widening_mul(y_U, z_S) -> arm.smlal(x_W, reinterpret<S>(y_U ^ 128), z_S)"
    " if U == u8 && S == signed(U) && is_uniform(z_S)",
    "x_W + widening_mul(y_U, z_S) -> arm.smlal(x_W - cast<W>(z_S) * 128, reinterpret<S>(y_U ^ 128), z_S)"
    " if U == u8 && S == signed(U) && is_uniform(z_S)",
    "x_W + widening_mul(y_U, z_S) -> arm.smlal(x_W + cast<W>(z_S) * 128, reinterpret<S>(y_U - 127), z_S)"
    " if U == u8 && S == signed(U) && is_uniform(z_S)",
    "extending_add(x_i32, widening_mul(y_u8, z_i8)) -> arm.smlal(x_i32, cast<i16>(y_u8),"
    " reinterpret<i16>(cast<u16>(reinterpret<u8>(z_i8))))",
    "widening_add(widening_mul(a_u8, b_i8), widening_mul(c_u8, d_i8))"
    " -> cast<i32>(widening_mul(a_u8, b_i8) + widening_mul(c_u8, d_i8))",
]


@pytest.mark.parametrize("text", UNSOUND)
def test_unsound_variants_are_invalid(text: str) -> None:
    res = verify_rule(parse_rule(f"bad: {text}", "<unsound>", 1), rlimit=40_000_000)
    assert res.status == "INVALID", res.summary()


def _taps(n: int, acc: str, uniform: bool = True) -> tuple[Term, list[Term]]:
    """sum over k < n of widening_mul(p_k, m_k) (u8 x i8), in i16 (acc == "i16": the lifter's add of
    i16 products) or i32 (extending adds onto a widening add of the first two, as conv3x3a32 lifts)."""
    px = [var(f"p{k}", parse_type("u8")) for k in range(n)]
    ms = [var(f"m{k}", parse_type("i8"), uniform=uniform) for k in range(n)]
    prods = [make("widening_mul", p, m) for p, m in zip(px, ms)]
    if acc == "i16":
        total = prods[0]
        for p in prods[1:]:
            total = make("add", total, p)
    else:
        total = make("widening_add", prods[0], prods[1])
        for p in prods[2:]:
            total = make("extending_add", total, p)
    return total, ms


def test_bias_needs_a_uniform_mask() -> None:
    for uniform in (True, False):
        term, _ = _taps(3, "i16", uniform)
        sel = select_instructions(term, TARGET, "pitchfork")
        fired = sel.lower_stats.fired["smlal_mixed_bias"] if sel.lower_stats else 0
        assert (fired > 0) == uniform, (uniform, str(sel.final))


def test_biases_meet_at_the_chain_root() -> None:
    """Three taps: one smlal chain (three smlal, no mul), every tap's bias summed in the root's
    accumulator, where it is loop-invariant."""
    term, _ = _taps(3, "i16")
    final = select_instructions(term, TARGET, "pitchfork").final
    assert str(final).count("arm.smlal(") == 3 and "arm.mla" not in str(final), str(final)
    root = final
    while root.op == "arm.smlal":
        root = root.args[0]
    leaves = {v.name for v in root.variables()}
    assert leaves == {"m0", "m1", "m2"}, str(root)
    wide, _ = _taps(3, "i32")
    final = select_instructions(wide, TARGET, "pitchfork").final
    assert str(final).count("arm.smlal(") == 2 and str(final).count("arm.smull(") == 1, str(final)


#: mask values at the edges of i8 (the bias i16(m) * 128 reaches -16384 and 16256)
MASKS = [(-128, 127, -1), (127, -128, 0), (1, -128, -128), (3, -7, 127)]


@needs_qemu
def test_sums_run_bit_exactly() -> None:
    batch = Batch(elements=2048)
    kernels = []
    for acc in ("i16", "i32"):
        term, ms = _taps(3, acc)
        for isel in ("pitchfork", "llvm"):
            emitted = select_instructions(term, TARGET, isel).final
            for masks in MASKS:
                k = batch.add(f"{isel} {acc} {masks}", emitted, term, 16)
                n = len(k.args["p0"])
                for m, value in zip(ms, masks):  # uniform: one value in every lane
                    k.args[m.name] = np.full(n, value, dtype=storage_type(m.type).np_dtype)
                k.args["p0"][:256] = np.arange(256)  # every pixel value, against every mask
                kernels.append((isel, acc, k))
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    for isel, acc, k in kernels:
        ops = mnemonics(cm.asm, k.name)  # type: ignore[attr-defined]
        if isel == "pitchfork":
            assert any(re.fullmatch(r"smlal2?", m) for m in ops), (k.label, ops)
            assert not any(re.fullmatch(r"mla|mul", m) for m in ops), (k.label, ops)
