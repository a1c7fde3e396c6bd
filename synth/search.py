"""Lowest-cost-first enumerative synthesis with concrete-example pruning and CEGIS (Z3).

`synthesize(lhs, grammar, bound)` looks for a term equal to `lhs` (for all inputs) that is strictly
cheaper than `bound` under the grammar's cost. Terms are enumerated bottom-up by cost level (the
grammar's per-node level: input bits / 8 for the target-agnostic lifting cost, instructions for a
target) in a term bank (synth/bank.py): all candidates of a level are evaluated at once with numpy
on a cached set of example inputs (edge values of each type, then seeded random values), only one
term per fingerprint of values is kept as a child for higher levels (observational equivalence),
and only candidates whose values equal the left side's on every example reach the solver, cheapest
first, so the first proven candidate is a cheapest one the grammar can express. A counterexample
from Z3 becomes a new example and the search restarts (counterexample-guided inductive synthesis).
Banks are shared by left sides with the same grammar and examples.

Every limit is a count, never a clock: `max_terms` argument combinations over the levels searched,
`max_rounds` CEGIS rounds, `rlimit` Z3 resource units per query, and, for a task with a work cap,
the task's total of Z3 units and candidates evaluated (synth/meter.py). The same inputs give the same
answer on any machine.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from typing import Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
import z3

from fpir.interp import evaluate
from fpir.ops import make
from fpir.opspec import spec
from fpir.term import Term, const
from fpir.printer import to_text
from fpir.types import FPIRTypeError, ScalarType
from fpir.z3enc import to_z3
from synth import meter
from synth.bank import BudgetExceeded, fast_apply, row_hashes, shared_bank, type_salt

N_RANDOM = 40
DEFAULT_RLIMIT = 20_000_000


@dataclass(frozen=True)
class Grammar:
    """Leaves, op forms (op name, explicit result type or None), the cost to beat and its levels."""

    leaves: tuple[Term, ...]
    forms: tuple[tuple[str, Optional[ScalarType]], ...]
    types: frozenset[ScalarType]
    cost: Callable[[Term], tuple]
    # a node's level: (op, operand types, result type) -> level
    node_level: Callable[[str, tuple[ScalarType, ...], ScalarType], int]
    # level of a whole cost value (the bound): enumeration stops past it
    cost_level: Callable[[tuple], int]
    # an extra condition a candidate must meet besides cost(t) < bound (None: none)
    also: Optional[Callable[[Term], bool]] = None
    # identifies the cost levels (node_level/cost_level) so grammars with equal keys, leaves, forms
    # and types share one bank per process (None: never shared)
    key: Optional[str] = None
    # at most this many operations other than reinterprets in a candidate (None: no limit); the
    # bank prunes bigger terms as it builds them (part of the sharing key)
    max_ops: Optional[int] = None
    # True when the current TRS leaves a candidate as it is (None: not checked). A candidate the
    # rules rewrite further is a composition of the new rule with existing ones (its normal form,
    # cheaper, is a candidate of a lower level): excluded during the search, so no near-duplicate
    # of a found rule (reinterprets moved, a sum reassociated) is ever proposed
    normal: Optional[Callable[[Term], bool]] = None

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
    pruned: int = 0  # candidates of the right values left out as not in normal form
    #: example rows the search learned from counterexamples (beyond the base examples), for a search
    #: that goes on where this one stopped (synth/topdown.py): its decompositions then hold on them too
    learned: tuple[tuple[int, ...], ...] = ()


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


def _env(
    vars_: Sequence[Term], rows: Sequence[tuple[int, ...]], factors: Optional[Mapping[str, int]] = None
) -> dict[str, np.ndarray]:
    """Variable values per example row; with lane factors, a (rows x F) array per variable (F
    consecutive columns of the row: its lanes for one result lane)."""
    if not factors:
        return {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}
    out, col = {}, 0
    for v in vars_:
        f = factors.get(v.name, 1)
        out[v.name] = np.array([r[col : col + f] for r in rows], dtype=v.type.np_dtype).reshape(len(rows), f)
        col += f
    return out


#: the largest lane factor a search handles (rows x factor values per variable in every bank block)
MAX_LANE_FACTOR = 8


class LaneError(ValueError):
    """The left side's lane structure is outside what the search handles."""


