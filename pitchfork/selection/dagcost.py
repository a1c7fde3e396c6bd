"""Summing a per-node cost over a term, fast enough for 10,000-node terms.

The cost models (pitchfork/selection/cost.py for lifting, pitchfork.targets.target_cost for lowering) charge
every *distinct* node of the term DAG once. That sum needs a walk of the whole term, and the
rewriter asks for it at every node and for every candidate right side, which is quadratic in the
size of a big expression (a 10,000-node chain took minutes to lift). So:

* up to EXACT_LIMIT distinct nodes, the DAG sum, exactly as before (the walk gives up after
  EXACT_LIMIT nodes, so asking costs O(EXACT_LIMIT) at most): the expressions of real pipelines are
  below it, and their rewriting is unchanged;
* above it, the tree sum (each use of a node charged again), which is additive, so it is cached per
  (interned) term and costs O(1) per new node. It equals the DAG sum when no non-leaf node is shared
  and is an upper bound otherwise.

Either way the cost is one fixed function of the term into a well-founded order (tuples of
non-negative integers), which is what the rewriter's termination needs: a chain of strictly
cost-decreasing rewrites is finite.
"""

from __future__ import annotations

from operator import add
from typing import Callable, TypeVar

from fpir.term import Term

C = TypeVar("C", bound=tuple)

EXACT_LIMIT = 512


class DagCost:
    """cost(term) for a per-node cost `node` (tuples, added element-wise)."""

    def __init__(self, node: Callable[[Term], tuple], width: int) -> None:
        self.node, self.zero = node, (0,) * width
        self.dag: dict[Term, tuple] = {}
        self.tree: dict[Term, tuple] = {}
        self.nodes: dict[Term, tuple] = {}
        self.big: set[Term] = set()  # terms with more than EXACT_LIMIT distinct nodes
        self.sets: dict[Term, frozenset] = {}  # distinct nodes of each small term
        self.known: dict[Term, tuple] = {}  # every answer given, small or big: one lookup per repeated question

    def _add(self, a: tuple, b: tuple) -> tuple:
        return tuple(x + y for x, y in zip(a, b))

    def _fill_tree(self, term: Term) -> None:
        """Tree sums of every sub-term not yet known, bottom-up (known sub-terms are not entered)."""
        stack: list[tuple[Term, bool]] = [(term, False)]
        while stack:
            t, ready = stack.pop()
            if t in self.tree:
                continue
            if not ready:
                stack.append((t, True))
                stack.extend((a, False) for a in t.args if a not in self.tree)
                continue
            c = self._node(t)
            for a in t.args:
                c = self._add(c, self.tree[a])
            self.tree[t] = c

    def _node(self, t: Term) -> tuple:
        c = self.nodes.get(t)
        if c is None:
            c = self.nodes[t] = self.node(t)
        return c

    def _settle(self, t: Term) -> None:
        """The cost of t, all its arguments' already known. For a small term, its set of distinct
        nodes is the union of its arguments' (a C-level set union) and its cost the largest argument's
        cost plus the nodes that argument's set lacks, so a term costs O(its new nodes), not a walk.
        When the arguments' sets are disjoint (no node shared between them: most terms), every node
        of the union but t itself is counted in exactly one argument's cost, so the cost is their sum
        plus t's own, without forming the difference (the same integers, summed in another order)."""
        args, big, sets, dag = t.args, self.big, self.sets, self.dag
        if not args:
            sets[t] = frozenset((t,))
            dag[t] = self._node(t)
            return
        if len(args) == 1:  # (t is new, so not in its argument's set: the union has one more node)
            a = args[0]
            if a in big:
                big.add(t)
                return
            s = sets[a]
            if len(s) >= EXACT_LIMIT:
                big.add(t)
                return
            sets[t] = s.union((t,))
            dag[t] = tuple(map(add, dag[a], self._node(t)))
            return
        if len(args) == 2:
            a, b = args
            if a in big or b in big:
                big.add(t)
                return
            sa, sb = sets[a], sets[b]
            if sa.isdisjoint(sb):
                if len(sa) + len(sb) >= EXACT_LIMIT:
                    big.add(t)
                    return
                sets[t] = sa.union(sb, (t,))
                dag[t] = tuple(map(add, map(add, dag[a], dag[b]), self._node(t)))
                return
        sets_ = []
        for a in args:
            if a in big:
                big.add(t)
                return
            sets_.append(sets[a])
        base, most = 0, len(sets_[0])  # the first of the largest sets (as max() picks it)
        for i in range(1, len(sets_)):
            if len(sets_[i]) > most:
                base, most = i, len(sets_[i])
        nodes = sets_[base].union(*sets_[:base], *sets_[base + 1:], (t,))
        if len(nodes) > EXACT_LIMIT:
            big.add(t)
            return
        # the base's cost plus each new node's, summed per component in one pass (integers: the same
        # sums in any order)
        known, node = self.nodes, self._node
        extra = [known.get(u) or node(u) for u in nodes - sets_[base]]
        sets[t], dag[t] = nodes, tuple(map(sum, zip(dag[args[base]], *extra)))

    def __call__(self, term: Term) -> tuple:
        hit = self.known.get(term)
        if hit is not None:
            return hit
        hit = self._compute(term)
        self.known[term] = hit
        return hit

    def _compute(self, term: Term) -> tuple:
        hit = self.dag.get(term)
        if hit is not None:
            return hit
        if term not in self.big:
            if len(self.dag) > 200_000:
                for table in (self.dag, self.tree, self.nodes, self.sets, self.known):
                    table.clear()
                self.big.clear()
            dag, big, settle = self.dag, self.big, self._settle
            stack = [term]
            while stack:  # post-order over the sub-terms not settled yet (values do not depend on the order)
                t = stack[-1]
                if t in dag or t in big:
                    stack.pop()
                    continue
                todo = [a for a in t.args if a not in dag and a not in big]
                if todo:
                    stack.extend(todo)
                    continue
                stack.pop()
                settle(t)
            hit = self.dag.get(term)
            if hit is not None:
                return hit
        self._fill_tree(term)
        return self.tree[term]
