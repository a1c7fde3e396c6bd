"""Goal-directed (top-down) search for lowering right sides of 2-5 instructions.

The enumerator (synth/search.py) builds every term of a cost level before the next, so a right side
of two instructions with a constant operand sits at a level of millions of candidates (ARM
`rounding_shr(x_i32, y_u32)`: 8.9M at level 3, beyond any budget run). This search starts from the
root instead:

1. **Sub-goals.** The pool is the left side's sub-terms and those of its generic expansion
   (`expand_fpir`: `rounding_mul_shr(x_u16, y_u16, 16)` holds `u32(x) * u32(y)`), the grammar's
   leaves, and each pool term moved to another type of the search (`cast`, `saturating_cast` to a
   narrower one, `reinterpret` at the same width) or negated (`0 - y`: ARM shifts right by shifting
   left by a negative amount). A sub-goal is a specification: a term whose values the operand must
   have. One per fingerprint of values per type, smallest first. At the root also one target
   instruction over the variables alone (`instruction_goals`: HVX `vmpyo_rnd_sacc(vmpye(x, y), x,
   y)`, whose first operand no sub-term states), with a quota of their own.
2. **Root.** Every target instruction of the grammar whose result type is the left side's, applied
   to sub-goals of its operand types (at least one not a leaf); a combination whose values equal the
   left side's on every example is a decomposition (`sat<u8>(x_i32 >> 8)` = `sqxtun(sat<i16>(x >>
   8))`). At the root also a primitive `add` / `sub` over one sub-goal `a` of the left side's type and
   the *residual* `lhs - a` (`a - lhs`), a specification no sub-term states (`residuals`): x86
   `rounding_mul_shr(x_u16, y_u16, 16)` is `pmulhuw(x, y) + r` with r = `(x * y) >> 15`, the rounding
   bit. Only the `MAX_RESIDUALS` sub-goals per root whose residual takes the fewest distinct values on
   the examples are tried (pmulhuw's residual is 0 or 1), so this adds at most two decompositions.
   And where a residual is a function of its sub-goal's value at one point (`exceptions`: x86
   `rounding_mul_shr(x_i16, y_i16, 15)` is `pmulhrsw(x, y) + r`, r = -1 exactly where pmulhrsw
   gives -32768), the residual as `select(a == s, e, r)` over the sub-goal's implementation.
3. **Operands.** Each sub-goal is implemented by the enumerator (`synthesize` on the sub-goal, its
   own lowering grammar, bound by what the current rules make of it), else by this search one level
   deeper, else by the current rules' lowering of it; the candidate is the root over the
   implementations.
4. **Proof.** Candidates cheaper than the bound, encodable and in normal form (as the enumerator's),
   go to Z3 cheapest first (`prove_equal`, rlimit only); the first VALID one is the right side. The
   generalization that follows (synth/generalize.py) verifies the rule at every type instance.

Every limit is a count (combinations evaluated, sub-goals implemented; with a task's work cap also
its Z3 units and combinations in total, synth/meter.py), never a clock, so the answer does not depend
on the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Callable, Optional, Sequence

import numpy as np

from fpir.interp import evaluate
from fpir.ops import make
from fpir.opspec import OPS
from fpir.printer import to_text
from fpir.term import Term, const
from fpir.types import FPIRTypeError, ScalarType
from synth import meter
from synth.cost import bound_below
from synth.corpus import substitute as substitute_term
from synth.search import Grammar, SearchResult, base_examples, lane_factors, lane_names, polish, prove_equal, synthesize

#: combinations of a root instruction over sub-goals evaluated per search (a count, not a clock)
MAX_COMBINATIONS = 2_000_000
#: values evaluated per numpy call (combinations x examples)
CHUNK = 2_000_000
#: decompositions whose operands are implemented per search (each may run the enumerator)
MAX_DECOMPOSITIONS = 12
#: sub-goals kept per type (smallest first)
MAX_PER_TYPE = 24
#: the enumerator's budget for a sub-goal, as a fraction of the task's
SUB_BUDGET_DIVISOR = 4
#: instruction sub-goals (`instruction_goals`) kept per type at the root, cheapest first, and their
#: most operands
MAX_INSTRUCTION_GOALS = 8
MAX_INSTRUCTION_ARITY = 2
#: residual decompositions at the root (`residuals`): the primitive roots, and the sub-goals tried per root
RESIDUAL_ROOTS = ("add", "sub")
MAX_RESIDUALS = 1
#: sub-goals are searched top-down again this many levels deep (a root over two levels of operands:
#: right sides of up to about five instructions)
MAX_DEPTH = 2


@dataclass(frozen=True)
class Context:
    """What a top-down search needs besides the left side: the ISA's grammar for any term, what the
    current rules make of a term (lowered, generic expansion after), the enumerator's budget."""

    grammar_for: Callable[[Term], Grammar]
    lower_now: Callable[[Term], Term]
    expand: Callable[[Term], Term]
    max_terms: int
    rlimit: int
    #: compound leaves of the grammars (hoisted work on uniform operands, synth/tasks.py
    #: `hoisted_leaves`): a sub-goal that is one is its own implementation
    leaves: frozenset[Term] = frozenset()