def lane_factors(lhs: Term) -> dict[str, int]:
    """Variable -> how many of its lanes make one lane of the left side (1 for lane-wise terms; 4
    under a `vector_reduce_add_x4`). Empty when every factor is 1."""
    out: dict[str, int] = {}

    def visit(t: Term, f: int) -> None:
        if t.is_var:
            if out.setdefault(t.name, f) != f:
                raise LaneError(f"{t.name} is read at lane factors {out[t.name]} and {f}")
            return
        if not t.args:
            return  # a constant: the same in every lane
        s = spec(t.op)
        lanes = s.arg_lanes or (1,) * len(t.args)
        for a, k in zip(t.args, lanes):
            visit(a, f * k)

    visit(lhs, 1)
    if max(out.values(), default=1) > MAX_LANE_FACTOR:
        raise LaneError(f"lane factor {max(out.values())} is above {MAX_LANE_FACTOR}")
    return out if any(f > 1 for f in out.values()) else {}


def lane_names(vars_: Sequence[Term], factors: Mapping[str, int]) -> tuple[tuple[str, ScalarType], ...]:
    """The example columns: a variable's lane 0 is its own name, lane k `name@k` (as fpir.z3enc
    names the lane symbols, so counterexamples map back)."""
    return tuple(
        (v.name if k == 0 else f"{v.name}@{k}", v.type) for v in vars_ for k in range(factors.get(v.name, 1))
    )


# ---------------------------------------------------------------------------------------------
# Solver


def prove_equal(
    lhs: Term, rhs: Term, rlimit: int = DEFAULT_RLIMIT, bounds: Mapping[str, tuple[int, int]] = {}
) -> tuple[str, dict[str, int]]:
    """("VALID", {}), ("INVALID", counterexample) or ("UNKNOWN", {}) when the rlimit runs out.
    `bounds`: variable name -> (lo, hi), assumed (equality is proven only where they hold).
    Lane-combining terms are proven lane by lane (fpir.z3enc.equivalent; the counterexample names
    lane k of x `x@k`); bounds are not supported there.

    Every query runs in a fresh Z3 context (`fpir.z3enc.isolated_solver`), so its verdict and the
    resource units it consumes do not depend on the queries this process ran before; the units are
    charged to the task's meter (synth/meter.py), whose remaining cap also lowers the rlimit."""
    from fpir.z3enc import equivalent, has_lane_ops, isolated_solver, resource_count

    rlimit = meter.solver_limit(rlimit)
    if has_lane_ops(lhs) or has_lane_ops(rhs):
        if bounds:
            return "UNKNOWN", {}
        v = equivalent(lhs, rhs, rlimit=rlimit)
        meter.charge_solver(v.resource)
        if v.status == "VALID":
            return "VALID", {}
        if v.status == "INVALID" and v.counterexample:
            return "INVALID", dict(v.counterexample)
        return "UNKNOWN", {}
    facts = []
    for v in lhs.variables():
        if v.name in bounds:
            lo, hi = bounds[v.name]
            x = z3.BitVec(v.name, v.type.bits)
            bits = v.type.bits
            if v.type.signed:
                facts += [x >= z3.BitVecVal(lo, bits), x <= z3.BitVecVal(hi, bits)]
            else:
                facts += [z3.UGE(x, z3.BitVecVal(lo, bits)), z3.ULE(x, z3.BitVecVal(hi, bits))]
    s, ctx = isolated_solver([*facts, to_z3(lhs) != to_z3(rhs)], rlimit)
    r = s.check()
    meter.charge_solver(resource_count(s))
    if r == z3.unsat:
        return "VALID", {}
    if r != z3.sat:
        if not bounds and _multiplies(lhs) and _multiplies(rhs):
            # bit-blasting two differently built multipliers runs out (HVX `rounding_mul_shr(x_i32,
            # y_i32, 31)` against `vmpyo_rnd_sacc(vmpye(x, y), x, y)`: UNKNOWN at 20M units); the rule
            # verifier's multiplier fallbacks (synth/verify_fallback.py: products as uninterpreted
            # functions, then exact integer arithmetic) prove it in about a second. Sound: VALID only
            # from a proof. Charged the rlimit it was granted (its solvers do not report units).
            from synth.verify_fallback import fallback

            rlimit = meter.solver_limit(rlimit)
            v = fallback(lhs, rhs, (), rlimit)
            meter.charge_solver(rlimit)
            if v is not None and v.status == "VALID":
                return "VALID", {}
        return "UNKNOWN", {}
    m = s.model()
    cex = {}
    for v in lhs.variables():
        val = m.eval(z3.BitVec(v.name, v.type.bits, ctx), model_completion=True).as_long()
        cex[v.name] = v.type.wrap(val)
    return "INVALID", cex


