"""The lifting driver is linear in the term's size (issue 26), checked by counts, which do not depend on the
machine's load: lifting a sum of 640 widening terms (the compile-time benchmark's sums,
benchmarks/compile_time.py) visits each node, tries rules at it, and asks the cost and bounds analyses
about it as many times per node as for a sum of 80 terms, and the analyses (fresh caches here) evaluate
each distinct node a bounded number of times."""

from __future__ import annotations

from typing import Optional

import pytest

from fpir import parse
from fpir.term import Term
from pitchfork.selection import bounds as bounds_mod
from pitchfork.selection.cost import node_cost
from pitchfork.selection.dagcost import DagCost
from pitchfork.selection.lift import lift_rules, normalize_shift_constants
from pitchfork.trs.rewriter import Rewriter

SHAPES = {"widen": lambda i: f"u16(a{i}_u8)", "mac": lambda i: f"i32(a{i}_i16) * i32(b{i}_i16)"}


class CountingRewriter(Rewriter):
    def __init__(self, *args, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kw)
        self.visits = self.attempts = 0

    def _best(self, t: Term) -> Optional[Term]:
        self.visits += 1
        self.attempts += len(self._compiled.candidates_for(t))
        return super()._best(t)


def counts(n: int, shape: str) -> dict[str, float]:
    term = normalize_shift_constants(parse(" + ".join(SHAPES[shape](i) for i in range(n))))
    nodes = sum(1 for _ in term.walk())
    calls = {"cost": 0, "bounds": 0, "node_cost": 0}

    def counted_node_cost(t: Term) -> tuple:
        calls["node_cost"] += 1
        return node_cost(t)

    dag = DagCost(counted_node_cost, 2)  # fresh caches: every node of this lift is new to them
    bcache: dict[Term, tuple[int, int]] = {}
    analysed = {"bounds": 0}
    real_node = bounds_mod._node

    def cost(t: Term) -> tuple:
        calls["cost"] += 1
        return dag(t)

    def bounds(t: Term) -> tuple[int, int]:
        calls["bounds"] += 1
        return bounds_mod._analyse(t, {}, bcache)

    def node(t, ivs, env):  # type: ignore[no-untyped-def]
        analysed["bounds"] += 1
        return real_node(t, ivs, env)

    rw = CountingRewriter(lift_rules(), cost=cost, bounds=bounds)
    bounds_mod._node = node
    try:
        rw.rewrite(term)
    finally:
        bounds_mod._node = real_node
    per = {"visits": rw.visits, "attempts": rw.attempts, "cost_calls": calls["cost"],
           "bounds_calls": calls["bounds"], "bounds_evaluations": analysed["bounds"],
           "node_cost_evaluations": calls["node_cost"], "rewrites": rw.stats.rewrites}
    return {k: v / nodes for k, v in per.items()}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_lifting_work_per_node_does_not_grow_with_the_sum(shape: str) -> None:
    small, big = counts(80, shape), counts(640, shape)
    for k, v in small.items():
        # the same work per input node within 2% (the sums' ends weigh differently: 0.494 rewrites per
        # node for 80 terms, 0.499 for 640), and a bounded amount of it
        assert big[k] <= v * 1.02 + 1e-9, (k, small, big)
        assert big[k] <= 40, (k, big)