def _types(types: frozenset[ScalarType]) -> set[ScalarType]:
    """The grammar's types and their wide and narrow neighbours, both signs (an operand of the root
    instruction often has a type the left side lacks: sqxtun's i16 under `sat<u8>(x_i32 >> 8)`)."""
    out = set(types)
    for t in types:
        if t.bits > 1:
            for n in (t.widen() if t.bits < 64 else None, t.narrow() if t.bits > 8 else None):
                if n is not None:
                    out |= {n, n.with_sign(not n.signed)}
    return {t for t in out if t.bits > 1}


def _moved(s: Term, types: set[ScalarType]) -> list[Term]:
    """`s` as an operand of another type (see module doc, 1.)."""
    out: list[Term] = []
    if s.type.bits <= 1:
        return out
    for a in sorted(types, key=lambda x: (x.bits, x.signed, x.name)):
        if a == s.type:
            continue
        try:
            if a.bits == s.type.bits:
                out.append(make("reinterpret", s, type=a))
            else:
                out.append(make("cast", s, type=a))
                if a.bits < s.type.bits:
                    out.append(make("saturating_cast", s, type=a))
        except (FPIRTypeError, ValueError):
            continue
    return out


def _negated(s: Term) -> list[Term]:
    """`0 - s` at s's type and, for an unsigned s, at its signed flip: a shift amount the other way."""
    out: list[Term] = []
    if s.type.bits <= 1:
        return out
    bases = [s] if s.type.signed else [s, make("reinterpret", s, type=s.type.with_sign(True))]
    for b in bases:
        try:
            out.append(make("sub", const(0, b.type), b))
        except (FPIRTypeError, ValueError):
            continue
    return out


def clamped_amounts(lhs: Term) -> list[Term]:
    """Each runtime shift amount of the left side clamped to the shifted value's width, `min(y, bits)`,
    and for a signed amount also from below, `max(min(y, bits), -bits)`: an FPIR shift by `bits` or
    more is already all fill (0 or the sign), so the clamp changes no value, but the instructions read
    their amount in fewer bits (ARM srshl / sshl: the low byte, signed), so a right side that shifts by
    a runtime amount takes the clamped one (rules/lower/arm_neon.rules `srshr_clamped`: softmax's and
    depthwise_conv's `rounding_shr(x_T, y_U) -> arm.srshl(x_T, 0 - reinterpret<T>(min(y_U, bits(T))))`).
    No sub-term or generic expansion states the clamp, and the enumerator reaches the three-instruction
    right side only at a level of millions of candidates (module doc); negated (`_negated`) it is
    the operand ARM's shift-left-by-a-negative-amount instructions take."""
    from synth.search import SHIFT_OPS

    out: list[Term] = []
    for t in lhs.walk():
        if t.op not in SHIFT_OPS or len(t.args) != 2 or t.args[1].is_const:
            continue
        y, bits = t.args[1], t.args[0].type.bits
        if not y.type.contains(bits):
            continue
        try:
            c = make("min", y, const(bits, y.type))
            out.append(c)
            if y.type.signed and y.type.contains(-bits):
                out.append(make("max", c, const(-bits, y.type)))
        except (FPIRTypeError, ValueError):
            continue
    return out