def _multiplies(t: Term) -> bool:
    """Some node of t multiplies two operands (synth.verify_fallback.multiplies, which the rediscovery
    judges' proof, synth/stepwise.py, asks too, so both try the same fallbacks on the same pairs)."""
    from synth.verify_fallback import multiplies

    return multiplies(t)


# ---------------------------------------------------------------------------------------------
# Search over a bank (synth/bank.py)


def _lhs_hash(
    lhs: Term, vars_: Sequence[Term], rows: Sequence[tuple[int, ...]], factors: Optional[Mapping[str, int]] = None
) -> tuple[np.ndarray, int]:
    env = _env(vars_, rows, factors)
    with np.errstate(all="ignore"):
        v = np.asarray(evaluate(lhs, env))
        v = np.broadcast_to(v.reshape(-1) if v.ndim == 2 else v, (len(rows),)).astype(lhs.type.np_dtype)
    return v, int(row_hashes(v.reshape(1, -1), type_salt(lhs.type))[0])


def _same_values(t: Term, target: np.ndarray, env: dict[str, np.ndarray]) -> bool:
    if any(x.args and spec(x.op).reads_lane0 for x in t.walk()) and all(np.ndim(a) == 1 for a in env.values()):
        # lane-wise examples are independent rows, not the lanes of one vector: one lane per row, so
        # an operand read at lane 0 (x86 vpsraw's count) is that row's own value (as the bank computes it)
        env = {k: np.asarray(a).reshape(-1, 1) for k, a in env.items()}
    try:
        with np.errstate(all="ignore"):
            v = np.asarray(evaluate(t, env))
            v = np.broadcast_to(v.reshape(-1) if v.ndim == 2 else v, target.shape)
    except (FPIRTypeError, ValueError, ZeroDivisionError, OverflowError):
        return False
    return bool(np.array_equal(v.astype(target.dtype), target))


def _const_inversions(t: Term) -> int:
    """Constant arguments written before non-constant ones (ties go to the TRS's spelling, constants
    last, as in `umlal(acc, x, 2)`)."""
    n = 0
    for x in t.walk():
        seen_const = 0
        for a in x.args:
            if a.is_const:
                seen_const += 1
            else:
                n += seen_const
    return n


