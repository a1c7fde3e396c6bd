"""Target ISAs: instruction tables (pitchfork/targets/<isa>.py), lowering rules and cost models."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Optional

from fpir.opspec import spec
from fpir.term import Term
from pitchfork.selection.dagcost import DagCost
from pitchfork.selection.synthesized import (
    SynthConfig,
    effective,
    load_rules,
    lowering_only,
    on_directory_change,
    synthesized_rules,
)
from pitchfork.targets.hoisted import hoisted
from pitchfork.targets.primitive_cost import primitive_instructions
from pitchfork.trs.rules import RuleSet

RULES_DIR = Path(__file__).resolve().parent.parent.parent / "rules"

# target name -> (instruction table module, lowering rule file stem)
ISAS = {"x86-avx2": ("pitchfork.targets.x86", "x86_avx2"), "arm64": ("pitchfork.targets.arm", "arm_neon"),
        "hvx128": ("pitchfork.targets.hvx", "hvx")}
ALIASES = {"x86": "x86-avx2", "avx2": "x86-avx2", "arm": "arm64", "neon": "arm64", "aarch64": "arm64",
           "hvx": "hvx128", "hexagon": "hvx128"}

UNLOWERED_FPIR_COST = 8
#: instructions of the generic code for a shift by a runtime amount (unsigned amount: shift + mask;
#: signed: both directions, masked, and a select)
RUNTIME_SHIFT_COST = 2
RUNTIME_SHIFT_COST_SIGNED = 4


@dataclass(frozen=True)
class TargetInfo:
    name: str
    rules: RuleSet
    cost: Callable[[Term], tuple[int, ...]]  # lowering_cost(name)


def canonical(name: str) -> str:
    name = ALIASES.get(name, name)
    if name not in ISAS:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(ISAS)}")
    return name


#: multiply-accumulate instructions whose first operand is the accumulator (the chains of
#: `_accumulation_order`)
MULTIPLY_ACCUMULATE = frozenset({"arm.umlal", "arm.smlal"})
#: adds whose operands (all of them) or accumulator (the first) may sit on a multiply-accumulate chain
_CHAIN_ADDS = {"add": None, "arm.uaddw": 0, "arm.saddw": 0}


def _mac_chain(t: Term) -> int:
    """Length of the multiply-accumulate chain `t` starts (through the accumulator operands)."""
    n = 0
    while t.op in MULTIPLY_ACCUMULATE:
        n, t = n + 1, t.args[0]
    return n


def _accumulation_order(t: Term) -> int:
    """The tie-break of `ordered_target_cost`: how many multiply-accumulates an add sits above, and how
    many of an add's operands are adds of a shift by a constant. Moving an add (or widen-right add)
    below a multiply-accumulate into its accumulator, or a constant shift up a chain of adds, keeps
    the instruction count and lowers this, so the rewriter takes it (rules/lower/arm_neon.rules,
    "accumulation chains" and "sums of shifted terms"); it ends where the add meets the chain's root,
    or the shift another one, where a cheaper form may appear (two uaddw over a ushll root are a
    uaddl root and one umlal; (x << c) + (y << c) is (x + y) << c)."""
    which = _CHAIN_ADDS.get(t.op, -1)
    if which == -1:
        return 0
    args = t.args if which is None else t.args[which:which + 1]
    n = sum(_mac_chain(a) for a in args)
    if t.op == "add":  # a shift by a constant one add down: moved up, two such shifts meet and merge
        n += sum(1 for a in t.args if a.op == "add" and any(_const_shl(b) for b in a.args))
    return n


#: the accumulating instructions a shift by a constant moves through, into their accumulator (first
#: operand), down to the chain's root
_SHIFTED_CHAIN = frozenset({"arm.umlal", "arm.smlal", "arm.uaddw", "arm.saddw", "arm.uaddl", "arm.saddl"})


def _shift_order(t: Term) -> int:
    """A shift by a constant of an accumulation chain: the chain's length below it (through
    reinterprets). Moved to the root, the shift becomes the root's widening shift (ushll)."""
    if not _const_shl(t):
        return 0
    n, u = 0, t.args[0]
    while u.op in _SHIFTED_CHAIN or u.op == "reinterpret":
        n += u.op != "reinterpret"
        if not u.args or u.op in ("arm.uaddl", "arm.saddl"):
            break
        u = u.args[0]
    return n


def _const_shl(t: Term) -> bool:
    return t.op == "shl" and t.args[1].is_const