def _size(t: Term) -> int:
    return sum(1 for _ in t.walk())


def instruction_goals(lhs: Term, grammar: Grammar, types: set[ScalarType]) -> list[Term]:
    """One target instruction of the grammar over the left side's variables alone (no constant, at
    most `MAX_INSTRUCTION_ARITY` operands), of a type the search uses: operands that are no sub-term
    of the left side or of its generic expansion. HVX `rounding_mul_shr(x_i32, y_i32, 31)` is
    `vmpyo_rnd_sacc(vmpye(x, y), x, y)`: its first operand is an instruction of its own, which no
    sub-term states (the generic expansion multiplies in 64 bits)."""
    vs = sorted(set(lhs.variables()), key=lambda v: v.name)
    out: list[Term] = []
    for op, rtype in grammar.forms:
        s = OPS[op]
        if s.kind != "target" or not 1 <= s.arity <= MAX_INSTRUCTION_ARITY or s.arg_lanes or s.lane0_args:
            continue
        for args in product(vs, repeat=s.arity):
            try:
                t = make(op, *args, type=rtype, fold=False)
            except (FPIRTypeError, ValueError):
                continue
            if t.type in types:
                out.append(t)
    return out


def sub_goals(lhs: Term, grammar: Grammar, expanded: Term, env: dict[str, np.ndarray], n: int,
              instructions: bool = False) -> dict[ScalarType, list[tuple[Term, np.ndarray]]]:
    """Type -> (specification, its values on the examples), one per fingerprint, smallest first;
    with `instructions` (the root's search) also up to `MAX_INSTRUCTION_GOALS` per type of
    `instruction_goals`, after the others (their own quota: they never displace a sub-term)."""
    types = _types(grammar.types)
    pool: list[Term] = []
    for root in (lhs, expanded):
        for t in root.walk():
            if t is not lhs and t.args and _size(t) <= 12:
                pool.append(t)
    pool = sorted(set(pool), key=lambda t: (_size(t), to_text(t)))
    specs: list[Term] = list(grammar.leaves)
    values = sorted({x.value for x in grammar.leaves if x.is_const})
    specs += [const(v, t) for t in types for v in values if t.contains(v)]  # an immediate of another type
    for s in pool:
        specs.append(s)
        specs += _moved(s, types)
        if _size(s) <= 4:
            specs += _negated(s)
    for v in lhs.variables():
        specs += _moved(v, types)
        specs += _negated(v)
    for c in clamped_amounts(lhs):
        specs.append(c)
        specs += _moved(c, types)
        specs += _negated(c)
    out: dict[ScalarType, list[tuple[Term, np.ndarray]]] = {}
    seen: set[tuple[str, bytes]] = set()
    for s in sorted(set(specs), key=lambda t: (0 if not t.args else 1, _size(t), to_text(t))):
        v = _new_value(s, env, n, seen)
        if v is None:
            continue
        row = out.setdefault(s.type, [])
        if len(row) < MAX_PER_TYPE or not s.args:
            row.append((s, v))
    if instructions:
        extra: dict[ScalarType, int] = {}
        for s in sorted(instruction_goals(lhs, grammar, types), key=lambda t: (int(OPS[t.op].meta.get("cost", 1)), to_text(t))):
            if extra.get(s.type, 0) >= MAX_INSTRUCTION_GOALS:
                continue
            v = _new_value(s, env, n, seen)
            if v is None:
                continue
            out.setdefault(s.type, []).append((s, v))
            extra[s.type] = extra.get(s.type, 0) + 1
    return out


def _new_value(s: Term, env: dict[str, np.ndarray], n: int, seen: set[tuple[str, bytes]]) -> Optional[np.ndarray]:
    """`s`'s values on the sample (`n` lanes), or None if it cannot be evaluated or a goal of its
    type already has exactly these values (`seen` records each one kept)."""
    try:
        with np.errstate(all="ignore"):
            v = np.broadcast_to(np.asarray(evaluate(s, env)).astype(s.type.np_dtype), (n,))
    except (FPIRTypeError, ValueError, ZeroDivisionError, OverflowError):
        return None
    key = (s.type.name, v.tobytes())
    if key in seen:
        return None
    seen.add(key)
    return v


