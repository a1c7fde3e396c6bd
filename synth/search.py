"""Lowest-cost-first enumerative synthesis with concrete-example pruning and CEGIS (Z3).

`synthesize(lhs, grammar, bound)` looks for a term equal to `lhs` (for all inputs) that is strictly
cheaper than `bound` under the grammar's cost. Terms are enumerated bottom-up by cost level (the
grammar's per-node level: input bits / 8 for the target-agnostic lifting cost, instructions for a
target), so the first proven candidate is a cheapest one the grammar can express. Every enumerated
term is evaluated on a cached set of example inputs (edge values of each type, then seeded random
values); terms with the same values as a cheaper one are dropped (observational equivalence), and
only a term whose values equal the left side's on every example reaches the solver. A counterexample
from Z3 becomes a new example and enumeration restarts (counterexample-guided inductive synthesis).

Every limit is a count, never a clock: `max_terms` terms built per round, `max_rounds` CEGIS rounds,
`rlimit` Z3 resource units per query. The same inputs give the same answer on any machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
import z3

from fpir.interp import _eval_node, evaluate
from fpir.ops import OPS, make, spec
from fpir.term import Term, const
from fpir.types import FPIRTypeError, ScalarType
from fpir.z3enc import to_z3
from pitchfork.trs.pattern import COMMUTATIVE

N_RANDOM = 40
DEFAULT_RLIMIT = 20_000_000


@dataclass(frozen=True)
class Grammar:
    """Leaves, op forms (op name, explicit result type or None), the cost to beat and its levels."""

    leaves: tuple[Term, ...]
    forms: tuple[tuple[str, Optional[ScalarType]], ...]
    types: frozenset[ScalarType]
    cost: Callable[[Term], tuple]
    node_level: Callable[[str, tuple[ScalarType, ...]], int]
    # level of a whole cost value (the bound): enumeration stops past it
    cost_level: Callable[[tuple], int]
    # an extra condition a candidate must meet besides cost(t) < bound (None: none)
    also: Optional[Callable[[Term], bool]] = None

    def better(self, t: Term, bound: tuple) -> bool:
        return self.cost(t) < bound and (self.also is None or self.also(t))


@dataclass(frozen=True)
class SearchResult:
    status: str  # "found" | "exhausted" (nothing cheaper in the grammar) | "budget" | "solver"
    rhs: Optional[Term] = None
    terms: int = 0
    solver_calls: int = 0
    rounds: int = 0
    detail: str = ""


# ---------------------------------------------------------------------------------------------
# Examples


def _edges(t: ScalarType) -> list[int]:
    if t.bits == 1:
        return [0, 1]
    vals = [0, 1, 2, t.max, t.max - 1, t.min, t.min + 1, t.max // 2, t.max // 2 + 1, 3, 7, 8, 16]
    if t.signed:
        vals += [-1, -2, t.min // 2, -3]
    return [v for v in dict.fromkeys(vals) if t.contains(v)]


@lru_cache(maxsize=4096)
def base_examples(names_types: tuple[tuple[str, ScalarType], ...]) -> tuple[tuple[int, ...], ...]:
    """Example input rows (one value per variable): each variable walks its edge values while the
    others take rotated ones, then seeded random rows. Cached per variable list."""
    rng = random.Random(hash(tuple((n, t.name) for n, t in names_types)) & 0xFFFFFFFF)
    rng.seed(",".join(f"{n}:{t.name}" for n, t in names_types))
    edges = [_edges(t) for _, t in names_types]
    rows: list[tuple[int, ...]] = []
    longest = max((len(e) for e in edges), default=0)
    for i in range(longest):
        rows.append(tuple(e[(i + 3 * k) % len(e)] for k, e in enumerate(edges)))
        rows.append(tuple(e[(i * (k + 1)) % len(e)] for k, e in enumerate(edges)))
    for _ in range(N_RANDOM):
        row = []
        for _, t in names_types:
            if rng.random() < 0.5 and t.bits > 8:  # small magnitudes matter for bounds and shifts
                row.append(max(t.min, min(t.max, rng.randint(-300, 300))))
            else:
                row.append(rng.randint(t.min, t.max))
        rows.append(tuple(row))
    return tuple(dict.fromkeys(rows))


def _env(vars_: Sequence[Term], rows: Sequence[tuple[int, ...]]) -> dict[str, np.ndarray]:
    return {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}


def _sig(t: ScalarType, values: np.ndarray, n: int) -> tuple:
    v = np.broadcast_to(np.asarray(values), (n,))
    return (t, tuple(int(x) for x in v)) if v.dtype == object else (t, v.astype(t.np_dtype).tobytes())


# ---------------------------------------------------------------------------------------------
# Solver


def prove_equal(lhs: Term, rhs: Term, rlimit: int = DEFAULT_RLIMIT) -> tuple[str, dict[str, int]]:
    """("VALID", {}), ("INVALID", counterexample) or ("UNKNOWN", {}) when the rlimit runs out."""
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.add(to_z3(lhs) != to_z3(rhs))
    r = s.check()
    if r == z3.unsat:
        return "VALID", {}
    if r != z3.sat:
        return "UNKNOWN", {}
    m = s.model()
    cex = {}
    for v in lhs.variables():
        val = m.eval(z3.BitVec(v.name, v.type.bits), model_completion=True).as_long()
        cex[v.name] = v.type.wrap(val)
    return "INVALID", cex


# ---------------------------------------------------------------------------------------------
# Enumeration


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class _Budget(Exception):
    pass


class _Found(Exception):
    def __init__(self, term: Term) -> None:
        self.term = term


@dataclass
class _Round:
    grammar: Grammar
    lhs: Term
    bound: tuple
    rows: list[tuple[int, ...]]
    max_terms: int
    rlimit: int
    terms: int = 0
    solver_calls: int = 0
    unknown: int = 0
    cex: Optional[dict[str, int]] = None
    bank: dict[tuple[int, ScalarType], list[tuple[Term, np.ndarray]]] = field(default_factory=dict)
    sigs: set = field(default_factory=set)
    rules: dict[tuple[str, Optional[ScalarType], tuple[ScalarType, ...]], Optional[ScalarType]] = field(
        default_factory=dict
    )

    def run(self) -> Optional[Term]:
        g = self.grammar
        self.vars = sorted({v for v in self.lhs.variables()}, key=lambda v: v.name)
        self.n = len(self.rows)
        self.env = _env(self.vars, self.rows)
        with np.errstate(all="ignore"):
            self.target = _sig(self.lhs.type, evaluate(self.lhs, self.env), self.n)
            max_level = g.cost_level(self.bound)
            try:
                for level in range(max_level + 1):
                    self._level(level)
            except _Found as f:
                return f.term
        return None

    def _add(self, t: Term, values: np.ndarray, level: int) -> None:
        self.terms += 1
        if self.terms > self.max_terms:
            raise _Budget()
        s = _sig(t.type, values, self.n)
        if s in self.sigs:
            return
        self.sigs.add(s)
        self.bank.setdefault((level, t.type), []).append((t, values))
        if s == self.target and t.args and self.grammar.better(t, self.bound):
            self.solver_calls += 1
            verdict, cex = prove_equal(self.lhs, t, self.rlimit)
            if verdict == "VALID":
                raise _Found(t)
            if verdict == "INVALID":
                self.cex = cex
                raise _Budget()  # restart with the new example (caught by the CEGIS loop)
            self.unknown += 1

    def _result_type(
        self, op: str, rtype: Optional[ScalarType], ts: tuple[ScalarType, ...]
    ) -> Optional[ScalarType]:
        key = (op, rtype, ts)
        if key not in self.rules:
            try:
                r = spec(op).type_rule(list(ts), rtype)
                if rtype is not None and spec(op).explicit_type:
                    r = rtype
                self.rules[key] = r if r in self.grammar.types else None
            except (FPIRTypeError, ValueError, KeyError):
                self.rules[key] = None
        return self.rules[key]

    def _build(
        self, op: str, rtype: Optional[ScalarType], args: Sequence[tuple[Term, np.ndarray]], level: int
    ) -> None:
        if all(a.is_const for a, _ in args):
            return  # folds to a constant (casts and reinterprets of one too): the leaves hold the useful ones
        if op in ("reinterpret", "cast") and args[0][0].op in ("reinterpret", "cast"):
            return  # a cast of a cast: one cast (or none) says the same
        if op.startswith("extending_") and any(a.is_const for a, _ in args):
            return  # x * widen(c) is x * c: only the cost model's input widths would prefer it
        if op in ("mul", "widening_mul", "extending_mul") and any(
            a.is_const and _pow2(a.value) for a, _ in args
        ):
            return  # the TRS's canonical form of a power-of-two multiply is a shift (shl_of_mul_pow2)
        try:
            t = make(op, *[a for a, _ in args], type=rtype, fold=False)
        except FPIRTypeError:
            return
        if t is args[0][0] and len(args) == 1:
            return
        try:
            v = _eval_node(t, [a[1] for a in args], {})
        except (FPIRTypeError, ValueError, ZeroDivisionError, OverflowError):
            return
        self._add(t, v, level)

    def _level(self, level: int) -> None:
        g = self.grammar
        if level == 0:
            for leaf in g.leaves:
                v = self.env[leaf.name] if leaf.is_var else _eval_node(leaf, [], {})
                self._add(leaf, np.broadcast_to(np.asarray(v), (self.n,)), 0)
        for op, rtype in g.forms:
            # keys per form: a level-0 op (reinterpret, for targets) applies to this level's new terms
            keys = list(self.bank.keys())
            s = OPS[op]
            if s.arity == 1:
                for la, ta in keys:
                    rt = self._result_type(op, rtype, (ta,))
                    if rt is None:
                        continue
                    if la + g.node_level(op, (ta,)) != level:
                        continue
                    for a in list(self.bank[(la, ta)]):
                        self._build(op, rtype, [a], level)
            elif s.arity == 2:
                for la, ta in keys:
                    for lb, tb in keys:
                        if op in COMMUTATIVE and (la, ta.name) > (lb, tb.name):
                            continue
                        rt = self._result_type(op, rtype, (ta, tb))
                        if rt is None or la + lb + g.node_level(op, (ta, tb)) != level:
                            continue
                        same = op in COMMUTATIVE and (la, ta) == (lb, tb)
                        bank_a, bank_b = list(self.bank[(la, ta)]), list(self.bank[(lb, tb)])
                        for i, a in enumerate(bank_a):
                            for b in (bank_b[i:] if same else bank_b):
                                self._build(op, rtype, [a, b], level)
            elif s.arity == 3:
                for la, ta in keys:
                    for lb, tb in keys:
                        for lc, tc in keys:
                            rt = self._result_type(op, rtype, (ta, tb, tc))
                            if rt is None or la + lb + lc + g.node_level(op, (ta, tb, tc)) != level:
                                continue
                            for a in list(self.bank[(la, ta)]):
                                for b in list(self.bank[(lb, tb)]):
                                    for c in list(self.bank[(lc, tc)]):
                                        self._build(op, rtype, [a, b, c], level)


def synthesize(
    lhs: Term,
    grammar: Grammar,
    bound: tuple,
    max_terms: int = 60_000,
    max_rounds: int = 8,
    rlimit: int = DEFAULT_RLIMIT,
    extra_rows: Iterable[tuple[int, ...]] = (),
) -> SearchResult:
    """A term equal to lhs, cheaper than `bound`, or why there is none (see module doc)."""
    vars_ = sorted({v for v in lhs.variables()}, key=lambda v: v.name)
    rows = list(base_examples(tuple((v.name, v.type) for v in vars_))) + list(extra_rows)
    terms = calls = 0
    for rnd in range(1, max_rounds + 1):
        r = _Round(grammar, lhs, bound, rows, max_terms, rlimit)
        try:
            found = r.run()
        except _Budget:
            found = None
        terms += r.terms
        calls += r.solver_calls
        if found is not None:
            return SearchResult("found", polish(found), terms, calls, rnd)
        if r.cex is not None:
            rows.append(tuple(r.cex.get(v.name, 0) for v in vars_))
            continue
        if r.terms > max_terms:
            return SearchResult("budget", None, terms, calls, rnd, f"more than {max_terms} terms")
        if r.unknown:
            return SearchResult("solver", None, terms, calls, rnd, f"{r.unknown} candidate(s) beyond rlimit")
        return SearchResult("exhausted", None, terms, calls, rnd)
    return SearchResult("budget", None, terms, calls, max_rounds, f"{max_rounds} CEGIS rounds")


def polish(t: Term) -> Term:
    """Same-width casts become reinterprets (same bits; rank 0 instead of 1 in the lifting cost)."""
    args = [polish(a) for a in t.args]
    if t.op == "cast" and args[0].type.bits == t.type.bits:
        return make("reinterpret", args[0], type=t.type)
    if all(a is b for a, b in zip(args, t.args)):
        return t
    return make(t.op, *args, type=t.type if spec(t.op).explicit_type else None, fold=False)


# ---------------------------------------------------------------------------------------------
# Grammars


def constant_leaves(lhs: Term, types: Iterable[ScalarType]) -> list[Term]:
    """The left side's constants and values derived from them (log2 of a power of two, 2^c), at every
    type of the grammar that holds them; 0 and 1 only when the left side has no constant (few
    leaves keep the search small: every right side of a rule is over the left side's constants)."""
    values: set[int] = set()
    for t in lhs.walk():
        if t.is_const:
            c = t.value
            values.add(c)
            if c > 0 and c & (c - 1) == 0:
                values.add(c.bit_length() - 1)
            if 0 <= c < 16:
                values.add(1 << c)
    if not values:
        values = {0, 1}
    out = []
    for ty in sorted(types, key=lambda x: (x.bits, x.signed)):
        for v in sorted(values):
            if ty.contains(v) and ty.bits > 1:
                out.append(const(v, ty))
    return out


def lhs_types(lhs: Term) -> set[ScalarType]:
    return {t.type for t in lhs.walk()}