def synthesize(
    lhs: Term,
    grammar: Grammar,
    bound: tuple,
    max_terms: int = 2_000_000,
    max_rounds: int = 8,
    rlimit: int = DEFAULT_RLIMIT,
    extra_rows: Iterable[tuple[int, ...]] = (),
    bounds: Mapping[str, tuple[int, int]] = {},
    instructions_only: Optional[Grammar] = None,
) -> SearchResult:
    """A term equal to lhs, cheaper than `bound`, or why there is none (see module doc).

    `instructions_only`: a second grammar (`instructions_grammar`) searched the same way when the
    levels of `grammar` run over budget and no single instruction does it.

    Levels 0 .. cost_level(bound) of the grammar's bank are searched in order; at each level every
    candidate with the left side's fingerprint that beats the bound is re-checked on the examples
    and sent to Z3, cheapest first. A counterexample becomes an example row and the search restarts
    on the bank for the extended rows. `max_terms` bounds the argument combinations of the levels
    searched (a count, so the answer does not depend on the machine or on bank sharing)."""
    vars_ = sorted({v for v in lhs.variables()}, key=lambda v: v.name)
    try:
        factors = lane_factors(lhs)
    except LaneError as e:
        return SearchResult("budget", None, 0, 0, 0, f"lane structure not searched: {e}")
    if factors and bounds:
        return SearchResult("budget", None, 0, 0, 0, "bounds on inputs of a lane-combining op")
    columns = lane_names(vars_, factors)
    rows = list(base_examples(columns)) + list(extra_rows)
    if bounds:  # examples only where the bounds hold (clamped into them)
        lim = [bounds.get(v.name, (v.type.min, v.type.max)) for v in vars_]
        rows = list(dict.fromkeys(tuple(min(hi, max(lo, x)) for x, (lo, hi) in zip(r, lim)) for r in rows))
    learned = list(extra_rows)  # rows beyond the base examples (handed to the instructions-only search)
    terms = calls = pruned = 0
    max_level = grammar.cost_level(bound)
    for rnd in range(1, max_rounds + 1):
        bank = shared_bank(
            None if grammar.key is None else (grammar.key, grammar.max_ops), grammar, vars_, rows, factors
        )
        target, th = _lhs_hash(lhs, vars_, rows, factors)
        env = _env(vars_, rows, factors)
        cexs: list[tuple[int, ...]] = []
        unknown = 0
        over = False
        charged = 0  # this round's candidates charged to the task's meter (synth/meter.py) so far
        for level in range(max_level + 1):
            top = False
            try:
                bank.ensure(level, max_terms)
                terms = sum(bank.level_count[: level + 1])
                hits = [(bank.candidate_term, i) for i in bank.matches(level, th).tolist()]
            except BudgetExceeded:
                # The whole level is over budget; its candidates of the left side's type alone may
                # not be (only those can be the right side's root): search them, then stop.
                over = True
                done = sum(bank.level_count[:level])
                if done + bank.top_count(level, lhs.type) > max_terms:
                    break
                top = True
                terms = done + bank.top_count(level, lhs.type)
                hits = [(lambda _l, t: t, t) for t in bank.top_matches(level, lhs.type, th)]
            # the logical count (the same whether the bank was shared or built here): deterministic
            meter.charge_steps(terms - charged)
            charged = terms
            found: list[Term] = []
            for get, i in hits:
                try:
                    t = get(level, i)
                except FPIRTypeError:
                    continue
                if t.args and t != lhs and grammar.better(t, bound) and _same_values(t, target, env):
                    if grammar.normal is not None and not grammar.normal(polish(t)):
                        pruned += 1
                        continue
                    found.append(t)
            found = sorted(set(found), key=lambda t: (grammar.cost(t), _const_inversions(t), to_text(t)))
            refute: Optional[tuple[np.ndarray, dict[str, np.ndarray]]] = None  # this level's counterexamples
            for t in found:
                if refute is not None and not _same_values(t, *refute):
                    # a counterexample to a cheaper candidate already tells this one from the left side:
                    # no query (x86 rounding_mul_shr(x_i16, y_i16, 15): ~40 candidates equal to 0 on the
                    # examples, each ~1 s of Z3, spent the whole work cap before)
                    continue
                calls += 1
                verdict, cex = prove_equal(lhs, t, rlimit, bounds)
                if verdict == "VALID":
                    return SearchResult(
                        "found", polish(t), terms, calls, rnd,
                        "the last level, the left side's type alone" if top else "", pruned=pruned,
                    )
                if verdict == "INVALID":
                    row = tuple(cex.get(name, 0) for name, _t in columns)
                    if row not in rows and row not in cexs:
                        cexs.append(row)
                        refute = (_lhs_hash(lhs, vars_, cexs, factors)[0], _env(vars_, cexs, factors))
                else:
                    unknown += 1
            if cexs or top:
                break
        if cexs:
            rows += cexs
            learned += cexs
            continue
        # Instructions the bank does not build: any arity when the levels ran over budget, else only
        # those of more than MAX_BANK_ARITY operands (HVX vmpa, x86 pmaddwd), which "exhausted"
        # would otherwise claim absent.
        min_arity = 1 if over else MAX_BANK_ARITY + 1
        hit, probed = (None, 0) if factors else _single_instructions(
            lhs, grammar, bound, target, env, rlimit, bounds, min_arity,
            MAX_PROBE_TUPLES if over else MAX_WIDE_PROBE_TUPLES,
        )
        calls += probed
        if hit is not None:
            return SearchResult(
                "found", hit, terms, calls, rnd, "one instruction beyond the levels searched", pruned=pruned
            )
        if over and instructions_only is not None:
            # Longer right sides: the same levels over the target's instructions alone (the primitive
            # ops crowd the lower levels of the full grammar: ARM uqrshrn(umull(x, y), 16) is two
            # instructions at level 2, beyond 100,000 terms of the full grammar).
            sub = synthesize(
                lhs, instructions_only, bound, INSTRUCTIONS_BUDGET * max_terms, max_rounds, rlimit, learned, bounds
            )
            if sub.status == "found":
                return SearchResult(
                    "found", sub.rhs, terms + sub.terms, calls + sub.solver_calls, rnd + sub.rounds,
                    "instructions alone, beyond the levels of the full grammar", pruned=pruned + sub.pruned,
                )
            calls += sub.solver_calls
        if over:
            return SearchResult("budget", None, terms, calls, rnd, f"more than {max_terms} terms", pruned=pruned,
                                learned=tuple(learned))
        if unknown:
            return SearchResult("solver", None, terms, calls, rnd, f"{unknown} candidate(s) beyond rlimit", pruned=pruned)
        return SearchResult("exhausted", None, terms, calls, rnd, pruned=pruned)
    return SearchResult("budget", None, terms, calls, max_rounds, f"{max_rounds} CEGIS rounds", pruned=pruned)