def decompositions(lhs: Term, grammar: Grammar, goals: dict[ScalarType, list[tuple[Term, np.ndarray]]],
                   target: np.ndarray) -> tuple[list[tuple[str, tuple[Term, ...]]], int]:
    """(root instruction, sub-goal per operand) whose values equal the left side's on the examples;
    and the number of combinations evaluated. Each root and operand types are evaluated at once over
    every combination of sub-goals (numpy broadcasting: one axis per operand), in chunks."""
    from synth.bank import fast_apply

    found: list[tuple[str, tuple[Term, ...]]] = []
    tried = 0
    types = sorted(goals, key=lambda t: (t.bits, t.signed, t.name))
    n = target.shape[0]
    same = _restating(lhs, goals, target)
    for op, rtype in grammar.forms:
        s = OPS[op]
        if s.kind != "target" or not 1 <= s.arity <= 4 or s.arg_lanes:
            continue
        for ts in product(types, repeat=s.arity):
            try:
                if s.type_rule(list(ts), rtype) != lhs.type:
                    continue
            except (FPIRTypeError, ValueError, KeyError):
                continue
            cols = [goals[t] for t in ts]
            vals = [np.stack([v for _, v in c]) for c in cols]
            rest = int(np.prod([len(c) for c in cols[1:]], dtype=np.int64))
            step = max(1, CHUNK // max(1, rest * n))
            for lo in range(0, len(cols[0]), step):
                if tried >= MAX_COMBINATIONS:
                    return found, tried
                parts = [vals[0][lo : lo + step]] + vals[1:]
                k = len(parts)
                shaped = [p.reshape((1,) * i + (p.shape[0],) + (1,) * (k - 1 - i) + (n,)) for i, p in enumerate(parts)]
                n_here = int(np.prod([p.shape[0] for p in parts], dtype=np.int64))
                tried += n_here
                meter.charge_steps(n_here)
                try:
                    with np.errstate(all="ignore"):
                        out = np.asarray(fast_apply(op, shaped, ts, lhs.type))
                except (FPIRTypeError, ValueError, ZeroDivisionError, OverflowError):
                    break
                if out.ndim != k + 1:
                    out = np.broadcast_to(out, tuple(p.shape[0] for p in parts) + (n,))
                hit = np.all(out.astype(lhs.type.np_dtype, copy=False) == target, axis=-1)
                for idx in np.argwhere(hit):
                    choice = (cols[0][lo + int(idx[0])][0],) + tuple(cols[i][int(idx[i])][0] for i in range(1, k))
                    if any(g.args for g in choice) and not any(g in same for g in choice):
                        # leaves alone: the enumerator's first levels had them; an operand with the
                        # left side's own values (its generic expansion) only restates the problem
                        found.append((op, choice))
    return found, tried


def _restating(lhs: Term, goals: dict[ScalarType, list[tuple[Term, np.ndarray]]], target: np.ndarray) -> set[Term]:
    """The sub-goals of the left side's type with its values on every example (its generic expansion,
    or a cast of it): as an operand of a decomposition or the `a` of a residual they only restate it
    (`op(expansion, 0)`, residual 0), and implementing them is the search itself."""
    dt = lhs.type.np_dtype
    return {a for a, v in goals.get(lhs.type, []) if a.args and np.array_equal(v.astype(dt), target.astype(dt))}


def residuals(lhs: Term, expanded: Term, goals: dict[ScalarType, list[tuple[Term, np.ndarray]]],
              target: np.ndarray) -> list[tuple[str, tuple[Term, ...]]]:
    """Decompositions of the left side at a primitive root (`RESIDUAL_ROOTS`): `add(a, lhs - a)` and
    `sub(a, a - lhs)` for a sub-goal `a` of the left side's type that is no leaf. Both hold for every
    input (wrapping arithmetic), so what decides is whether the residual has a cheap implementation;
    the `MAX_RESIDUALS` sub-goals per root whose residual takes the fewest distinct values on the
    examples are kept, ties to the smaller sub-goal. The residual is stated over the generic expansion
    (`expanded`): its grammar (`Context.grammar_for`) then has the primitive ops the expansion uses
    (the `mul` of `(x * y) >> 15`), which the left side's fixed-point op does not name."""
    dt = lhs.type.np_dtype
    same = _restating(lhs, goals, target)
    cands = [(a, v) for a, v in goals.get(lhs.type, []) if a.args and a not in same]
    out: list[tuple[str, tuple[Term, ...]]] = []
    for op in RESIDUAL_ROOTS:
        ranked = []
        for a, v in cands:
            with np.errstate(all="ignore"):
                r = target.astype(dt) - v.astype(dt) if op == "add" else v.astype(dt) - target.astype(dt)
            ranked.append((len(np.unique(r)), _size(a), to_text(a), a))
        ranked.sort(key=lambda x: x[:3])
        for _, _, _, a in ranked[:MAX_RESIDUALS]:
            try:
                rest = make("sub", expanded, a, fold=False) if op == "add" else make("sub", a, expanded, fold=False)
            except (FPIRTypeError, ValueError):
                continue
            out.append((op, (a, rest)))
    return out


def exceptions(lhs: Term, goals: dict[ScalarType, list[tuple[Term, np.ndarray]]], target: np.ndarray,
               fresh: str) -> list[tuple[str, Term, Term, Term]]:
    """Residual decompositions whose residual is a function of the sub-goal's value at one point: for
    each root of `RESIDUAL_ROOTS` and the smallest `MAX_RESIDUALS` sub-goals `a` of the left side's
    type whose residual takes two values on the examples, one (`e`) only where `a` has one value `s`
    and everywhere it does, (root, a, `select(A == s, e, r)`, A) with A a fresh variable (named
    `fresh`) for a's value.
    The residual over the left side's variables is a specification the enumerator reaches only many
    levels up (x86 `rounding_mul_shr(x_i16, y_i16, 15)` is `pmulhrsw(x, y) - r`, r = 1 where x = y =
    -32768, the one input where pmulhrsw gives -32768: `r = i16(pmulhrsw(x, y) == -32768)` is three
    levels over the variables); over A it is one comparison and a select. Only the examples say the
    residual is that function: the candidate built from it is proven like any other."""
    from fpir.term import var

    dt = lhs.type.np_dtype
    same = _restating(lhs, goals, target)
    cands = [(a, v) for a, v in goals.get(lhs.type, []) if a.args and a not in same]
    out: list[tuple[str, Term, Term, Term]] = []
    for op in RESIDUAL_ROOTS:
        ranked = []
        for a, v in cands:
            v = v.astype(dt)
            with np.errstate(all="ignore"):
                r = target.astype(dt) - v if op == "add" else v - target.astype(dt)
            vals, counts = np.unique(r, return_counts=True)
            if len(vals) != 2:
                continue
            common, rare = (vals[0], vals[1]) if counts[0] >= counts[1] else (vals[1], vals[0])
            at = np.unique(v[r == rare])
            if len(at) == 1 and np.all(r[v == at[0]] == rare):
                ranked.append((_size(a), to_text(a), a, at[0], rare, common))
        ranked.sort(key=lambda x: x[:2])
        for _, _, a, s_, rare, common in ranked[:MAX_RESIDUALS]:
            A = var(fresh, a.type)
            try:
                f = make("select", make("eq", A, const(int(s_), a.type)), const(int(rare), lhs.type),
                         const(int(common), lhs.type))
            except (FPIRTypeError, ValueError):
                continue
            out.append((op, a, f, A))
    return out


def topdown(lhs: Term, grammar: Grammar, bound: tuple, ctx: Context, depth: int = 1,
            memo: Optional[dict[Term, Term]] = None, extra_rows: Sequence[tuple[int, ...]] = ()) -> SearchResult:
    """A right side for `lhs` cheaper than `bound` built from the root down (module doc).
    `extra_rows`: example rows beyond the base ones (the enumerator's counterexamples for the same left
    side, `SearchResult.learned`): a decomposition must hold there too, and a residual is told apart
    from zero where the base examples miss its only nonzero inputs (x86 `rounding_mul_shr(x_i16,
    y_i16, 15)` is `pmulhrsw(x, y)` but at x = y = -32768)."""
    try:
        if lane_factors(lhs):
            return SearchResult("budget", None, 0, 0, 0, "top-down: lane-combining left side not searched")
    except ValueError as e:
        return SearchResult("budget", None, 0, 0, 0, f"top-down: {e}")
    memo = {} if memo is None else memo
    vars_ = sorted(set(lhs.variables()), key=lambda v: v.name)
    rows = list(base_examples(lane_names(vars_, {})))
    rows += [r for r in extra_rows if r not in rows]
    env = {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}
    with np.errstate(all="ignore"):
        target = np.broadcast_to(np.asarray(evaluate(lhs, env)).astype(lhs.type.np_dtype), (len(rows),))
    expanded = ctx.expand(lhs)
    goals = sub_goals(lhs, grammar, expanded, env, len(rows), instructions=depth == 1)
    found, tried = decompositions(lhs, grammar, goals, target)
    found.sort(key=lambda d: (sum(1 for g in d[1] if g.args), sum(_size(g) for g in d[1]), d[0], [to_text(g) for g in d[1]]))
    # the residual decompositions at the root have a quota of their own (they never displace one above)
    rest = residuals(lhs, expanded, goals, target) if depth == 1 else []
    calls = 0
    cands: dict[Term, None] = {}
    for op, specs in found[:MAX_DECOMPOSITIONS] + rest:
        impls = []
        for g in specs:
            impl = _implement(g, ctx, depth, memo)
            impls.append(impl)
        try:
            t = polish(make(op, *impls, fold=False))
        except (FPIRTypeError, ValueError):
            continue
        if t.type == lhs.type and grammar.better(t, bound) and (grammar.normal is None or grammar.normal(t)):
            cands[t] = None
    # and those whose residual is a function of the sub-goal's value at one point (`exceptions`)
    excs = exceptions(lhs, goals, target, f"v{len(vars_)}") if depth == 1 else []
    for op, a, f, A in excs:
        impl = _implement(a, ctx, depth, memo)
        try:
            t = polish(make(op, impl, substitute_term(_implement(f, ctx, depth, memo), {A: impl}), fold=False))
        except (FPIRTypeError, ValueError):
            continue
        if t.type == lhs.type and grammar.better(t, bound) and (grammar.normal is None or grammar.normal(t)):
            cands[t] = None
    for t in sorted(cands, key=lambda t: (grammar.cost(t), to_text(t))):
        calls += 1
        if prove_equal(lhs, t, ctx.rlimit)[0] == "VALID":
            return SearchResult("found", t, tried, calls, 1, f"top-down: {t.op} over {len(t.args)} sub-goals")
    return SearchResult("budget", None, tried, calls, 1,
                        f"top-down: {len(found)} decomposition(s) on the examples, {len(rest)} residual and "
                        f"{len(excs)} exception one(s), none cheaper and proven")


def _implement(g: Term, ctx: Context, depth: int, memo: dict[Term, Term]) -> Term:
    """The cheapest implementation of a sub-goal this search finds: the enumerator's, else a
    top-down one a level deeper, else the current rules' lowering (always a correct one)."""
    if not g.args or g in ctx.leaves:
        return g
    if g in memo:
        return memo[g]
    cur = ctx.lower_now(g)
    best = cur
    try:
        gram = ctx.grammar_for(g)
        bound = bound_below(gram.cost(cur))
        res = synthesize(g, gram, bound, max_terms=max(1, ctx.max_terms // SUB_BUDGET_DIVISOR), rlimit=ctx.rlimit)
        if res.status == "found" and res.rhs is not None:
            best = res.rhs
        elif res.status == "budget" and depth < MAX_DEPTH:
            sub = topdown(g, gram, bound, replace(ctx), depth + 1, memo)
            if sub.status == "found" and sub.rhs is not None:
                best = sub.rhs
    except (FPIRTypeError, ValueError):
        best = cur
    memo[g] = best
    return best
