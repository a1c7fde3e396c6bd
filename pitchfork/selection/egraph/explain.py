"""`pitchfork lift --engine egraph --explain`: an ordered derivation of the result from the input.

egglog records no proofs through the Python bindings (its proof mode is not enabled there), and the
lifting pass adds its unions from Python anyway. So the derivation is reconstructed after the fact,
on concrete terms, guided by the final e-graph (`EGraphView`: every e-class with its e-nodes, and a
hash-cons from e-node to e-class):

* `derive(src, dst)` for two terms of one e-class: if their roots are the same node over children of
  the same e-classes, the children are derived pairwise (congruence: each child's steps act at that
  child's position); otherwise a breadth-first search from `src` applies one move at a time near the
  root until the root is `dst`'s node over `dst`'s child classes, then continues by congruence.
* a move is one rule of a rule file applied at one position (rules/egraph/algebra.rules, in the
  direction the file writes it), a lifting by the greedy TRS (rules/lift/ and rules/egraph/
  bounded.rules, expanded into its single rule steps), or dropping a flag (a flagged node equals its
  plain twin, declare.py). A move is kept only when the new term is still in the e-graph (every node
  of it is an e-node of the root's class or below it): the search walks the e-graph's own terms.
* the derivation runs input -> (shift constants normalised) -> ... -> extracted term -> ... -> result,
  the last part being the greedy TRS's steps on the extracted term, one rule application each.

Every step names one rule and a position, and `replay(step)` re-applies that rule there and checks it
gives the step's result (tests also check each step's two terms equal by the interpreter or Z3). When
the search finds no derivation within its limits, the explanation says so instead of inventing one.

Invariant: a `Derivation` is a chain (each step's `before` is the previous step's `after`), each step
is one application of the named rule at the named position, and `complete` is True only when the chain
runs from the input to the result.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Optional

from fpir.ops import make
from fpir.opspec import spec
from fpir.term import Term
from fpir.types import FPIRTypeError
from pitchfork.selection.bounds import bounds as default_bounds
from pitchfork.selection.cost import cost
from pitchfork.selection.egraph.view import EGraphView
from pitchfork.trs.pattern import Bindings
from pitchfork.trs.rules import NoRewrite, Rule, RuleSet, build_rhs, check_predicate, load_rule_file

Path_ = tuple[int, ...]

#: pseudo-rules (not in a rule file): each names the function that makes the step and is replayed by it
NORMALIZE = "normalize_shift_constants"  # pitchfork/selection/greedy.py
DROP_FLAGS = "drop_flags"  # a flagged node equals its plain twin (declare.py: the encoder unions them)

@dataclass(frozen=True)
class Limits:
    """Limits of one best-first search near a root: steps deep, terms visited, terms with the target's
    root over its child classes tried before giving up, and how deep below the root a move may act."""

    steps: int
    visited: int
    goals: int
    depth: int


#: the search's limits, tried in order: the first finds most derivations quickly (the rule files' left
#: sides look at most three levels down); the wider one those whose algebra acts a level deeper and
#: takes more steps (the variant suite's bench_keys spellings of add and softmax, a constant factored
#: out of a product under a rounding shift, need depth 4; mul's two factored zero points 16 steps)
LIMITS = (Limits(steps=10, visited=3000, goals=12, depth=3), Limits(steps=16, visited=12000, goals=12, depth=4))


@dataclass(frozen=True)
class Step:
    rule: str  # a rule name of a rule file, or NORMALIZE / DROP_FLAGS
    source: str  # the rule's file:line, or the function that makes the step
    path: Path_  # argument indices from the root to where the rule acts
    before: Term  # the whole term before the step
    after: Term  # the whole term after it


@dataclass(frozen=True)
class Derivation:
    steps: tuple[Step, ...]
    start: Term
    end: Term
    complete: bool
    note: str = ""


def subterm(t: Term, path: Path_) -> Term:
    for i in path:
        t = t.args[i]
    return t


def replace_at(t: Term, path: Path_, new: Term) -> Term:
    """`t` with the sub-term at `path` replaced by `new` (parents rebuilt, flags kept)."""
    if not path:
        return new
    args = list(t.args)
    args[path[0]] = replace_at(args[path[0]], path[1:], new)
    return make(t.op, *args, type=t.type if spec(t.op).explicit_type else None, flags=t.attrs)


def positions(t: Term, depth: int, path: Path_ = ()) -> Iterator[tuple[Path_, Term]]:
    """(path, sub-term) of `t` down to `depth` levels, root first."""
    yield path, t
    if depth > 0:
        for i, a in enumerate(t.args):
            if a.args:
                yield from positions(a, depth - 1, path + (i,))


def _postorder(t: Term, path: Path_ = ()) -> Iterator[tuple[Path_, Term]]:
    for i, a in enumerate(t.args):
        yield from _postorder(a, path + (i,))
    yield path, t


def rule_results(rs: RuleSet, t: Term) -> list[tuple[Rule, Term]]:
    """Every (rule, right side) of `rs` matching `t` at its root with its predicate holding."""
    out: list[tuple[Rule, Term]] = []
    for rule, _p, matcher, pred in rs.compiled().candidates(t.op, t.type):
        for terms, types in matcher(t, {}, {}):
            b = Bindings(terms, types)
            ok = pred(terms, types, default_bounds, None) if pred is not None else check_predicate(rule, b, default_bounds)
            if not ok:
                continue
            try:
                rhs = build_rhs(rule, b, default_bounds, t.type)
            except (NoRewrite, FPIRTypeError):
                continue
            if rhs.type == t.type:
                out.append((rule, rhs))
    return out


def lifting_steps(rs: RuleSet, t: Term, root_first: bool = False, limit: int = 200) -> list[tuple[Rule, Path_, Term]]:
    """The greedy TRS's lifting of `t` one rule application at a time: at the first position (post-order,
    or the root first with `root_first`) where a rule strictly lowers the cost, the cheapest such rule
    (as pitchfork/trs/rewriter.py chooses), until none does. (rule, path, whole term after) per step."""
    steps: list[tuple[Rule, Path_, Term]] = []
    cur = t
    first = root_first
    for _ in range(limit):
        order = ([((), cur)] if first else []) + list(_postorder(cur))
        first = False
        for path, sub in order:
            here = cost(sub)
            cands = [(cost(r), i, rule, r) for i, (rule, r) in enumerate(rule_results(rs, sub))]
            cands = [c for c in cands if c[0] < here]
            if cands:
                _, _, rule, r = min(cands, key=lambda c: (c[0], c[1]))
                try:
                    cur = replace_at(cur, path, r)
                except FPIRTypeError:
                    return steps
                steps.append((rule, path, cur))
                break
        else:
            return steps
    return steps


def _loc(rule: Rule) -> str:
    """file:line of a rule, relative to the repository root when under it."""
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[3]) + "/"
    loc = rule.location
    return loc[len(root):] if loc.startswith(root) else loc


#: one step inside a move: (rule name, where the rule is written, path within the moved sub-term, the
#: sub-term after it)
Inner = tuple[str, str, Path_, Term]
#: one step of a derivation: (rule name, where it is written, path in the whole term, whole term after)
Whole = tuple[str, str, Path_, Term]


class Explainer:
    """Derivations within one e-graph (`view`) from the algebra rules and the lifting rule sets."""

    def __init__(self, view: EGraphView, algebra: RuleSet, lifting: list[RuleSet], limits: Limits = LIMITS[0]) -> None:
        self.view, self.algebra, self.lifting, self.limits = view, algebra, lifting, limits
        self.memo: dict = {}
        self._moves: dict[Term, list[tuple[list[Inner], Term]]] = {}
        self._derived: dict[tuple[Term, Term], Optional[list[Whole]]] = {}

    def cls(self, t: Term) -> Optional[int]:
        return self.view.class_of(t, self.memo)

    def moves_at(self, sub: Term) -> list[tuple[list[Inner], Term]]:
        """Moves acting on `sub` (at its root, or for a lifting anywhere in it): (steps, new sub-term)."""
        hit = self._moves.get(sub)
        if hit is not None:
            return hit
        out: list[tuple[list[Inner], Term]] = []
        for rule, r in rule_results(self.algebra, sub):
            out.append(([(rule.name, _loc(rule), (), r)], r))
        for rs in self.lifting:
            here = cost(sub)
            for rule, r in rule_results(rs, sub):  # one lifting step at the root, children as they are
                if cost(r) < here:
                    out.append(([(rule.name, _loc(rule), (), r)], r))
                    # ... then the greedy TRS on its result, as the lifting pass does with a term that
                    # follows a sketch (engine.py `_lift_pass`): only the end of that is unioned into
                    # the e-graph, so the step at the root alone may leave it
                    rest = lifting_steps(rs, r)
                    if rest:
                        out.append(([(rule.name, _loc(rule), (), r)]
                                    + [(rule2.name, _loc(rule2), p, after) for rule2, p, after in rest], rest[-1][2]))
            for root_first in (False, True):
                steps = lifting_steps(rs, sub, root_first)
                if steps:
                    out.append(([(rule.name, _loc(rule), p, after) for rule, p, after in steps], steps[-1][2]))
        seen: set[Term] = set()
        out = [m for m in out if not (m[1] in seen or seen.add(m[1]))]  # type: ignore[func-returns-value]
        if sub.attrs:
            plain = make(sub.op, *sub.args, type=sub.type if spec(sub.op).explicit_type else None)
            out.append(([(DROP_FLAGS, "pitchfork/selection/egraph/declare.py", (), plain)], plain))
        self._moves[sub] = out
        return out

    def _goal(self, t: Term, dst: Term) -> bool:
        if t is dst:
            return True
        return (t.op == dst.op and t.type == dst.type and t.attrs == dst.attrs and len(t.args) == len(dst.args)
                and bool(t.args) and all(self.cls(a) == self.cls(b) for a, b in zip(t.args, dst.args)))

    def derive(self, src: Term, dst: Term) -> Optional[list[Whole]]:
        """Steps from `src` to `dst` (both of one e-class), or None when none is found within the limits.
        A term the search reaches with `dst`'s root over `dst`'s child classes may still have a child
        that no forward move turns into `dst`'s (a lifted form where `dst` keeps the unlifted one):
        then the search goes on to its next such term, up to `limits.goals` of them."""
        if src is dst:
            return []
        key = (src, dst)
        if key in self._derived:
            return self._derived[key]
        self._derived[key] = None  # a derivation that needs itself is not one
        got = self._congruence(src, dst) if self._goal(src, dst) else None
        if got is None:
            for n, (head, mid) in enumerate(self._search(src, dst)):
                if n >= self.limits.goals:
                    break
                rest = self._congruence(mid, dst)
                if rest is not None:
                    got = head + rest
                    break
        self._derived[key] = got
        return got

    def _congruence(self, src: Term, dst: Term) -> Optional[list[Whole]]:
        """Steps from `src` to `dst`, same root node, child by child."""
        if src is dst:
            return []
        steps: list[Whole] = []
        cur = src
        for i, (a, b) in enumerate(zip(src.args, dst.args)):
            sub = self.derive(a, b)
            if sub is None:
                return None
            for rule, where, p, after in sub:
                cur = replace_at(cur, (i,), after)  # `after` is the whole child after the step
                steps.append((rule, where, (i,) + p, cur))
        return steps if cur is dst else None

    def _search(self, src: Term, dst: Term) -> Iterator[tuple[list[Whole], Term]]:
        """Best-first from `src` to a term whose root is `dst`'s node over `dst`'s child classes: terms
        ordered by steps so far plus the number of their distinct sub-terms whose e-class no sub-term of
        `dst` has (those must all go; a heuristic, not a bound: a shortest derivation is not promised)."""
        target = self.cls(dst)
        wanted = {self.cls(x) for x in dst.walk()}

        def h(t: Term) -> int:
            return sum(1 for x in t.walk() if self.cls(x) not in wanted)

        parent: dict[Term, Optional[tuple[Term, list[Whole]]]] = {src: None}
        tick = 0
        heap: list[tuple[int, int, int, int, Term]] = [(h(src), h(src), tick, 0, src)]
        while heap:
            _, _, _, d, t = heapq.heappop(heap)
            if d >= self.limits.steps:
                continue
            for path, sub in positions(t, self.limits.depth):
                for inner, new_sub in self.moves_at(sub):
                    try:
                        new = replace_at(t, path, new_sub)
                        if new in parent or self.cls(new) != target:
                            continue
                        whole = [(rule, where, path + p, replace_at(t, path, after)) for rule, where, p, after in inner]
                    except FPIRTypeError:
                        continue
                    parent[new] = (t, whole)
                    if self._goal(new, dst):
                        chain: list[Whole] = []
                        x = new
                        while True:
                            link = parent[x]
                            if link is None:
                                break
                            chain = link[1] + chain
                            x = link[0]
                        yield chain, new
                    if len(parent) > self.limits.visited:
                        return
                    tick += 1
                    hn = h(new)
                    heapq.heappush(heap, (d + 1 + hn, hn, tick, d + 1, new))


@lru_cache(maxsize=None)
def _single(name: str) -> RuleSet:
    return RuleSet([rule_registry()[name]])


@lru_cache(maxsize=1)
def _algebra_rules() -> RuleSet:
    from pitchfork.selection.egraph.engine import ALGEBRA_FILE

    return RuleSet(load_rule_file(ALGEBRA_FILE))


def replay(step: Step) -> str:
    """'' when applying `step.rule` at `step.path` of `step.before` gives `step.after`, else why not."""
    from pitchfork.selection.greedy import normalize_shift_constants

    if step.rule == NORMALIZE:
        return "" if normalize_shift_constants(step.before) is step.after else "normalisation gives another term"
    try:
        sub = subterm(step.before, step.path)
    except IndexError:
        return f"no sub-term at {list(step.path)}"
    if step.rule == DROP_FLAGS:
        if not sub.attrs:
            return "no flag to drop"
        plain = make(sub.op, *sub.args, type=sub.type if spec(sub.op).explicit_type else None)
        return "" if replace_at(step.before, step.path, plain) is step.after else "dropping the flags gives another term"
    if step.rule not in rule_registry():
        return f"no rule named {step.rule!r}"
    for _rule, r in rule_results(_single(step.rule), sub):
        try:
            if replace_at(step.before, step.path, r) is step.after:
                return ""
        except FPIRTypeError:
            continue
    return f"{step.rule} at {list(step.path)} does not give the step's term"


def _steps(items: list[Whole], start: Term, back: dict) -> list[Step]:
    from pitchfork.selection.egraph.canon import rename

    out: list[Step] = []
    prev = rename(start, back)
    for rule, where, path, after in items:
        a = rename(after, back)
        out.append(Step(rule, where, path, prev, a))
        prev = a
    return out


def explain_derivation(term: Term, lift_rs: Optional[RuleSet] = None, budget: Any = None) -> tuple[Any, Derivation]:
    """The engine's result for `term` and an ordered derivation of it from `term` (module docstring)."""
    from pitchfork.selection.egraph.canon import canonical, rename
    from pitchfork.selection.egraph.engine import Budget, lift_egraph, pass_rules, saturate
    from pitchfork.selection.greedy import lift_rules, lifter, normalize_shift_constants

    rs = lift_rs if lift_rs is not None else lift_rules()
    budget = budget if budget is not None else Budget()
    res = lift_egraph(term, rs, budget)
    norm = normalize_shift_constants(term)
    head = [] if norm is term else [Step(NORMALIZE, "pitchfork/selection/greedy.py", (), term, norm)]
    greedy_tail = lambda start: [(r.name, _loc(r), p, a) for r, p, a in lifting_steps(rs, start)]  # noqa: E731
    if res.source != "egraph":
        steps = head + _steps(greedy_tail(norm), norm, {})
        end = steps[-1].after if steps else norm
        note = "" if end is res.term else "the greedy TRS's own order of rewrites ends elsewhere"
        return res, Derivation(tuple(steps), term, end, end is res.term, note)
    canon, back = canonical(norm)
    seed = None
    if budget.seed:
        lw = lifter(rs)
        lw.rewrite(canon)
        seed = [(t, lw._memo[t]) for t in canon.walk() if t.args and lw._memo.get(t, t) is not t]
    captured: list = []
    extracted, _ = saturate(canon, rs, budget, seed, captured)
    middle = None
    for limits in LIMITS:  # the wider search only when the first finds nothing
        middle = Explainer(captured[0], _algebra_rules(), [pass_rules(rs), rs], limits).derive(canon, extracted)
        if middle is not None:
            break
    if middle is None:
        return res, Derivation(tuple(head), term, norm, False,
                               f"no derivation of the extracted term {rename(extracted, back)} found within the "
                               f"search limits ({limits.steps} steps, moves down to depth {limits.depth}, "
                               f"{limits.visited} terms)")
    tail = greedy_tail(extracted)
    steps = head + _steps(middle + tail, canon, back)
    end = steps[-1].after if steps else norm
    note = "" if end is res.term else f"the steps end at {end}, the engine's result is {res.term}"
    return res, Derivation(tuple(steps), term, end, end is res.term, note)