#: the most argument tuples `_single_instructions` tries per instruction form (a count, not a clock)
MAX_PROBE_TUPLES = 4096
#: the instructions-only pass's candidate budget, in multiples of the full grammar's (its levels are
#: narrower, so the same count reaches a level deeper: ARM uqrshrn(umull(x_u16, y_u16), 16) needs
#: 115,791 level-2 combinations there, over 2,500,000 in the full grammar)
INSTRUCTIONS_BUDGET = 4
#: the same for the 4-operand probe that follows an exhausted search (it runs on every such left side)
MAX_WIDE_PROBE_TUPLES = 256
#: the most operands of a form the bank builds (synth/bank.py keeps three argument ids per entry)
MAX_BANK_ARITY = 3
#: the most operands of an instruction `_single_instructions` applies to the leaves: 5 takes HVX's
#: accumulating two-tap products (vmpa_acc, vdmpy_acc: an accumulator, two data operands, two taps),
#: which at 4 never came up: gaussian's `v0_i16 + widening_mul(6, v1_u8) + widening_mul(15, v2_u8)`
#: was lowered as two vmpy_acc (4 slots) instead of one vmpa_acc (2) with the hand rules hidden
MAX_PROBE_ARITY = 5


def _single_instructions(
    lhs: Term, grammar: Grammar, bound: tuple, target: np.ndarray, env: dict[str, np.ndarray], rlimit: int,
    bounds: Mapping[str, tuple[int, int]], min_arity: int = 1, max_tuples: int = MAX_PROBE_TUPLES,
) -> tuple[Optional[Term], int]:
    """When the levels run over budget: every target instruction of the grammar applied to the
    leaves alone (any arity up to MAX_PROBE_ARITY, whatever its cost level). A target instruction that costs many
    levels (`x86.pmuldq_q31_round`: 6) sits above levels the budget can enumerate, yet the left side
    may be exactly it. Candidates beating the bound with the left side's values go to Z3 cheapest
    first; the first VALID one is returned with the number of solver calls. It is a cheaper form,
    not necessarily the cheapest (the levels between were not all enumerated)."""
    from fpir.opspec import OPS

    by_type: dict[ScalarType, list[Term]] = {}
    for leaf in grammar.leaves:
        by_type.setdefault(leaf.type, []).append(leaf)
    # the constants also at the narrower types, signed and unsigned: an instruction's immediate or
    # scalar taps are often narrower than any type of the left side (HVX vmpa's i8 taps under i16
    # products); only values the type holds
    values = sorted({leaf.value for leaf in grammar.leaves if leaf.is_const})
    for t in list(by_type):
        if t.bits > 8:
            for n in (t.narrow(), t.narrow().with_sign(not t.signed)):
                extra = [const(v, n) for v in values if n.contains(v)]
                if n not in by_type and extra:
                    by_type[n] = extra
    types = tuple(sorted(by_type, key=lambda t: (t.bits, t.signed, t.name)))
    found: list[Term] = []

    def consider(op: str, rtype: Optional[ScalarType], args: Sequence[Term]) -> None:
        try:
            t = make(op, *args, type=rtype, fold=False)
        except (FPIRTypeError, ValueError):
            return
        if t.type == lhs.type and grammar.better(t, bound) and _same_values(t, target, env):
            if grammar.normal is None or grammar.normal(polish(t)):
                found.append(t)

    for op, rtype in grammar.forms:
        s = OPS[op]
        if s.kind != "target" or not min_arity <= s.arity <= MAX_PROBE_ARITY or s.arg_lanes:
            continue
        tried = 0
        for ts, result in _probe_signatures(op, types, rtype):
            if tried >= max_tuples:
                break
            pools = [by_type[t] for t in ts]
            # the argument tuples in the order (and up to the count) the probe has always tried them
            # (itertools.product order is C order), those with a variable
            shape = tuple(len(p) for p in pools)
            n = min(int(np.prod(shape)), max_tuples - tried)
            tried += n
            if result != lhs.type:
                continue  # make gives the signature's result type: never the left side's type
            meter.charge_steps(n)
            idx = np.stack(np.unravel_index(np.arange(n), shape), axis=1)
            has_var = np.zeros(n, dtype=bool)
            for i, pool in enumerate(pools):
                has_var |= np.array([leaf.is_var for leaf in pool])[idx[:, i]]
            idx = idx[has_var]
            if not len(idx):
                continue
            match = None if s.reads_lane0 else _batch_matches(op, ts, result, pools, idx, target, env)
            for ix in (idx if match is None else idx[match]).tolist():  # every value match checked as before
                consider(op, rtype, [pools[i][j] for i, j in enumerate(ix)])
    calls = 0
    for t in sorted(set(found), key=lambda t: (grammar.cost(t), _const_inversions(t), to_text(t))):
        calls += 1
        if prove_equal(lhs, t, rlimit, bounds)[0] == "VALID":
            return polish(t), calls
    return None, calls


