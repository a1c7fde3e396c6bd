"""The target-agnostic cost model of the lifting TRS (paper section 3.2).

Cost is lexicographic: first the sum, over every instruction (distinct non-leaf node of the term
DAG), of the bit widths of its inputs, which favours fewer and narrower instructions; then the sum of
per-op ranks that order ops by their average cost on real targets (rounding_halving_add is cheaper
than halving_add because x86 only has the former; extending_* ranks above widening_* + add so the
re-association of Figure 4 is an improvement). Target cost models live with each target.
"""

from __future__ import annotations

from typing import Mapping

from fpir.term import Term
from pitchfork.selection.dagcost import DagCost

Cost = tuple[int, int]

OP_RANK: Mapping[str, int] = {
    "reinterpret": 0, "cast": 1,
    "add": 2, "sub": 2, "min": 2, "max": 2, "and": 2, "or": 2, "xor": 2, "not": 2, "select": 2, "abs": 2,
    "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2, "shl": 2, "shr": 2,
    "mul": 3, "div": 12, "mod": 12,
    "widening_add": 2, "widening_sub": 2, "widening_shl": 2, "widening_shr": 2, "widening_mul": 3,
    "extending_add": 4, "extending_sub": 4, "extending_mul": 5,
    "absd": 2, "saturating_cast": 2, "saturating_add": 2, "saturating_sub": 2,
    "rounding_halving_add": 2, "halving_add": 3, "halving_sub": 3,
    "rounding_shr": 3, "rounding_shl": 3, "saturating_shl": 3, "mul_shr": 4, "rounding_mul_shr": 4,
}
DEFAULT_RANK = 4


def node_cost(t: Term) -> Cost:
    args = t.args
    if not args:
        return (0, 0)
    bits = 0
    for a in args:  # (a loop, not sum() over a generator: asked for every new node the rewriter costs)
        bits += a.type.bits
    return (bits, OP_RANK.get(t.op, DEFAULT_RANK))


_DAG_COST = DagCost(node_cost, 2)


def cost(term: Term) -> Cost:
    """Cost of the term DAG (each distinct sub-term once; for terms above pitchfork.selection.dagcost.EXACT_LIMIT
    nodes, each use once). Terms are interned, so it is cached."""
    return _DAG_COST(term)  # type: ignore[return-value]