def format_derivation(d: Derivation, extracted: Optional[Term] = None) -> list[str]:
    """The derivation as lines: the input, then one numbered line per step naming its rule, its file and
    where it acts, and the whole term after it."""
    from fpir.printer import to_text

    lines = [f"derivation ({len(d.steps)} steps{'' if d.complete else ', INCOMPLETE'}):", f"   input: {to_text(d.start)}"]
    for i, s in enumerate(d.steps, 1):
        at = "root" if not s.path else "arg " + ".".join(str(p) for p in s.path)
        lines.append(f"  {i:>3}. {s.rule} [{s.source}] at {at}:")
        lines.append(f"       {to_text(s.after)}")
        if extracted is not None and s.after is extracted:
            lines.append("       (the extracted term)")
    if d.note:
        lines.append(f"   note: {d.note}")
    return lines


@lru_cache(maxsize=1)
def rule_registry() -> dict[str, Rule]:
    """Every rule a derivation may name, by name: rules/egraph/*.rules and the lifting rules."""
    from pitchfork.selection.egraph.engine import ALGEBRA_FILE, BOUNDED_FILE
    from pitchfork.selection.greedy import lift_rules

    reg: dict[str, Rule] = {}
    for r in list(load_rule_file(ALGEBRA_FILE)) + list(load_rule_file(BOUNDED_FILE)) + list(lift_rules().rules):
        reg.setdefault(r.name, r)
    return reg
