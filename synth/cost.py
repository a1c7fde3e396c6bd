"""The cost synthesis charges a lowering: the compiler's target cost with same-width casts free.

`pitchfork.targets.target_cost` counts instructions by each target instruction's declared cost
(`cost=` in the instruction table, per native register; an FPIR op left for the generic expansion
as several), then input widths, then primitive ops. It charges a `cast` between two types of the
same width as one instruction, although it is a bitcast that emits nothing, the same as a
`reinterpret`. Synthesis that counted it would "win" by rewriting it away into a different but not
cheaper form (`cast<i16>(x_u16 + urhadd(y, z))` -> `reinterpret<i16>(uaba(x, 0, urhadd(y, z)))`:
identical assembly). A lane-combining primitive (`vector_reduce_add_x4`) left for the generic
expansion is charged as the shuffles and adds it becomes (`reduce_instructions`), not as one
instruction, so that a dot product or pairwise add is seen as the saving it is. So synthesis measures both the left side and every candidate with such casts
free; a right side it keeps is then also strictly cheaper under the compiler's own cost (its same-
width casts are written as reinterprets), so the rewriter takes it.

A generic primitive the target has no instruction for costs what LLVM emits for it there, from the
compiler's own table (pitchfork/targets/primitive_cost.py: an HVX 32-bit multiply is two instructions,
a cast u8 -> i32 three), so the cost is per ISA: `lowering_cost(term, isa)`. With 1 for every primitive,
the seen form of depthwise_conv's product `i32(x_u8) * i32(y_i16)` cost the same as the hand rule's
`hvx.vmpy(i16(x), y)` and the hvx128 bring-up kept it as optimal.

Work on uniform operands only (a broadcast Param and what is computed from it alone) is computed once
outside the loop: it costs no instructions here, as in the compiler's cost (pitchfork/targets/
hoisted.py), so a form that moves work onto a uniform operand (conv3x3a16's smlal_mixed_bias: the
bias `cast<i16>(w) * 128`) is not charged for it per vector.

On arm64 the cost knows the machine: the harness's static estimate there is llvm-mca cycles on
cortex-a76 (benchmarks/harness/static.py), where instructions issue at different rates (a Q-form `mul`
one per 2 cycles, `smlal` one per cycle, `add` two per cycle), so the cost is (issue cycles, then the
instruction count and the tie-breaks above): `pitchfork/targets/arm_issue.py`, from llvm-mca's table
(arm_issue_rates.py). A right side is then kept only when it issues in fewer cycles on that core, or
as many in fewer instructions (`bound_below`); the search still enumerates by instruction levels
(`level_cap`: a candidate with fewer instructions than the current lowering), so it costs no more
levels than before. x86 (llvm-mca too, but per-block only here) and hvx128 (VLIW packets) keep the
instruction count first.
"""

from __future__ import annotations

from functools import partial

from fpir.term import Term
from pitchfork.selection.dagcost import DagCost


def same_width_cast(t: Term) -> bool:
    return t.op == "cast" and len(t.args) == 1 and t.args[0].type.bits == t.type.bits


def reduce_instructions(factor: int) -> int:
    """Instructions of a generic `vector_reduce_*_x<f>`: per halving of the lane groups, two
    shuffles (the even and the odd lanes) and one combining op."""
    return 3 * max(1, (factor - 1).bit_length())


#: targets whose synthesis cost counts issue cycles first (module doc)
ISSUE_RATE = frozenset({"arm64"})


def node_cost(t: Term, isa: str) -> tuple[int, ...]:
    """A node's cost per vector; work on uniform operands only is hoisted out of the loop
    (pitchfork/targets/hoisted.py) and costs no instructions, as the compiler's cost charges it. On
    the ISSUE_RATE targets its issue cycles come first (hoisted work: none)."""
    from pitchfork.targets import per_loop_cost

    c = per_loop_cost(t, _per_vector(t, isa))
    if isa not in ISSUE_RATE:
        return c
    from pitchfork.targets.arm_issue import node_cycles

    return (node_cycles(t, c[0]), *c)


