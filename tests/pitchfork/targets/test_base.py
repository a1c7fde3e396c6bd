"""Target instruction declarations (pitchfork/targets/base.py): operands that must be immediates.

An instruction declared with `encodable` (Neon narrowing shifts, sqshlu, ursra/srsra, ushll/sshll) is emitted as
its generic meaning when its immediate operand is not a constant in range, and the target cost counts
it so: no lowering rule (hand-written or synthesized) may win by naming it with a runtime amount.
"""

from __future__ import annotations

import pitchfork.targets.arm  # noqa: F401 - registers the arm.* instructions
from fpir.ops import make
from fpir.opspec import OPS
from fpir.term import const, var
from fpir.text import parse
from pitchfork.selection.lower import select_instructions
from pitchfork.targets import UNLOWERED_FPIR_COST, target_cost
from pitchfork.targets.base import encodable, sig
from tests.pitchfork.targets.test_arm import IMMEDIATE, IMMEDIATE_OPERAND


def test_encodable_matches_the_immediate_ranges_the_qemu_test_uses() -> None:
    # The Neon instructions only: the ranges come from test_arm's qemu test. (Other ISAs' immediate-only
    # instructions, e.g. hvx.vdmpy_pairs, are registered when their modules are imported elsewhere in
    # the run; their constant and fallback forms are tested with their own instructions.)
    declared = [n for n, s in OPS.items()
                if n.startswith("arm.") and s.kind == "target" and s.meta.get("encodable") is not None]
    assert set(declared) >= {"arm.sqrshrn", "arm.shrn", "arm.sqshlu", "arm.ursra"}
    for name in declared:
        for text in OPS[name].meta["signatures"]:
            s = sig(text)
            lo, hi = IMMEDIATE[name](s)
            at = IMMEDIATE_OPERAND.get(name, 1)
            args = [var(f"v{i}", t) for i, t in enumerate(s.args)]

            def use(c: int | None):  # type: ignore[no-untyped-def]
                return make(name, *args[:at], const(c, s.args[at]) if c is not None else args[at], *args[at + 1:])

            for c in (lo, hi):
                assert encodable(use(c)), (name, text, c)
                assert target_cost(use(c))[0] == OPS[name].meta["cost"]
            for c in (lo - 1, hi + 1, None):
                if c is not None and not s.args[at].min <= c <= s.args[at].max:
                    continue
                assert not encodable(use(c)), (name, text, c)
                assert target_cost(use(c))[0] == UNLOWERED_FPIR_COST


def test_variable_rounding_narrowing_shift_is_a_register_shift() -> None:
    """mul's requantize step (a rounding shift by a clamped runtime amount, saturated to 16 bits):
    srshl by the negated amount + sqxtn, as Halide 21 selects it, not sqrshrn with a register
    amount (which has no encoding and used to expand to 64-bit lanes)."""
    sel = select_instructions(parse("saturating_cast<i16>(rounding_shr(a_i32, min(b_u32, 15)))"), "arm64")
    ops = {t.op for t in sel.final.walk()}
    assert "arm.srshl" in ops and "arm.sqxtn" in ops, sel.final
    assert all(encodable(t) for t in sel.final.walk() if t.op.startswith("arm.")), sel.final


def test_register_by_register_calls_the_named_intrinsic_once_per_register() -> None:
    # The emitter shape the three ISAs share: 36 lanes of i16 on 128-bit registers are five registers
    # (the last padded), each one call of the intrinsic the table names for (term, register lanes).
    from llvmlite import ir

    from pitchfork.codegen.expr import ExprEmitter
    from pitchfork.targets.base import register_by_register

    vt = ir.VectorType(ir.IntType(16), 36)
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(vt, [vt, vt]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    em = ExprEmitter(b, 36, {})
    term = parse("saturating_add(x_i16, y_i16)")
    emit = register_by_register(lambda t, n: f"llvm.test.{t.op}.v{n}i{t.type.bits}",
                                lambda em, t: 128 // t.type.bits)
    out = emit(em, list(fn.args), term)
    b.ret(out)
    text = str(mod)
    assert out.type == vt
    assert text.count("call <8 x i16> @\"llvm.test.saturating_add.v8i16\"") == 5, text
