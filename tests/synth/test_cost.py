"""The synthesis lowering cost: a same-width cast is a bitcast (free, as a reinterpret), so the
search no longer "wins" by rewriting one into a different form with the same instructions."""

from __future__ import annotations

from fpir.term import Term
from fpir.text import parse
from pitchfork.targets import load_target, target_cost
from synth.cost import bound_below, instructions, lowering_cost
from synth.search import synthesize
from synth.tasks import lowering_grammar


def test_same_width_cast_is_free_like_a_reinterpret() -> None:
    cast, rei = parse("i16(x_u16)"), parse("reinterpret<i16>(x_u16)")
    assert lowering_cost(cast, "arm64") == lowering_cost(rei, "arm64")
    assert target_cost(cast)[0] == 1  # the compiler's own cost is unchanged
    assert instructions(lowering_cost(parse("i8(x_u16)"), "arm64")) == 1  # a narrowing is an instruction


def test_no_rule_that_only_removes_a_same_width_cast() -> None:
    load_target("arm64")
    # the committed synth_lower_arm64_300c11ae59 came from charging the cast: the uaba form it
    # produced has the same two instructions
    lhs = parse("i16(v0_u16 + arm.urhadd(v1_u16, v2_u16))")
    bound = bound_below(lowering_cost(lhs, "arm64"))
    assert bound[1] == 2
    res = synthesize(lhs, lowering_grammar(lhs, "arm64"), bound, max_terms=60_000)
    assert res.status == "exhausted" and res.rhs is None  # nothing with fewer instructions exists


def test_hvx_bring_up_finds_the_16bit_product_of_a_widened_byte() -> None:
    """depthwise_conv's `i32(x_u8) * i32(f_i16)` lifts to `extending_mul(i32(x_u8), f_i16)`. With every
    primitive at one instruction its seen form (two casts, a 32-bit multiply) cost what the hand rule's
    `hvx.vmpy(i16(x), f)` costs and the bring-up's search ended 'optimal' with nothing; HVX has no
    32-bit multiply (vmpyieo + vmpyie.acc) and widens u8 to i32 in two levels of unpacks
    (pitchfork/targets/primitive_cost.py), so the 16 x 16 vmpy is found with the hand rules hidden."""
    from synth.bringup import bring_up_hidden
    from synth.tasks import Task, run_task

    lhs = "extending_mul(i32(v0_u8), v1_i16)"
    r = run_task(Task("lower", "hvx128", lhs, 100_000, hide=bring_up_hidden("hvx128"), work_cap=120_000_000))
    assert r["status"] == "synthesized" and r["rhs"] == "hvx.vmpy(i16(v0_u8), v1_i16)", r
    generic = parse("i32(v0_u8) * i32(v1_i16)")  # what LLVM is handed without the rule
    assert lowering_cost(parse(r["rhs"]), "hvx128")[0] < lowering_cost(generic, "hvx128")[0]
    assert instructions(lowering_cost(parse(r["rhs"]), "arm64")) == instructions(lowering_cost(generic, "arm64"))  # a tie


def test_hvx_vmpyi_by_a_vector_on_words_costs_the_multiply_it_emits() -> None:
    """HVX has vmpyi on 32-bit lanes only by a constant (vmpyiwh); by a vector it is emitted as LLVM's
    32-bit multiply emulation, so it costs what the generic multiply costs (2), and its accumulating form
    that and an add; by a constant, and on 16-bit lanes, it stays one instruction. Costed 1, the hvx128
    bring-up wrote `v0_i32 * v1_i32 -> hvx.vmpyi(v0_i32, v1_i32)` and lowered depthwise_conv's product
    through it."""
    load_target("hvx128")
    cost = {e: lowering_cost(parse(e), "hvx128")[0] for e in (
        "hvx.vmpyi(v0_i32, v1_i32)", "v0_i32 * v1_i32", "hvx.vmpyi_acc(v2_i32, v0_i32, v1_i32)",
        "hvx.vmpyi(v0_i32, 6)", "hvx.vmpyi_acc(v2_i32, v0_i32, 6)", "hvx.vmpyi(v0_i16, v1_i16)")}
    assert cost["hvx.vmpyi(v0_i32, v1_i32)"] == cost["v0_i32 * v1_i32"] == 2
    assert cost["hvx.vmpyi_acc(v2_i32, v0_i32, v1_i32)"] == 3
    assert cost["hvx.vmpyi(v0_i32, 6)"] == cost["hvx.vmpyi_acc(v2_i32, v0_i32, 6)"] == 1
    assert cost["hvx.vmpyi(v0_i16, v1_i16)"] == 1


def test_hvx_narrowing_shift_by_an_unclamped_broadcast_is_not_one_instruction() -> None:
    """synth.cost charges `hvx.vasr_rnd_sat_h(x, splat)` what the compiler charges it (the table's
    `encodable`, hvx_emit `amount_encodable`), and the search never names it so (`encodable_everywhere`):
    the emitter writes the semantics out for an amount of unknown bounds."""
    from fpir.ops import make
    from fpir.term import const, var
    from fpir.types import parse_type
    from pitchfork.targets import UNLOWERED_FPIR_COST, load_target
    from synth.tasks import encodable_everywhere

    load_target("hvx128")
    i32, u32 = parse_type("i32"), parse_type("u32")
    s = var("v1", u32, uniform=True)
    unclamped = make("hvx.vasr_rnd_sat_h", var("v0", i32), s)
    assert lowering_cost(unclamped, "hvx128")[0] == UNLOWERED_FPIR_COST and not encodable_everywhere(unclamped)
    clamped = make("hvx.vasr_rnd_sat_h", var("v0", i32), make("min", s, const(15, u32)))
    assert encodable_everywhere(clamped) and lowering_cost(clamped, "hvx128")[0] < UNLOWERED_FPIR_COST


