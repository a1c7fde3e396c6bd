"""Extraction from a saturated e-graph by the project's target-agnostic cost (pitchfork/cost.py).

egglog's own extractor costs each constructor by a fixed number; ours (`cost.node_cost`) depends on
the types of a node's operands (the sum of their bit widths) and on the op's rank, lexicographically.
So the e-graph is read out of egglog (`EGraph.freeze()`: every constructor's rows, child e-classes and
output e-class) and extracted here: the cost of an e-class is the least, over its e-nodes, of the node's
cost plus its children's (a tree cost, found by iterating to a fixed point: costs only fall, and a node
whose child has no finite cost yet is skipped, so cycles are harmless). Ties prefer a node that keeps a
flag (its fact helps lowering). The chosen term is then costed again as a DAG by pitchfork.cost.cost,
which is what the engine compares with the greedy result.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from fpir.term import Term
from fpir.types import parse_type
from pitchfork.selection.cost import DEFAULT_RANK, OP_RANK
from pitchfork.selection.egraph.declare import CONST, LEAF, Encoding, parse_ctor

Cost3 = tuple[int, int, int]


@lru_cache(maxsize=None)
def _bits(tname: str) -> int:
    return parse_type(tname).bits
_INF: Cost3 = (1 << 62, 0, 0)


@dataclass(frozen=True)
class ENode:
    ctor: str
    tname: str
    payload: Optional[int]  # Const value / Leaf index
    children: tuple[Any, ...]  # egglog Values of the child e-classes


def read_egraph(egraph: Any, frozen: Any = None) -> dict[Any, list[ENode]]:
    """Every e-class (egglog Value) of sort E with its e-nodes (from `frozen`, egraph.freeze(), if given)."""
    frozen = frozen if frozen is not None else egraph.freeze()
    classes: dict[Any, list[ENode]] = {}
    for name, fn in frozen.functions.items():
        if fn.is_let_binding or fn.output_sort != "E":
            continue
        if name in (CONST, LEAF):
            for row in fn.rows:
                if row.subsumed:
                    continue
                v = egraph.value_to_i64(row.inputs[0])
                classes.setdefault(row.output, []).append(ENode(name, egraph.value_to_string(row.inputs[1]), v, ()))
            continue
        if not name.startswith("op_"):
            continue
        for row in fn.rows:
            if row.subsumed:
                continue
            tname = egraph.value_to_string(row.inputs[0])
            classes.setdefault(row.output, []).append(ENode(name, tname, None, tuple(row.inputs[1:])))
    return classes


@lru_cache(maxsize=None)
def _ctor_cost(ctor: str) -> tuple[int, int]:
    """(rank, 1 if the node could carry a flag but does not) of a constructor."""
    from fpir.opspec import spec

    op, flags = parse_ctor(ctor)
    return OP_RANK.get(op, DEFAULT_RANK), 1 if (spec(op).flags and not flags) else 0


def _node_cost(n: ENode, types: dict[Any, int]) -> Cost3:
    if not n.children:
        return (0, 0, 0)
    rank, unflagged = _ctor_cost(n.ctor)
    return (sum(types[c] for c in n.children), rank, unflagged)


def _best(classes: dict[Any, list[ENode]]) -> dict[Any, tuple[Cost3, ENode]]:
    types = {c: _bits(ns[0].tname) for c, ns in classes.items()}
    # each node's own cost once (it does not change between sweeps); the sweeps are the plain
    # fixed-point iteration, in the same order with the same strict comparison (ties keep the node
    # found first), so the choice is what it always was
    rows = [(c, [(n, n.children, _node_cost(n, types)) for n in nodes]) for c, nodes in classes.items()]
    best: dict[Any, tuple[Cost3, ENode]] = {}
    get = best.get
    changed = True
    while changed:
        changed = False
        for c, nodes in rows:
            for n, children, own in nodes:
                a, b, d = own
                for ch in children:
                    got = get(ch)
                    if got is None:
                        break
                    cc = got[0]
                    a, b, d = a + cc[0], b + cc[1], d + cc[2]
                else:
                    total = (a, b, d)
                    cur = get(c)
                    if cur is None or total < cur[0]:
                        best[c] = (total, n)
                        changed = True
    return best


def _build(best: dict[Any, tuple[Cost3, ENode]], roots: Any, enc: Encoding, fold: bool) -> dict[Any, Term]:
    """Terms of the chosen nodes of every class reachable from `roots`, post-order, no recursion."""
    memo: dict[Any, Term] = {}
    stack: list[tuple[Any, bool]] = [(r, False) for r in roots if r in best]
    while stack:
        c, done = stack.pop()
        if c in memo:
            continue
        n = best[c][1]
        if done:
            memo[c] = enc.decode_node(n.ctor, n.tname, [memo[ch] for ch in n.children], n.payload, fold=fold)
            continue
        stack.append((c, True))
        stack.extend((ch, False) for ch in n.children if ch not in memo)
    return memo


def extract_all(classes: dict[Any, list[ENode]], enc: Encoding, fold: bool = True) -> dict[Any, Term]:
    """The cheapest term of every e-class that has one."""
    best = _best(classes)
    return _build(best, list(best), enc, fold)


def extract_all_with_choices(classes: dict[Any, list[ENode]], enc: Encoding,
                             fold: bool = True) -> tuple[dict[Any, tuple[Cost3, ENode]], dict[Any, Term]]:
    """`extract_all` and the choice behind it: class -> (tree cost, chosen e-node)."""
    best = _best(classes)
    return best, _build(best, list(best), enc, fold)


def extract(egraph: Any, root: Any, enc: Encoding, classes: Optional[dict[Any, list[ENode]]] = None) -> Term:
    """The cheapest term (tree cost of pitchfork/cost.py's node cost) of e-class `root`."""
    classes = classes if classes is not None else read_egraph(egraph)
    best = _best(classes)
    if root not in best:
        raise ValueError("no finite term in the root e-class")
    return _build(best, [root], enc, True)[root]
