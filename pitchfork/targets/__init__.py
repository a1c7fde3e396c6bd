"""Target ISAs: instruction tables (pitchfork/targets/<isa>.py), lowering rules and cost models."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Optional

from fpir.ops import spec
from fpir.term import Term
from pitchfork.dagcost import DagCost
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
    cost: Callable[[Term], tuple[int, ...]]


def canonical(name: str) -> str:
    name = ALIASES.get(name, name)
    if name not in ISAS:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(ISAS)}")
    return name


def _target_node_cost(t: Term) -> tuple[int, int, int]:
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
        # between both directions (pitchfork/emit/expr.py _shift)
        n = RUNTIME_SHIFT_COST_SIGNED if t.args[1].type.signed else RUNTIME_SHIFT_COST
        return (n, width, 1)
    one = 0 if t.op == "reinterpret" else 1
    return (one, width, one)


_TARGET_COST = DagCost(_target_node_cost, 3)


def target_cost(term: Term) -> tuple[int, int, int]:
    """Target cost: instructions first (target ops by their declared cost, an FPIR op left for the
    generic expansion as several instructions), then input bit widths, then the number of primitive
    ops (so that, all else equal, a target instruction replaces the primitive op it implements, like
    Neon `abs` for `abs`). Summed over the distinct nodes (over every use above
    pitchfork.dagcost.EXACT_LIMIT nodes), cached per term."""
    return _TARGET_COST(term)  # type: ignore[return-value]


def load_target(name: str, include_synthesized: Optional[bool] = None,
                exclude_from: Optional[str | Iterable[str]] = None) -> TargetInfo:
    """The target's instruction table, lowering rules (rules/lower/<isa>.rules plus the synthesized
    rules/synthesized/lower_<isa>.rules) and cost. Synthesized rules follow the same switches as
    lifting (`pitchfork.synthesized.effective`: --no-synthesized, leave-one-out exclusion)."""
    from pitchfork.synthesized import effective

    inc, excl = effective(include_synthesized, exclude_from)
    return _load_target(canonical(name), inc, excl)


@lru_cache(maxsize=None)
def _load_target(name: str, include_synthesized: bool, exclude_from: frozenset[str]) -> TargetInfo:
    from pitchfork.synthesized import SynthConfig, synthesized_rules
    from pitchfork.trs.rules import load_rule_file

    module, stem = ISAS[name]
    importlib.import_module(module)
    path = RULES_DIR / "lower" / f"{stem}.rules"
    rules = load_rule_file(path) if path.exists() else []
    rules += synthesized_rules(f"lower_{stem}", SynthConfig(include_synthesized, exclude_from))
    return TargetInfo(name, RuleSet(rules), target_cost)