#: (op, candidate types, form type) -> the argument type tuples the op takes, with their result
#: types, in `product` order: the probe asked the op's type rule for every tuple of every call, and a
#: target op's refusal formats its whole signature list (a third of a first-pass search's time)
_SIGNATURES: dict[tuple, list] = {}


def _probe_signatures(
    op: str, types: tuple[ScalarType, ...], rtype: Optional[ScalarType]
) -> list[tuple[tuple[ScalarType, ...], ScalarType]]:
    from fpir.opspec import OPS

    s = OPS[op]
    key = (op, s.type_rule, types, rtype)  # the rule itself too: an op declared again is asked again
    got = _SIGNATURES.get(key)
    if got is None:
        got = []
        for ts in product(types, repeat=s.arity):
            try:
                got.append((ts, s.type_rule(list(ts), rtype)))
            except (FPIRTypeError, ValueError, KeyError):
                continue
        _SIGNATURES[key] = got
    return got


def _batch_matches(
    op: str, ts: tuple[ScalarType, ...], rt: ScalarType, pools: Sequence[Sequence[Term]],
    idx: np.ndarray, target: np.ndarray, env: Mapping[str, np.ndarray],
) -> Optional[np.ndarray]:
    """Which argument tuples (indices into `pools`, leaves of types `ts`) give the left side's values
    (`target`) under `op`, all at once (synth/bank.py `fast_apply`, which agrees with the interpreter:
    tests/synth/test_bank.py); None when that cannot say (a leaf not in `env`, an error on some tuple),
    and then every tuple is checked alone. Only a filter: each match is still checked term by term."""
    n = len(target)
    cols = []
    try:
        for i, pool in enumerate(pools):
            vals = []
            for leaf in pool:
                if leaf.is_const:
                    vals.append(np.full(n, leaf.value, dtype=leaf.type.np_dtype))
                elif not leaf.is_var:  # a compound leaf (hoisted work, synth/tasks.py `hoisted_leaves`)
                    with np.errstate(all="ignore"):
                        v = np.asarray(evaluate(leaf, dict(env))).astype(leaf.type.np_dtype)
                    vals.append(np.broadcast_to(v, (n,)))
                else:
                    v = env.get(leaf.name)
                    if v is None or np.ndim(v) != 1 or len(v) != n:
                        return None
                    vals.append(np.asarray(v, dtype=leaf.type.np_dtype))
            cols.append(np.stack(vals)[idx[:, i]])
        with np.errstate(all="ignore"):
            out = np.asarray(fast_apply(op, cols, ts, rt))
        out = np.broadcast_to(out, (len(idx), n))
        return (out.astype(target.dtype) == target[None, :]).all(axis=1)
    except (FPIRTypeError, ValueError, ZeroDivisionError, OverflowError, TypeError, KeyError):
        return None


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


