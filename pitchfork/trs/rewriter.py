"""The term-rewriting engine shared by lifting and lowering.

Bottom-up greedy rewriting to a fixed point: children are rewritten first; then, at each node, every
rule indexed under the node's op is tried; among the rules that match (and whose predicate holds)
the result with the lowest cost wins, and it is taken only if it strictly lowers the cost of the
node's sub-term. The new sub-term is then rewritten again (its new inner nodes too). Because every
step strictly lowers a well-founded cost, rewriting always terminates. A rule that matches but
would not lower the cost is recorded in `stats.not_decreasing`, never applied.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from dataclasses import dataclass, field
from operator import is_not
from typing import Callable, Optional

from fpir.ops import make
from fpir.opspec import spec
from fpir.term import Term
from fpir.types import FPIRTypeError
from pitchfork.selection.bounds import bounds as default_bounds
from pitchfork.selection.cost import cost as default_cost
from pitchfork.trs.pattern import Bindings
from pitchfork.trs.predicate import Streams
from pitchfork.trs.rules import NoRewrite, Rule, RuleSet, build_rhs, check_predicate


@dataclass
class RewriteStats:
    rewrites: int = 0
    fired: Counter = field(default_factory=Counter)
    not_decreasing: Counter = field(default_factory=Counter)
    rhs_errors: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    trace: list[tuple[str, str, str]] = field(default_factory=list)


class Rewriter:
    def __init__(self, rules: RuleSet, cost: Callable[[Term], tuple] = default_cost,
                 bounds: Callable[[Term], tuple[int, int]] = default_bounds, trace: bool | str = False,
                 streams: Optional[Streams] = None) -> None:
        # trace: True records (rule, before, after) per rewrite; "names" only the rule names
        self.rules, self.cost, self.bounds, self.trace = rules, cost, bounds, trace
        self.streams = streams  # the leaves' stream facts, for `stream(...)` predicates
        self.stats = RewriteStats()
        self._memo: dict[Term, Term] = {}
        self._compiled = rules.compiled()  # matchers indexed by (root op, type): pitchfork/trs/compiled.py

    def rewrite(self, term: Term) -> Term:
        t0 = time.perf_counter()
        # Python's cyclic collector is paused while rewriting: terms are acyclic (reference counting frees
        # them) and the interned-term table only grows, so each full collection during a big rewrite
        # would rescan every term made so far (a 640-term sum took 9.4x an 80-term one with it, 8.0x
        # without). Re-enabled on the way out only if it was on (nested or concurrent rewrites).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._go(term)
        finally:
            if collecting:
                gc.enable()
            self.stats.seconds += time.perf_counter() - t0

    def _go(self, root: Term) -> Term:
        """Post-order rewriting on an explicit stack (terms 10,000 deep are fine), visiting the nodes
        and consulting the memo in exactly the order of the recursive definition:

            visit(t) = memo[t] if known, else: args = [visit(a) for a in t.args]; cur = t over args;
                       best = self._best(cur); result = visit(best) if best else cur;
                       memo[t] = memo[result] = result

        (It was that recursion run by fpir.trampoline, one generator per node; this loop does the same
        without creating and resuming them.)"""
        memo = self._memo
        get = memo.get
        hit = get(root)
        if hit is not None:
            return hit
        # a frame: [term, its rewritten arguments so far, whether it waits for the frame above it: the
        # rewrite of its rewrite, whose result is then its own]
        stack: list[list] = [[root, [], False]]
        while True:
            frame = stack[-1]
            t, args = frame[0], frame[1]
            targs = t.args
            n = len(args)
            if n < len(targs):
                a = targs[n]
                hit = get(a)
                if hit is not None:
                    args.append(hit)
                else:
                    stack.append([a, [], False])
                continue
            cur = _rebuild(t, args) if any(map(is_not, args, targs)) else t
            best = self._best(cur)
            if best is None:
                result = cur
            else:
                hit = get(best)
                if hit is None:
                    frame[2] = True
                    stack.append([best, [], False])
                    continue
                result = hit
            while True:  # t's result is known: record it, hand it to the frames waiting for it
                memo[t] = result
                memo[result] = result
                stack.pop()
                if not stack:
                    return result
                parent = stack[-1]
                if not parent[2]:
                    parent[1].append(result)
                    break
                t = parent[0]

    def _best(self, t: Term) -> Optional[Term]:
        candidates = self._compiled.candidates_for(t)  # rows whose operand ops fit t's (same matches)
        if not candidates:
            return None
        # the node's own cost is asked for only once some right side is built (lazily): at most nodes
        # no candidate survives its matcher, predicate and typing, and the cost is a pure function of
        # the interned term, so when it is computed does not change any result
        here: Optional[tuple] = None
        best: Optional[tuple[tuple, Term, Rule]] = None
        bounds, streams, ttype = self.bounds, self.streams, t.type
        for rule, _pattern, matcher, pred in candidates:
            for terms, types in matcher(t, {}, {}):
                if pred is not None:
                    if not pred(terms, types, bounds, streams):
                        continue
                    b = Bindings(terms, types)  # only for a match whose predicate holds
                else:
                    b = Bindings(terms, types)
                    if not check_predicate(rule, b, bounds, streams):
                        continue
                try:
                    rhs = build_rhs(rule, b, bounds, ttype)
                except (NoRewrite, FPIRTypeError) as e:
                    self.stats.rhs_errors[rule.name] += 1
                    continue
                if rhs.type is not ttype and rhs.type != ttype:
                    self.stats.rhs_errors[rule.name] += 1
                    continue
                c = self.cost(rhs)
                if here is None:
                    here = self.cost(t)
                if c >= here:
                    self.stats.not_decreasing[rule.name] += 1
                    continue
                if best is None or c < best[0]:
                    best = (c, rhs, rule)
        if best is None:
            return None
        self.stats.rewrites += 1
        self.stats.fired[best[2].name] += 1
        if self.trace == "names":  # the rules fired, in order, without printing the terms
            self.stats.trace.append((best[2].name, "", ""))
        elif self.trace:
            self.stats.trace.append((best[2].name, str(t), str(best[1])))
        return best[1]


def _rebuild(t: Term, args: list[Term]) -> Term:
    """t over rewritten arguments. Flags are kept: the arguments have the same values, so the facts
    about them still hold."""
    s = spec(t.op)
    return make(t.op, *args, type=t.type if s.explicit_type else None, flags=t.attrs)