def _per_vector(t: Term, isa: str) -> tuple[int, int, int]:
    from fpir.opspec import spec
    from pitchfork.targets import _per_vector_node_cost

    if same_width_cast(t):
        return (0, t.args[0].type.bits, 0)  # a bitcast, as a reinterpret is charged
    s = spec(t.op) if t.args else None
    if s is not None and s.reduce is not None:
        return (reduce_instructions(s.reduce[1]), t.args[0].type.bits, 1)
    emulated = _emulated_instruction(t, isa)
    if emulated is not None:
        return emulated
    return _per_vector_node_cost(t, isa)  # (`node_cost` applies the per-loop rule once, to every case)


#: HVX instructions whose 32-bit form exists only by a constant multiplier (vmpyiwb / vmpyiwh): by a
#: vector the emitter writes the declared meaning, `x * y` (`x + y * z`), as LLVM's 32-bit multiply
#: emulation (pitchfork/targets/hvx_emit.py `vmpyi`); the index of the multiplicand pair
_BY_CONSTANT_ONLY = {"hvx.vmpyi": 0, "hvx.vmpyi_acc": 1}


def _emulated_instruction(t: Term, isa: str) -> "tuple[int, int, int] | None":
    """An instruction node emitted as its generic meaning, at what that costs: HVX `vmpyi` on 32-bit
    lanes by a vector is the generic 32-bit multiply (two instructions, primitive_cost.py), its
    accumulating form that and an add. Costed as one instruction, the hvx128 bring-up wrote
    `v0_i32 * v1_i32 -> hvx.vmpyi(v0_i32, v1_i32)` (a saving the code does not have) and, through it,
    preferred depthwise_conv's `i32(x_u8) * i32(f_i16)` as vmpyi of the widened operands over the
    16-bit vmpy (0.348x of hand-written lowering, mul 0.312x). By a constant it is one instruction."""
    first = _BY_CONSTANT_ONLY.get(t.op)
    if first is None or t.type.bits != 32:
        return None
    x, y = t.args[first], t.args[first + 1]
    if x.is_const or y.is_const:
        return None
    from pitchfork.targets.primitive_cost import instructions

    n = instructions(isa, "mul", x.type, t.type) + (1 if first else 0)
    return (n, sum(a.type.bits for a in t.args), 1)


#: one DagCost (and its memo) per target: the costs of a term differ between targets
_COSTS: dict[str, DagCost] = {}


def lowering_cost(term: Term, isa: str) -> tuple[int, ...]:
    """`target_cost` with same-width casts free and target `isa`'s emulated primitives at their
    instruction counts; on the ISSUE_RATE targets (issue cycles, instructions, input bits, primitive
    ops), elsewhere (instructions, input bits, primitive ops) (see module doc). Its first element is the
    measure a rule must lower: what the judges and the stage's gain compare."""
    cost = _COSTS.get(isa)
    if cost is None:
        cost = _COSTS[isa] = DagCost(partial(node_cost, isa=isa), cost_width(isa))
    return cost(term)  # type: ignore[return-value]


def cost_unit(isa: str) -> str:
    """What the first element of `lowering_cost(..., isa)` counts (for reports)."""
    return "issue cycles x 100 (cortex-a76)" if isa in ISSUE_RATE else "instructions"


def instructions(c: tuple) -> int:
    """The instruction count in a `lowering_cost` value (its second element on the ISSUE_RATE targets)."""
    return c[1] if len(c) == 4 else c[0]


def cost_width(isa: str) -> int:
    """Elements of a `lowering_cost(..., isa)` value."""
    return 4 if isa in ISSUE_RATE else 3


def bound_below(c: tuple) -> tuple:
    """The bound a right side's `lowering_cost` must stay under to replace a lowering of cost `c`:
    strictly fewer instructions; on the ISSUE_RATE targets fewer issue cycles, or as many in fewer
    instructions (a right side never equals the bound's zero tie-breaks)."""
    return (c[0], c[1], 0, 0) if len(c) == 4 else (c[0], 0, 0)


def level_cap(bound: tuple) -> int:
    """The last enumeration level (instructions) the search needs under `bound` (`bound_below`): one
    instruction fewer than the lowering it beats (a candidate with as many instructions and fewer
    cycles is not enumerated: that would cost the whole next level)."""
    return instructions(bound) - 1