def _target_node_cost(t: Term, isa: Optional[str] = None) -> tuple[int, int, int]:
    """One node's (instructions, input bits, primitive ops). A generic primitive costs what target `isa`
    spends on it (`primitive_cost.primitive_instructions`: 1 where it has the instruction, several where
    LLVM emulates it: HVX's 32-bit multiply); with no target, 1. Work on uniform operands only
    (`hoisted.hoisted`: computed once outside the loop) costs no instructions, its input bits and
    primitive ops still break ties; an FPIR op or an instruction emitted as its generic meaning there
    keeps its cost, so that the lowering still replaces it."""
    return per_loop_cost(t, _per_vector_node_cost(t, isa))


def per_loop_cost(t: Term, c: tuple[int, int, int]) -> tuple[int, int, int]:
    """Node `t`'s per-vector cost `c` as the loop pays it: no instructions for work on uniform operands
    only (`hoisted.hoisted`), except an FPIR op or an instruction emitted as its generic meaning
    (UNLOWERED_FPIR_COST), which keeps its cost so that the lowering still replaces it. The one rule
    for the compiler's cost (`_target_node_cost`) and synthesis's (synth/cost.py)."""
    if c[0] and c[0] != UNLOWERED_FPIR_COST and hoisted(t):
        return (0, c[1], c[2])
    return c


def _per_vector_node_cost(t: Term, isa: Optional[str]) -> tuple[int, int, int]:
    if not t.args:
        return (0, 0, 0)
    s = spec(t.op)
    width = sum(a.type.bits for a in t.args)
    if s.kind == "target":
        check = s.meta.get("encodable")
        if check is not None and not check(t):  # emitted as its generic meaning (targets/base.py)
            return (UNLOWERED_FPIR_COST, width, 0)
        return (s.meta.get("cost", 1), width, 0)
    if s.kind == "fpir":
        return (UNLOWERED_FPIR_COST, width, 0)
    if t.op in ("shl", "shr") and not t.args[1].is_const:
        # a runtime amount: generic code masks amounts >= bits and, for a signed amount, selects
        # between both directions (pitchfork/codegen/expr.py _shift)
        n = RUNTIME_SHIFT_COST_SIGNED if t.args[1].type.signed else RUNTIME_SHIFT_COST
        # the shift itself is one of those instructions: an emulated one (HVX bytes) costs the rest too
        return (n + primitive_instructions(isa, t) - 1, width, 1)
    if s.reduce is not None and s.reduce[1] > 2:
        # a VectorReduce by f = 2^k emitted generically: k levels of lane-pair combining, each a
        # deinterleave (two shuffles) and the op, the last one without shuffles when it folds to a
        # lane: 3k - 2 instructions (a reduction by 2 stays 1, as before), so two pairwise instructions
        # (arm addp/umaxp, udot then addp) are cheaper than the generic reduction by 4 they implement
        return (3 * max(1, s.reduce[1].bit_length() - 1) - 2, width, 1)
    if t.op == "reinterpret":
        return (0, width, 0)
    return (primitive_instructions(isa, t), width, 1)


_TARGET_COST = DagCost(_target_node_cost, 3)
def _ordered_node_cost(t: Term) -> tuple[int, int, int, int]:
    n, width, primitives = _target_node_cost(t)
    return (n, _accumulation_order(t) + _shift_order(t), width, primitives)


_ORDERED_COST = DagCost(_ordered_node_cost, 4)
#: targets whose lowering breaks cost ties by the accumulation order (their rules reorder sums)
ORDERED_SUMS = frozenset({"arm64"})


def target_cost(term: Term) -> tuple[int, int, int]:
    """Target cost: instructions first (target ops by their declared cost, an FPIR op left for the
    generic expansion as several instructions), then input bit widths, then the number of primitive
    ops (so that, all else equal, a target instruction replaces the primitive op it implements, like
    Neon `abs` for `abs`). Summed over the distinct nodes (over every use above
    pitchfork.selection.dagcost.EXACT_LIMIT nodes), cached per term."""
    return _TARGET_COST(term)  # type: ignore[return-value]


def ordered_target_cost(term: Term) -> tuple[int, int, int, int]:
    """`target_cost` with the accumulation order right after the instruction count: among forms with
    the same instructions, an add above a multiply-accumulate or over an add of a shifted term
    (`_accumulation_order`), and a shift by a constant above an accumulation chain (`_shift_order`),
    cost more, whatever the operand widths (a umlal reads wider operands than the uaddw it
    replaces). The cost the lowering of the ORDERED_SUMS targets minimises."""
    return _ORDERED_COST(term)  # type: ignore[return-value]


