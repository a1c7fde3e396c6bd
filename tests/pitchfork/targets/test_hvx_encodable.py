"""HVX instructions whose scalar operand (Rt) must be a constant (pitchfork/targets/hvx.py `encodable`).

The emitters of the tap dot products (vdmpy, vrmpy_taps and their .acc forms), vtmpy, the shift-and-
accumulate pair (vasl_acc, vasr_acc) and vmpy_acc_zp build Rt from constants only and emit the
instruction's declared meaning for any other operand. The table says so, so the target cost charges such
a use as the generic expansion it is and no rule (hand-written or synthesized) wins by naming the
instruction with a runtime operand: session 19's hvx128 bring-up synthesized
`hvx.vmpy(v0_u8, v1_i8) + hvx.vmpy(v2_u8, v3_i8) -> hvx.vdmpy(v0_u8, v2_u8, v1_i8, v3_i8)`, costed 2,
which conv3x3a16 (runtime taps) paid as unpacks and 32-bit multiplies (50,964 packets against 44,437
without it, under the harness's static estimate).
"""

from __future__ import annotations

import pytest

from fpir.ops import make
from fpir.opspec import OPS
from fpir.term import Term, const, var
from fpir.text import parse
from fpir.types import parse_type
from pitchfork.backend.asm import asm_instructions
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import tools_available
from pitchfork.codegen.kernel import add_expression_kernel, new_module
from pitchfork.targets import UNLOWERED_FPIR_COST, load_target, target_cost
from pitchfork.targets.base import encodable, sig
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import RuleSet, parse_rules

TARGET = "hvx128"
INFO = load_target(TARGET)

#: instruction -> (index of its first constant operand, how many, (lo, hi) of a constant as a function of
#: the first operand's lane bits (None: any value of the operand's type))
CONSTANT_OPERANDS = {
    "hvx.vdmpy": (2, 2, None), "hvx.vdmpy_acc": (3, 2, None),
    "hvx.vrmpy_taps": (4, 4, None), "hvx.vrmpy_taps_acc": (5, 4, None),
    "hvx.vtmpy": (3, 2, None),
    "hvx.vasl_acc": (2, 1, lambda bits: (0, bits - 1)), "hvx.vasr_acc": (2, 1, lambda bits: (0, bits - 1)),
    "hvx.vmpy_acc_zp": (2, 1, lambda bits: (0, bits - 1)),
}


def _use(name: str, text: str, value: int | None, at: int) -> Term:
    """`name` at signature `text` over variables, operand `at` the constant `value` (None: a variable)
    and the other constant operands constants in range."""
    s = sig(text)
    first, count, rng = CONSTANT_OPERANDS[name]
    args: list[Term] = []
    for i, t in enumerate(s.args):
        if first <= i < first + count:
            v = value if i == at else (rng(s.args[0].bits)[0] if rng else 1)
            args.append(var(f"v{i}", t) if v is None else const(v, t))
        else:
            args.append(var(f"v{i}", t))
    return make(name, *args)


def test_constant_operands_are_declared_and_costed() -> None:
    for name, (first, count, rng) in CONSTANT_OPERANDS.items():
        declared = OPS[name].meta["cost"]
        for text in OPS[name].meta["signatures"]:
            s = sig(text)
            for at in range(first, first + count):
                good = rng(s.args[0].bits) if rng else (s.args[at].min, s.args[at].max)
                for c in good:
                    t = _use(name, text, c, at)
                    assert encodable(t) and target_cost(t)[0] == declared, (name, text, at, c)
                bad: list[int | None] = [None]
                if rng:
                    bad += [c for c in (good[0] - 1, good[1] + 1) if s.args[at].min <= c <= s.args[at].max]
                for c in bad:
                    t = _use(name, text, c, at)
                    assert not encodable(t), (name, text, at, c)
                    assert target_cost(t)[0] == UNLOWERED_FPIR_COST, (name, text, at, c)