def _uniform(text: str, names: tuple[str, ...]) -> Term:
    from fpir.term import var
    from synth.corpus import substitute

    t = parse(text)
    return substitute(t, {v: var(v.name, v.type, uniform=True) for v in t.variables() if v.name in names})


def test_work_on_uniform_operands_is_hoisted() -> None:
    """conv3x3a16's tap with a broadcast weight v2: smlal_mixed_bias's bias `i16(v2) * 128` is computed
    once outside the loop, so it costs nothing per vector (5 instructions charged before, against the
    widened multiply's 4; 3 against 3 now), in synthesis's cost and in the compiler's; with v2 varying
    both are charged as before."""
    from pitchfork.targets import ordered_target_cost
    from pitchfork.targets.hoisted import hoisted

    load_target("arm64")
    widened, smlal = "v0_i16 + i16(v1_u8) * i16(v2_i8)", \
        "arm.smlal(v0_i16 + i16(v2_i8) * 128, reinterpret<i8>(v1_u8 ^ 128), v2_i8)"
    assert [instructions(lowering_cost(parse(e), "arm64")) for e in (widened, smlal)] == [4, 5]
    assert [instructions(lowering_cost(_uniform(e, ("v2",)), "arm64")) for e in (widened, smlal)] == [3, 3]
    assert [ordered_target_cost(_uniform(e, ("v2",)))[0] for e in (widened, smlal)] == [3, 3]
    # an FPIR op on uniform operands keeps its cost (the lowering still replaces it)
    assert instructions(lowering_cost(_uniform("rounding_shr(v0_i16, 3)", ("v0",)), "arm64")) == 8
    assert hoisted(_uniform("v0_i16 + 3", ("v0",))) and not hoisted(parse("v0_i16 + 3"))


def test_uniform_task_on_arm64_hoists_the_clamp_of_a_shift_amount() -> None:
    """arm64 has no lane-0 instruction, yet its uniform tasks are posed (synth/driver.py lower_tasks)
    and keep right sides that move work onto the uniform operand (synth/tasks.py hoists_work): a
    shift by a uniform amount clamps the amount once, outside the loop."""
    from synth.tasks import hoists_work

    assert hoists_work(_uniform("arm.sshl(v0_i16, max(min(v1_i16, 16), -16))", ("v1",)))
    assert not hoists_work(_uniform("arm.sshl(v0_i16, v1_i16)", ("v1",)))
    assert not hoists_work(parse("arm.sshl(v0_i16, max(min(v1_i16, 16), -16))"))


def test_arm_widening_shift_by_a_vector_amount_is_costed_as_emitted() -> None:
    """ushll/sshll take their amount as an immediate; by a vector (softmax's synthesized
    `widening_shl(c0, v0) -> arm.sshll(c0, v0)`, the power of two 1 << y) the emitter writes the generic
    extend-and-shift, which both costs now charge as an unlowered op and synthesis never names
    (`encodable_everywhere`), as for HVX's vasr by an amount it cannot take."""
    from pitchfork.targets import UNLOWERED_FPIR_COST
    from synth.tasks import encodable_everywhere

    load_target("arm64")
    by_vector, by_constant, shll = parse("arm.sshll(1, v0_i16)"), parse("arm.sshll(v0_i16, 3)"), parse("arm.ushll(v0_u8, 8)")
    assert target_cost(by_vector)[0] == instructions(lowering_cost(by_vector, "arm64")) == UNLOWERED_FPIR_COST
    assert not encodable_everywhere(by_vector)
    assert target_cost(by_constant)[0] == target_cost(shll)[0] == 1 and encodable_everywhere(shll)


def test_arm64_cost_counts_issue_cycles_first() -> None:
    """conv3x3a16's tap with a broadcast weight v2: the widened multiply and the hand smlal form tie at
    3 instructions, but on cortex-a76 (the harness's arm64 model) the Q-form `mul` issues at one per 2
    cycles and `smlal` at one per cycle (pitchfork/targets/arm_issue.py): the smlal form is cheaper
    first. x86 and hvx128 keep (instructions, input bits, primitive ops)."""
    load_target("arm64")
    widened, smlal = (_uniform(e, ("v2",)) for e in (
        "v0_i16 + i16(v1_u8) * i16(v2_i8)", "arm.smlal(v0_i16 + i16(v2_i8) * 128, reinterpret<i8>(v1_u8 ^ 128), v2_i8)"))
    cw, cs = lowering_cost(widened, "arm64"), lowering_cost(smlal, "arm64")
    assert len(cw) == 4 and instructions(cw) == instructions(cs) == 3
    assert cs < cw and cs[0] < cw[0]
    assert len(lowering_cost(widened, "x86-avx2")) == len(lowering_cost(widened, "hvx128")) == 3


def test_bound_below_keeps_only_rules_cheaper_on_the_machine() -> None:
    """A right side beats an arm64 lowering with fewer issue cycles, or as many in fewer instructions;
    the search's levels stay the instruction count (one fewer than the lowering it beats)."""
    from synth.cost import level_cap

    bound = bound_below((300, 3, 40, 2))
    assert (250, 2, 99, 9) < bound and (300, 2, 99, 9) < bound
    assert not (350, 2, 0, 0) < bound  # fewer instructions, more cycles: not kept
    assert not (300, 3, 0, 0) < bound
    assert level_cap(bound) == 2 and level_cap(bound_below((3, 40, 2))) == 2
    assert bound_below((3, 40, 2)) == (3, 0, 0)