def load_target(name: str, include_synthesized: Optional[bool] = None,
                exclude_from: Optional[str | Iterable[str]] = None,
                unavailable: frozenset[str] = frozenset()) -> TargetInfo:
    """The target's instruction table, lowering rules (rules/lower/<isa>.rules plus the synthesized
    rules/synthesized/lower_<isa>.rules) and cost. Synthesized rules follow the same switches as
    lifting (`pitchfork.selection.synthesized.effective`: --no-synthesized, leave-one-out exclusion).
    `unavailable`: target instructions (op names) the target's features lack
    (pitchfork/targets/target_strings.py); rules whose right side uses one are left out.
    Under synthesized-only lowering (`pitchfork.selection.synthesized.set_lowering_only(DIR)`, or
    PITCHFORK_LOWERING_ONLY=DIR) the lowering rules are DIR/lower_<stem>.rules alone."""
    inc, excl = effective(include_synthesized, exclude_from)
    return _load_target(canonical(name), inc, excl, frozenset(unavailable), lowering_only())


def uses_instruction(rule_rhs: str, ops: Iterable[str]) -> bool:
    """Whether a rule's right side (text) applies any of the target instructions `ops`."""
    return any(re.search(rf"(?<![\w.]){re.escape(op)}\(", rule_rhs) for op in ops)


@lru_cache(maxsize=None)
def _load_target(name: str, include_synthesized: bool, exclude_from: frozenset[str],
                 unavailable: frozenset[str] = frozenset(), only: Optional[Path] = None) -> TargetInfo:
    from pitchfork.trs.rules import load_rule_file

    module, stem = ISAS[name]
    importlib.import_module(module)
    if only is not None:  # synthesized-only lowering: that folder's rules, nothing hand-written
        path = only / f"lower_{stem}.rules"
        if not path.is_file():
            raise ValueError(f"synthesized-only lowering (PITCHFORK_LOWERING_ONLY={only}): no {path.name} "
                             f"there for {name} (run `pitchfork-synth --bring-up {name} -o {only}`)")
        rules = load_rules(path, exclude_from)
    else:
        path = RULES_DIR / "lower" / f"{stem}.rules"
        rules = load_rule_file(path) if path.exists() else []
        rules += synthesized_rules(f"lower_{stem}", SynthConfig(include_synthesized, exclude_from))
    if unavailable:
        rules = [r for r in rules if not uses_instruction(r.rhs, unavailable)]
    return TargetInfo(name, RuleSet(rules), lowering_cost(name))


#: targets whose lowering breaks instruction-count ties by the lane-order conversions (HVX's
#: de-interleaved widening results: pitchfork/targets/hvx_cost.py)
LANE_ORDERED = frozenset({"hvx128"})


def _lane_order_node_cost(t: Term) -> tuple[int, int, int, int]:
    from pitchfork.targets.hvx_cost import conversions

    n, width, primitives = _target_node_cost(t, "hvx128")
    return (n, conversions(t), width, primitives)


_LANE_ORDER_COST = DagCost(_lane_order_node_cost, 4)


def lane_order_target_cost(term: Term) -> tuple[int, int, int, int]:
    """`target_cost` with HVX's generic primitives at the instructions LLVM emits for them
    (pitchfork/targets/primitive_cost.py: a 32-bit multiply 2, a cast u8 -> i32 3) and HVX's lane-order
    conversions right after the instruction count
    (pitchfork/targets/hvx_cost.py: each node's `conversions`, summed over distinct nodes as DagCost
    does): among forms with the same instructions, the one with fewer vshuff / vdeal. The cost the
    lowering of the LANE_ORDERED targets minimises."""
    return _LANE_ORDER_COST(term)  # type: ignore[return-value]


def lowering_cost(name: str) -> Callable[[Term], tuple[int, ...]]:
    """The cost target `name`'s lowering minimises: `target_cost`, with the ORDERED_SUMS or LANE_ORDERED
    tie-break where the target has one."""
    if name in ORDERED_SUMS:
        return ordered_target_cost
    if name in LANE_ORDERED:
        return lane_order_target_cost
    return target_cost


on_directory_change(_load_target.cache_clear)