def test_a_rule_naming_vdmpy_with_runtime_taps_no_longer_wins() -> None:
    # the synthesized rule of the module doc, applied by the lowering rewriter with the target's cost
    rules = RuleSet(parse_rules("vdmpy_of_two_vmpy: hvx.vmpy(v0_u8, v1_i8) + hvx.vmpy(v2_u8, v3_i8) "
                                "-> hvx.vdmpy(v0_u8, v2_u8, v1_i8, v3_i8)\n"))
    runtime = parse("hvx.vmpy(a_u8, t_i8) + hvx.vmpy(b_u8, u_i8)")
    assert Rewriter(rules, cost=INFO.cost).rewrite(runtime) == runtime
    u8, i8 = parse_type("u8"), parse_type("i8")
    constant = make("add", make("hvx.vmpy", var("a", u8), const(3, i8)), make("hvx.vmpy", var("b", u8), const(-5, i8)))
    assert Rewriter(rules, cost=INFO.cost).rewrite(constant).op == "hvx.vdmpy"


@pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")
def test_the_emitter_uses_the_instruction_exactly_where_the_table_says_it_can() -> None:
    """What the declaration stands for: with constant taps the kernel holds vdmpy / vasl (.acc), with a
    runtime tap (a kernel argument) it holds neither (the declared meaning was emitted)."""
    u8, i8, i16 = parse_type("u8"), parse_type("i8"), parse_type("i16")
    x, y = var("x", u8), var("y", u8)
    xh, yh = var("x", i16), var("y", i16)
    cases = {"vdmpy_const": (make("hvx.vdmpy", x, y, const(3, i8), const(-5, i8)), "vdmpy(", True),
             "vdmpy_runtime": (make("hvx.vdmpy", x, y, var("t", i8), const(-5, i8)), "vdmpy(", False),
             "vasl_acc_const": (make("hvx.vasl_acc", xh, yh, const(3, i16)), "+= vasl(", True),
             "vasl_acc_runtime": (make("hvx.vasl_acc", xh, yh, var("t", i16)), "+= vasl(", False)}
    for name, (term, mnemonic, expect) in cases.items():
        assert encodable(term) is expect
        m = new_module(name)
        add_expression_kernel(m, name, term, 128, sorted(term.variables(), key=lambda v: v.name), TARGET)
        asm = " ".join(asm_instructions(compile_module(str(m), TARGET).asm))
        assert (mnemonic in asm) is expect, (name, asm[:400])


def test_a_narrowing_shift_by_a_runtime_amount_is_costed_as_the_emitter_emits_it() -> None:
    """vasr(Vu, Vv, Rt):rnd:sat takes a runtime amount as Rt only when it is uniform and its bounds lie in
    [0, 15] (hvx_emit `narrowing`, `amount_encodable`); any other amount, such as depthwise_conv's
    unclamped u32 Param, is emitted as the semantics and costed so: session 27's hvx128 bring-up kept
    `saturating_cast<i16>(rounding_shr(v0_i32, v1_u32)) -> hvx.vasr_rnd_sat_h(v0_i32, v1_u32)` at cost 1,
    which made depthwise_conv slower (296,998 packets against 286,074 without it)."""
    i32, u32 = parse_type("i32"), parse_type("u32")
    x, s = var("x", i32), var("s", u32, uniform=True)
    clamp = make("min", s, const(15, u32))
    for name in ("hvx.vasr_rnd_sat_h", "hvx.vasr_sat_h", "hvx.vasr_trunc_h"):
        for amount, ok in ((const(4, u32), True), (clamp, True), (s, False), (var("s", u32), False),
                           (make("min", var("s", u32), const(15, u32)), False),
                           (const(16, u32), name.endswith("rnd_sat_h"))):  # 16: vround
            t = make(name, x, amount)
            assert encodable(t) is ok, (name, str(amount))
            node = target_cost(t)[0] - target_cost(amount)[0]
            assert node == (1 if ok else UNLOWERED_FPIR_COST), (name, str(amount))


@pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")
def test_the_emitter_takes_a_runtime_amount_as_rt_exactly_where_the_table_says_it_can() -> None:
    i32, u32 = parse_type("i32"), parse_type("u32")
    x, s = var("x", i32), var("s", u32, uniform=True)
    cases = {"vasr_rnd_clamped": (make("hvx.vasr_rnd_sat_h", x, make("min", s, const(15, u32))), True),
             "vasr_rnd_unclamped": (make("hvx.vasr_rnd_sat_h", x, s), False)}
    for name, (term, expect) in cases.items():
        assert encodable(term) is expect
        m = new_module(name)
        add_expression_kernel(m, name, term, 128, sorted(term.variables(), key=lambda v: v.name), TARGET,
                              uniform=frozenset({"s"}))
        asm = " ".join(asm_instructions(compile_module(str(m), TARGET).asm))
        assert (":rnd:sat" in asm) is expect, (name, asm[:400])