#: ops shifting their first operand by their second (`constant_leaves`)
SHIFT_OPS = frozenset({"shl", "shr", "rounding_shr", "rounding_shl", "widening_shl"})
#: ops that round (`constant_leaves`: their constants c also give c - 1, c + 1 and 0)
_ROUNDING = re.compile(r"rounding|avg|rhadd")


def constant_leaves(
    lhs: Term, types: Iterable[ScalarType], negated: bool = False, neighbours: bool = True
) -> list[Term]:
    """The left side's constants and values derived from them (log2 of a power of two, 2^c; -c of a
    shift-sized one with `negated`, as lowering grammars ask: ARM shifts right by shifting left by a
    negative amount, `rounding_shr(x, 4) -> srshl(x, -4)`; there also c - 1, c + 1 and 0 when the left
    side rounds and `neighbours`: HVX `rounding_shr(x, c) -> vavg_rnd(x >> (c - 1), 0)`), at every
    type of the grammar that holds them; 0 and 1 only when the left side has no constant (few
    leaves keep the search small: every right side of a rule is over the left side's constants)."""
    values: set[int] = set()
    rounding = any(_ROUNDING.search(t.op) for t in lhs.walk() if t.args)
    for t in lhs.walk():
        if t.is_const:
            c = t.value
            values.add(c)
            if c > 0 and c & (c - 1) == 0:
                values.add(c.bit_length() - 1)
            if 0 <= c < 16:
                values.add(1 << c)
            if negated and 0 < abs(c) <= 64:  # a shift the other way (ARM srshl by a negative amount)
                values.add(-c)
            if negated and neighbours and rounding and 0 < c <= 64:  # a rounding shift by c: a shift by c - 1, averaged with 0
                values |= {c - 1, c + 1, 0}
    if not values:
        values = {0, 1}
    if negated:  # a shift by a runtime amount: its width, where the instructions saturate the amount
        values |= {t.args[0].type.bits for t in lhs.walk() if t.op in SHIFT_OPS and not t.args[1].is_const}
    out = []
    for ty in sorted(types, key=lambda x: (x.bits, x.signed)):
        for v in sorted(values):
            if ty.contains(v) and ty.bits > 1:
                out.append(const(v, ty))
    return out


def lhs_types(lhs: Term) -> set[ScalarType]:
    return {t.type for t in lhs.walk()}
