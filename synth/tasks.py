"""One synthesis task: a left side, the current TRS's result for it, a search, a generalization.

A task is a pure function of its `Task` (kind, ISA, canonical left side, budgets) returning a
JSON-serialisable `dict`, so the driver can cache it on disk, run it in local processes or on a
Dask cluster, and get the same answer everywhere.

* lifting: the rewriter sees a node after its children were lifted, so the rule's left side is the
  corpus entry with its children lifted (`seen`); the cost to beat is that of what the lifting TRS
  makes of it; the grammar is every primitive and FPIR op over the entry's types (and their narrow
  and sign-flipped variants), its variables and constants (and values derived from them).
* lowering (per ISA): the left side is a cut of a lifted expression, its children lowered by the
  ISA's TRS; the cost to beat is the target cost of what lowering plus the generic expansion makes of
  it; the grammar is the ISA's instructions and the primitive ops; only strictly fewer instructions
  count as better.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Optional

from fpir.opspec import OPS
from fpir.term import Term
from fpir.printer import to_text
from fpir.text import parse
from fpir.types import FPIRTypeError, ScalarType, u1
from synth.corpus import canonical, rebuild
from synth.meter import WorkCapExceeded
from synth.alternates import instruction_alternates
from synth.reduction_split import too_wide
from synth.search import MAX_LANE_FACTOR, Grammar, SearchResult, constant_leaves, lhs_types, synthesize

if TYPE_CHECKING:
    from synth.rulesnap import RuleSnapshot
    from synth.topdown import Context

SKIP_LIFT_OPS = frozenset({"div", "mod", "var", "const"})
BOOL_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "select"})
LOWER_PRIMS = (
    "add",
    "sub",
    "mul",
    "min",
    "max",
    "and",
    "or",
    "xor",
    "not",
    "shl",
    "shr",
    "abs",
    "cast",
    "reinterpret",
)
#: bumped whenever grammars or acceptance conditions change, so cached results of older searches
#: are not reused (lift 8 / lower 12: every search query in a fresh Z3 context, synth/search.py
#: `prove_equal`; a shared bank built past a budget no longer lets a smaller budget through; lower
#: 13: instruction sub-goals at the top-down root, synth/topdown.py `instruction_goals`; lower 14: wide
#: reductions split, synth/reduction_split.py, and left-side alternates, synth/alternates.py; lower 15:
#: generic primitives at what the ISA spends on them, pitchfork/targets/primitive_cost.py, and the
#: one-instruction probe up to five operands, synth/search.py MAX_PROBE_ARITY; lower 16: runtime shift
#: amounts clamped to the width as top-down sub-goals, synth/topdown.py `clamped_amounts`, and HVX
#: narrowing shifts by an amount they cannot take as Rt costed as their semantics, hvx_emit
#: `amount_encodable`; lower 20: a task's cost and encodable test see its variables' ranges, a uniform
#: task off x86 keeps right sides encodable only through the uniform operand, `needs_uniform`, and
#: states the ranges such a right side needs, `needed_ranges`; lower 21: arm64 right sides kept only
#: with fewer cortex-a76 issue cycles, synth/cost.py `bound_below`; lower 22: a uniform task with a
#: top-down search runs it over grammars with hoisted leaves, `_uniform_topdown`, and the top-down
#: search's residuals that are a function of a sub-goal's value at one point, synth/topdown.py
#: `exceptions`)
SEARCH_VERSION = {"lift": 8, "lower": 22}
ISA_PREFIX = {"x86-avx2": "x86.", "arm64": "arm.", "hvx128": "hvx."}


@dataclass(frozen=True)
class Task:
    kind: str  # "lift" | "lower"
    isa: str  # "" for lifting
    lhs: str  # canonical text of the corpus entry
    max_terms: int = 40_000
    rlimit: int = 20_000_000
    generalize: bool = True
    #: names of existing rules to leave out of the baseline TRS (to show that synthesis finds them)
    hide: tuple[str, ...] = ()
    #: digest of the rules the task is planned against (synth/rulesnap.py `stage_digest`)
    rules: str = ""
    #: lowering: the value range (lo, hi) of each variable v0, v1, ... over every place the left side
    #: was found (synth/corpus.py `Corpus.ranges`), or () when none is narrower than its type; a
    #: narrowed uniform task's: its uniform variables' range at one place (synth/driver.py
    #: `narrowed_uniform_ranges`). The search's cost and encodable test see these ranges.
    ranges: tuple[tuple[int, int], ...] = ()
    #: lowering: search again over the ISA's instructions alone when the levels run over budget
    #: (`instructions_grammar`)
    instructions_pass: bool = False
    #: lowering: when the levels run over budget, search from the root down (synth/topdown.py)
    topdown: bool = True
    #: lowering: indices i of the variables v<i> searched as uniform (the same value in every lane; the
    #: corpus saw a broadcast there, synth/corpus.py `Corpus.uniform`): the rule found states
    #: `is_variable(v<i>) && is_uniform(v<i>)` (x86 vpsraw / vpsllw read their count at lane 0)
    uniform: tuple[int, ...] = ()
    #: the most work (Z3 resource units plus enumeration steps, synth/meter.py) the task's search may
    #: spend before it ends over budget (0: no cap): a count, so the verdict does not depend on load
    work_cap: int = 0
    #: lowering: the rules (text) of this round's first pass, which a deep search's answer is checked
    #: against before it is generalized (`_composite`): the driver's deep pass sets them
    prior: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        hide = ",".join(self.hide)
        if len(hide) > 120:  # a bring-up hides hundreds of rules: their digest keeps cache lines short
            hide = "sha1:" + _digest(hide)
        prior = _digest("\n".join(self.prior)) if self.prior else ""
        return (
            f"v{SEARCH_VERSION[self.kind]}|{self.kind}|{self.isa}|{self.lhs}|{self.max_terms}|{self.rlimit}|"
            f"{int(self.generalize)}|{hide}|{self.rules}"
            + (f"|r:{';'.join(f'{lo},{hi}' for lo, hi in self.ranges)}" if self.ranges else "")
            + ("|insts" if self.instructions_pass else "")
            + ("|td" if self.topdown and self.kind == "lower" else "")
            + (f"|u:{','.join(map(str, self.uniform))}" if self.uniform else "")
            + (f"|w:{self.work_cap}" if self.work_cap else "")
            + (f"|p:{prior}" if prior else "")
        )


def _digest(text: str) -> str:
    """A short digest of `text` for a task key (hundreds of hidden names, a round's rule texts)."""
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _without(rules: "RuleSet", hide: tuple[str, ...]) -> "RuleSet":
    """`rules` less those named in `hide`, except the run's own rules that share a hidden name
    (synth/rulesnap.py `hidden`: a bring-up found a committed rule again, same text, same name)."""
    from pitchfork.trs.rules import RuleSet
    from synth.rulesnap import hidden

    gone = hidden(hide)
    return rules if not gone else RuleSet([r for r in rules.rules if r.name not in gone])


def _bits_level(ts: tuple[ScalarType, ...]) -> int:
    return sum(max(1, t.bits // 8) for t in ts)


def _explicit_forms(op: str, types: set[ScalarType]) -> list[tuple[str, Optional[ScalarType]]]:
    if OPS[op].explicit_type:
        return [(op, t) for t in sorted(types, key=lambda x: (x.bits, x.signed))]
    return [(op, None)]


def _free(t: Term) -> bool:
    """A reinterpret or a same-width cast: no instruction on any target."""
    from synth.cost import same_width_cast

    return t.op == "reinterpret" or same_width_cast(t)


def free_reinterpret_width(term: Term) -> int:
    """The width part of the lifting cost with reinterprets (and same-width casts) free."""
    return sum(sum(a.type.bits for a in t.args) for t in term.walk() if t.args and not _free(t))


def op_count(term: Term) -> int:
    """Operations other than reinterprets and same-width casts: a lifting rule must not add
    instructions (the width-first cost would otherwise trade `min(x_u16, 255)` for a narrowing and a
    widening)."""
    return sum(1 for t in term.walk() if t.args and not _free(t))


def lifting_grammar(lhs: Term, current: Term) -> Grammar:
    """Candidates must beat `current` under the lifting cost and also with reinterprets free, so a
    rule never trades a free reinterpret for a different (not cheaper) instruction."""
    from pitchfork.selection.cost import cost

    base = lhs_types(lhs)
    types = set(base)
    for t in base:
        if t.bits > 1:
            types.add(t.with_sign(not t.signed))
            if t.bits > 8:
                types.add(t.narrow())
    forms: list[tuple[str, Optional[ScalarType]]] = []
    used = {t.op for t in lhs.walk()}
    for name, s in OPS.items():
        if s.kind not in ("primitive", "fpir") or name in SKIP_LIFT_OPS:
            continue
        # Primitive ops only where the left side uses them (a cheaper form is made of FPIR ops; a
        # primitive it does not use rarely helps and multiplies the search space).
        if s.kind == "primitive" and name not in used and name not in ("cast", "reinterpret"):
            continue
        if name in BOOL_OPS and u1 not in types:
            continue
        forms += _explicit_forms(name, {t for t in types if t.bits > 1})
    leaves = tuple(sorted(set(lhs.variables()), key=lambda v: v.name)) + tuple(constant_leaves(lhs, types))
    limit = free_reinterpret_width(current)
    ops = op_count(current)
    return Grammar(
        leaves,
        tuple(forms),
        frozenset(types),
        cost,
        lambda op, ts, rt: _bits_level(ts),
        lambda c: c[0] // 8,
        lambda t: free_reinterpret_width(t) < limit and op_count(t) <= ops,
        max_ops=ops,
        key=f"lift:{';'.join(to_text(x) + ':' + x.type.name for x in leaves)}|{forms}|{sorted(t.name for t in types)}",
    )


def lowering_grammar(lhs: Term, isa: str) -> Grammar:
    from pitchfork.targets import load_target
    from pitchfork.targets.primitive_cost import instructions
    from synth.cost import level_cap, lowering_cost

    load_target(isa)
    types = set(lhs_types(lhs))
    for t in list(types):
        if t.bits > 1:
            types.add(t.with_sign(not t.signed))
    forms: list[tuple[str, Optional[ScalarType]]] = []
    prefix = ISA_PREFIX[isa]
    for name, s in OPS.items():
        if s.kind == "target" and name.startswith(prefix):
            forms.append((name, None))
    used = {t.op for t in lhs.walk()}
    for name in LOWER_PRIMS:
        if name != "reinterpret" and (name in used or name in ("cast", "add", "shl", "shr")):
            forms += _explicit_forms(name, {t for t in types if t.bits > 1})
    # the left side's lane-combining primitives (a reduction the ISA lowers generically is a
    # candidate too; the bank evaluates them over lane groups, synth/bank.py)
    forms += [(name, None) for name in sorted(used) if name in OPS and OPS[name].reduce is not None]
    forms += _explicit_forms("reinterpret", {t for t in types if t.bits > 1})  # level 0: last

    def level(op: str, ts: tuple[ScalarType, ...], rt: ScalarType) -> int:
        s = OPS[op]
        if s.kind == "target":
            return int(s.meta.get("cost", 1))
        # a generic primitive at what the ISA spends on it (the cost's table: an HVX 32-bit multiply
        # is 2), so candidates are met in the order of their cost; a same-width cast stays 1
        return 0 if op == "reinterpret" else instructions(isa, op, ts[0], rt)

    leaves = tuple(sorted(set(lhs.variables()), key=lambda v: v.name)) + tuple(constant_leaves(lhs, types, negated=True))
    key = f"lower:{isa}:{';'.join(_leaf_key(x) for x in leaves)}|{forms}|{sorted(t.name for t in types)}"
    return Grammar(leaves, tuple(forms), frozenset(types), partial(lowering_cost, isa=isa), level, level_cap,
                   also=encodable_everywhere, key=key)


def _leaf_key(x: Term) -> str:
    """A grammar leaf in a bank key: a uniform variable prints as a plain one, but its banks must
    not be shared with the plain variable's (their terms hold the leaf)."""
    return to_text(x) + ":" + x.type.name + (":uniform" if x.is_uniform_leaf else "")


def encodable_everywhere(t: Term) -> bool:
    """No target instruction of `t` lacks an immediate it must have (`srsra(0, x, y)` with a runtime
    `y` is emitted as its meaning, `0 + rounding_shr(x, y)`: naming the instruction there gains
    nothing, whatever the cost model charges for it)."""
    from pitchfork.targets.base import encodable

    return all(encodable(x) for x in t.walk() if x.args and OPS[x.op].kind == "target") and lane0_uniform(t)


def lane0_uniform(t: Term) -> bool:
    """Every operand an instruction of t reads at lane 0 only is uniform (constants and uniform
    leaves): the search's examples are independent rows, not the lanes of one vector, so only there
    can such an instruction equal a lane-wise left side (x86 `psra_uniform(x, y)` is `x >> y` only
    for a broadcast y; synth/search.py `_same_values`)."""
    from pitchfork.trs.predicate import is_uniform_term

    return all(is_uniform_term(x.args[i]) for x in t.walk() if x.args for i in OPS[x.op].lane0_args)


def instructions_grammar(lhs: Term, isa: str, full: Grammar) -> Grammar:
    """The lowering grammar's second pass (`synthesize(..., instructions_only=)`): the ISA's
    instructions with casts and reinterprets only, over the left side's types, their sign flips and
    their wide and narrow neighbours (a two-instruction right side passes through a type the left
    side lacks: `uqrshrn(umull(x_u16, y_u16), u32(16))`), the constants at all of them."""
    prefix = ISA_PREFIX[isa]
    types = set(full.types)
    for t in list(types):
        if t.bits > 1:
            for n in (t.widen() if t.bits < 64 else None, t.narrow() if t.bits > 8 else None):
                if n is not None:
                    types |= {n, n.with_sign(not n.signed)}
    forms: list[tuple[str, Optional[ScalarType]]] = [(n, None) for n, s in OPS.items() if s.kind == "target" and n.startswith(prefix)]
    forms += _explicit_forms("cast", {t for t in types if t.bits > 1})
    forms += _explicit_forms("reinterpret", {t for t in types if t.bits > 1})  # level 0: last
    leaves = tuple(sorted(set(lhs.variables()), key=lambda v: v.name)) + tuple(constant_leaves(lhs, types, negated=True, neighbours=False))
    key = f"lower-insts:{isa}:{';'.join(to_text(x) + ':' + x.type.name for x in leaves)}|{forms}|{sorted(t.name for t in types)}"
    return replace(full, leaves=leaves, forms=tuple(forms), types=frozenset(types), key=key)


def _lift_side(term: Term, hide: tuple[str, ...] = ()) -> tuple[Term, Term]:
    """(what the lifting rewriter sees at the root: children lifted, what it makes of it)."""
    from pitchfork.selection.lift import lift, lift_rules

    rules = _without(lift_rules(), hide)
    seen = rebuild(term, [lift(a, rules) for a in term.args])
    return seen, lift(term, rules)


def _lower_side(term: Term, isa: str, hide: tuple[str, ...] = ()) -> tuple[Term, Term]:
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter

    info = load_target(isa)
    rw = Rewriter(_without(info.rules, hide), cost=info.cost)
    seen = rebuild(term, [rw.rewrite(a) for a in term.args])
    return seen, expand_fpir(rw.rewrite(term), TARGET_MAX_BITS.get(isa, 64))


def lower_seen(task: Task) -> str:
    """The left side a lowering task searches (its cut with the children lowered by the rules loaded
    now, canonical), without searching: the driver's later rounds skip left sides already searched."""
    seen, _ = _lower_side(parse(task.lhs), task.isa, task.hide)
    return to_text(canonical(seen))


def _normal_form(stage: str, hide: tuple[str, ...]) -> Callable[[Term], bool]:
    """Whether the stage's current TRS leaves a term as it is (search.Grammar.normal)."""
    from pitchfork.trs.rewriter import Rewriter

    if stage == "lift":
        from pitchfork.selection.lift import lift_rules

        rw = Rewriter(_without(lift_rules(), hide))
    else:
        from pitchfork.targets import load_target

        info = load_target(stage)
        rw = Rewriter(_without(info.rules, hide), cost=info.cost)
    return lambda t: rw.rewrite(t) == t


def run_task(task: Task, snap: Optional["RuleSnapshot"] = None) -> dict[str, Any]:
    """Run one task against the rules of `snap` (synth/rulesnap.py; None: whatever this process has
    loaded); never raises (an internal error is a rejection with its reason)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"task": asdict(task), "key": task.key, "status": "error", "seconds": 0.0}
    try:
        if snap is not None:
            from synth.rulesnap import activate

            stage = "lift" if task.kind == "lift" else f"lower:{task.isa}"
            if task.rules and snap.stage_digest(stage) != task.rules:
                raise ValueError(f"task planned against rules {task.rules}, shipped {snap.stage_digest(stage)}")
            activate(snap)
        from synth.meter import metered

        with metered(task.work_cap) as m:
            out.update(_run(task))
        out["work"] = {"solver": m.solver, "steps": m.steps, "used": m.used}
    except Exception as e:  # noqa: BLE001 - a task's failure is data for the summary, not a crash
        out.update(status="error", reason=f"{type(e).__name__}: {e}")
    out["seconds"] = round(time.perf_counter() - t0, 3)
    # CPU seconds, for reports and for checking the meter's fixed rates (synth/meter.py); like
    # `seconds`, never read by a decision
    out["cpu_seconds"] = round(time.process_time() - c0, 3)
    return out


def _run(task: Task) -> dict[str, Any]:
    from synth.generalize import generalize

    term = parse(task.lhs)
    if task.kind == "lower" and task.uniform:
        return _run_uniform(task, term)
    if task.kind == "lift":
        from pitchfork.selection.cost import cost

        seen, cur = _lift_side(term, task.hide)
        grammar = replace(lifting_grammar(seen, cur), normal=_normal_form("lift", task.hide))
        bound = cost(cur)
    else:
        from synth.cost import bound_below, lowering_cost

        seen, cur = _lower_side(term, task.isa, task.hide)
        grammar = replace(lowering_grammar(seen, task.isa), normal=_normal_form(task.isa, task.hide))
        bound = bound_below(lowering_cost(cur, task.isa))  # strictly fewer instructions (arm64: cycles)
    seen = canonical(seen)
    info: dict[str, Any] = {"seen": to_text(seen), "current": to_text(cur), "bound": list(bound)}
    if not seen.args or not cur.args:
        return {**info, "status": "trivial"}
    t1 = time.perf_counter()
    insts = instructions_grammar(seen, task.isa, grammar) if task.kind == "lower" and task.instructions_pass else None
    try:
        res: SearchResult = synthesize(seen, grammar, bound, max_terms=task.max_terms, rlimit=task.rlimit,
                                       instructions_only=insts)
        if res.status == "budget" and task.kind == "lower" and task.topdown:
            res = _topdown(seen, grammar, bound, task, res)
        if res.status == "budget" and task.kind == "lower" and too_wide(seen, MAX_LANE_FACTOR):
            res = _split(seen, grammar, bound, task, res)
    except WorkCapExceeded as e:  # the task's work cap (synth/meter.py): over budget, with the reason
        res = SearchResult("budget", None, 0, 0, 0, str(e))
    info.update(
        search_seconds=round(time.perf_counter() - t1, 3),
        terms=res.terms,
        solver_calls=res.solver_calls,
        rounds=res.rounds,
        pruned=res.pruned,
        search_detail=res.detail,
    )
    if res.status != "found":
        status = {"exhausted": "optimal", "budget": "budget", "solver": "solver"}[res.status]
        bounded = _capped(_bounded_narrowing, seen, grammar, bound, task) if task.generalize else None
        if bounded is None and task.generalize and task.ranges:
            bounded = _capped(_bounded_ranges, seen, grammar, bound, task)
        if bounded is not None:
            return {**info, **bounded}
        return {**info, "status": status, "reason": res.detail}
    assert res.rhs is not None
    info.update(rhs=to_text(res.rhs), rhs_cost=list(grammar.cost(res.rhs)))
    if not task.generalize:
        return {**info, "status": "synthesized"}
    if task.kind == "lower" and task.prior:
        have = _composite(seen, task)
        if have <= grammar.cost(res.rhs)[0]:
            return {**info, "status": "subsumed-early",
                    "reason": f"the stage's rules and the first pass's reach cost {have}"}
    t2 = time.perf_counter()
    g = generalize(seen, res.rhs)
    if g is not None and task.kind == "lower" and g.level == "monomorphic":
        # children another rule set lowers to a one-op instruction are matched in that form too
        # (synth/alternates.py); only at fixed types, where the instruction's signature is known
        alts = instruction_alternates(seen, task.isa, ISA_PREFIX[task.isa])
        g2 = generalize(seen, res.rhs, try_types=False, alternates=alts) if alts else None
        if g2 is not None and g2.constants == g.constants:
            g = g2
    info["generalize_seconds"] = round(time.perf_counter() - t2, 3)
    if g is None:
        return {**info, "status": "rejected", "reason": "no generalization attempt verified"}
    out = {
        **info,
        "status": "synthesized",
        "rule": g.text,
        "level": g.level,
        "constants": g.constants,
        "instances": g.instances,
        "verdict": g.verdict,
    }
    if task.kind == "lower" and task.ranges:
        # where the corpus bounds the variables a still cheaper right side may hold: x86
        # `rounding_mul_shr(x_i16, y_i16, 15)` is pmulhrsw plus a fix-up for -32768 * -32768 in
        # general, pmulhrsw alone when y >= -32767 (the driver keeps both: the bounded rule only where
        # it gains, synth/output.py)
        cheaper = _capped(_bounded_ranges, seen, grammar, grammar.cost(res.rhs), task)
        if cheaper is not None:
            out["also"] = [{**info, **cheaper}]
    return out


def _composite(seen: Term, task: Task) -> int:
    """Instructions of `seen` as the stage's rules (less the hidden) and this round's first-pass rules
    (`Task.prior`) lower it, as the compiler lowers (synth/driver.py `_stage_cost`). A deep search's
    answer at most that cheap is a composition of rules the round has: synth/output.py drops it as
    subsumed once it is written beside them, so its generalization (Z3 proofs at every attempted
    constant relation and type instance, not metered; half the CPU of session 28's arm64 bring-up, most
    of it for rules never written) is not spent. The first pass ends before any deep search starts, so
    the check does not depend on the order the deep searches finish in."""
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from pitchfork.trs.rules import RuleSet, parse_rule
    from synth.cost import lowering_cost

    info = load_target(task.isa)
    prior = []
    for i, text in enumerate(task.prior):
        try:
            prior.append(parse_rule(f"prior_{i}: {text}", "<first pass>", 1))
        except Exception:  # noqa: BLE001 - a rule the parser does not take only subsumes nothing
            continue
    rw = Rewriter(RuleSet(list(_without(info.rules, task.hide).rules) + prior), cost=info.cost)
    return lowering_cost(expand_fpir(rw.rewrite(seen), TARGET_MAX_BITS.get(task.isa, 64)), task.isa)[0]


def _split(seen: Term, grammar: Grammar, bound: tuple, task: Task, res: SearchResult) -> SearchResult:
    """A reduction wider than the banks' lane factor searched as a fold of folds
    (synth/reduction_split.py): the inner reduction is a lowering task of its own (not generalized: the
    whole is; enumerator only, no top-down search, so up to three inner factors cost a few bounded
    enumerations and a deep round's time goes to the other left sides); the whole counts only if it
    beats the left side's bound."""
    from synth.reduction_split import split_reduction

    def inner_search(inner: Term) -> Optional[Term]:
        r = _run(replace(task, lhs=to_text(inner), generalize=False, ranges=(), uniform=(), topdown=False))
        return parse(r["rhs"]) if r.get("status") == "synthesized" and r.get("rhs") else None

    got = split_reduction(seen, inner_search)
    if got is None or not grammar.better(got[1], bound):
        return replace(res, detail=f"{res.detail}; split: no inner reduction gives a cheaper whole")
    return replace(res, status="found", rhs=got[1], detail=f"split: the inner {to_text(got[0])} searched")


def _capped(search: Callable[..., Optional[dict[str, Any]]], *args: Any) -> Optional[dict[str, Any]]:
    """A further search of the task (a bounded one) that finds nothing once the task's work cap is
    spent (synth/meter.py), instead of ending the task: a rule already found stays."""
    try:
        return search(*args)
    except WorkCapExceeded:
        return None


def reads_lane0(t: Term) -> bool:
    """Some instruction of t reads an operand that holds a uniform variable at lane 0 only
    (`OpSpec.lane0_args`; a constant count there is no use of the variable being uniform)."""
    return any(
        any(u.is_var and u.is_uniform_leaf for u in x.args[i].walk())
        for x in t.walk() if x.args for i in OPS[x.op].lane0_args
    )


def hoists_work(t: Term) -> bool:
    """Some node of t computes on uniform operands alone (pitchfork/targets/hoisted.py: hoisted out of
    the loop, no instructions in the lowering cost): the use an ISA without lane-0 instructions has of a
    uniform variable (arm64 smlal_mixed_bias: the bias `cast<i16>(w) * 128` of a broadcast weight)."""
    from pitchfork.targets.hoisted import hoisted

    return any(hoisted(x) for x in t.walk() if x.args)


def lane0_isa(isa: str) -> bool:
    """The ISA has an instruction that reads an operand at lane 0 only (x86's shifts by a count in a
    register): its uniform tasks (`Task.uniform`) look for a right side reading a uniform variable
    there; on any other ISA, for one that hoists work onto it (`hoists_work`)."""
    from pitchfork.targets import load_target

    load_target(isa)
    prefix = ISA_PREFIX[isa]
    return any(s.kind == "target" and n.startswith(prefix) and s.reads_lane0 for n, s in OPS.items())


def bounds_encodable_isa(isa: str) -> bool:
    """Some instruction of the ISA is encodable or not depending on an operand's bounds (its
    `encodable` test declares `reads_bounds`: HVX vasr's uniform runtime amount must lie in [0, 15],
    pitchfork/targets/hvx_emit.py `amount_encodable`): only there can a narrower range make a right
    side encodable (synth/driver.py `narrowed_uniform_ranges`)."""
    from pitchfork.targets import load_target

    load_target(isa)
    prefix = ISA_PREFIX[isa]
    return any(s.kind == "target" and n.startswith(prefix) and getattr(s.meta.get("encodable"), "reads_bounds", False)
               for n, s in OPS.items())


def uniform_predicates(vs: "list[Term]") -> tuple[str, ...]:
    """`is_variable(v) && is_uniform(v)` for each variable: a broadcast that is not a constant (a
    constant amount has its immediate forms; the rule is for a count only known at run time)."""
    return tuple(p for v in vs for p in (f"is_variable({v.name}_{v.type.name})", f"is_uniform({v.name}_{v.type.name})"))


def needs_uniform(t: Term) -> bool:
    """Some instruction of t is encodable only because an operand is uniform: with its uniform leaves
    plain it could not be emitted as the instruction (HVX `vasr_rnd_sat_h(x, y)` takes a uniform
    amount in range as its scalar Rt, pitchfork/targets/hvx_emit.py `amount_encodable`): the use an
    ISA without lane-0 instructions has of a uniform variable, besides hoisted work (`hoists_work`)."""
    from fpir.term import var
    from pitchfork.targets.base import encodable
    from synth.corpus import substitute

    for x in t.walk():
        if not x.args or OPS[x.op].kind != "target" or OPS[x.op].meta.get("encodable") is None:
            continue
        us = {u: var(u.name, u.type) for u in x.variables() if u.is_uniform_leaf}
        if us and encodable(x) and not encodable(substitute(x, us)):
            return True
    return False


def within(rng: "dict[str, tuple[int, int]]", f: Callable[[], Any]) -> Any:
    """f() with bounds analysis taking the variables named in `rng` at those ranges."""
    from pitchfork.selection.bounds import leaf_ranges

    with leaf_ranges(rng):
        return f()


#: one DagCost (and its memo) per (ISA, variable ranges): a term's cost under ranges differs from its
#: cost at its types' ranges (synth/cost.py's memo), so the two are never shared
_RANGED_COSTS: dict[tuple, Any] = {}
RANGED_COSTS_KEPT = 8


def ranged_cost(isa: str, rng: "dict[str, tuple[int, int]]") -> Callable[[Term], tuple]:
    """synth/cost.py `lowering_cost` with the variables named in `rng` at those ranges (an instruction's
    `encodable` test asks their bounds); `lowering_cost` itself when there are none."""
    from synth.cost import lowering_cost

    if not rng:
        return partial(lowering_cost, isa=isa)
    key = (isa, tuple(sorted(rng.items())))
    hit = _RANGED_COSTS.get(key)
    if hit is None:
        from pitchfork.selection.dagcost import DagCost
        from synth.cost import cost_width, node_cost

        if len(_RANGED_COSTS) >= RANGED_COSTS_KEPT:
            _RANGED_COSTS.clear()
        node = partial(node_cost, isa=isa)
        hit = _RANGED_COSTS[key] = DagCost(lambda t: within(rng, lambda: node(t)), cost_width(isa))
    return hit  # type: ignore[no-any-return]


def needed_ranges(seen: Term, ranges: tuple[tuple[int, int], ...],
                  holds: Callable[["dict[str, tuple[int, int]]"], bool]) -> tuple[str, ...]:
    """The bounds predicates (`range_predicates`) of the variables whose range `holds` needs: those
    without which (that variable back at its type's range, the others kept) it is False."""
    rng, preds = range_predicates(seen, ranges)
    need = [v for v in rng if not holds({k: r for k, r in rng.items() if k != v})]
    return tuple(p for p in preds if any(p.split("(", 1)[1].startswith(f"{v}_") for v in need))


def _run_uniform(task: Task, term: Term) -> dict[str, Any]:
    """A lowering left side searched with some variables uniform (`Task.uniform`): the same search
    (enumerator, then the one-instruction probe) with those variables as uniform leaves, so an
    instruction that reads an operand at lane 0 only (x86 `psra_uniform(x, y)`: vpsraw's count in
    an xmm register) is proven equal where that operand is a broadcast (fpir/z3enc.py: a uniform
    leaf is one symbol for every lane). The rule found states `is_variable(v) && is_uniform(v)` for
    those variables (`bounded`: synth/output.py checks its gain on an example with them uniform) and
    is generalized and verified at every type instance under it, as the rewriter checks it."""
    from fpir.term import var
    from synth.corpus import substitute, variable_order
    from synth.cost import bound_below
    from synth.generalize import generalize

    seen, cur = _lower_side(term, task.isa, task.hide)
    names = {f"v{i}" for i in task.uniform}
    order = variable_order(seen)
    seen = canonical(seen)
    plain = [var(f"v{j}", v.type) for j, v in enumerate(order) if v.name in names]
    info: dict[str, Any] = {"seen": to_text(seen), "current": to_text(cur)}
    if not plain or not seen.args or not cur.args:
        return {**info, "status": "trivial"}
    to_uniform = {v: var(v.name, v.type, uniform=True) for v in plain}
    back = {u: v for v, u in to_uniform.items()}
    searched = substitute(seen, to_uniform)
    # only right sides that read an operand at lane 0: any other one holds for every operand and is
    # the plain task's to find (and at equal cost the rewriter could not tell the two apart)
    # (checked on the polished candidate too: `v1 - v1` read at lane 0 is the constant 0)
    normal = _normal_form(task.isa, task.hide)
    uses = reads_lane0 if lane0_isa(task.isa) else (lambda t: hoists_work(t) or needs_uniform(t))
    # the variables at the ranges the corpus saw them in (`Task.ranges`) for the cost and the
    # encodable test: HVX vasr takes a uniform amount as Rt only where its bounds lie in [0, 15]
    # (mul's `min(w, 15)`, a uniform v1 in [0, 15] here); the right side stays proven for every input
    rng, _ = range_predicates(seen, task.ranges)
    cost = ranged_cost(task.isa, rng)

    def fits(t: Term, at: "dict[str, tuple[int, int]]") -> bool:
        return within(at, lambda: encodable_everywhere(t) and uses(t))

    grammar = replace(lowering_grammar(searched, task.isa), cost=cost,
                      normal=lambda t: within(rng, lambda: uses(t)) and normal(t), also=lambda t: fits(t, rng))
    # the current lowering with the same variables uniform: its work on them alone is hoisted too
    # (charged per vector, any candidate that hoists the same work would beat it)
    cur_u = substitute(cur, {v: var(v.name, v.type, uniform=True) for v in cur.variables() if v in to_uniform})
    bound = bound_below(cost(cur_u))
    info["bound"] = list(bound)
    t1 = time.perf_counter()
    try:
        res = synthesize(searched, grammar, bound, max_terms=task.max_terms, rlimit=task.rlimit)
        if res.status == "budget" and task.topdown:
            res = _uniform_topdown(searched, grammar, bound, task, res, rng)
    except WorkCapExceeded as e:
        res = SearchResult("budget", None, 0, 0, 0, str(e))
    info.update(search_seconds=round(time.perf_counter() - t1, 3), terms=res.terms, solver_calls=res.solver_calls,
                rounds=res.rounds, pruned=res.pruned, search_detail=res.detail)
    if res.status != "found" or res.rhs is None:
        status = {"exhausted": "optimal", "budget": "budget", "solver": "solver"}[res.status]
        return {**info, "status": status, "reason": res.detail}
    rhs = substitute(res.rhs, back)
    # a variable's range is a precondition of the rule where the right side needs it to be encodable
    # and cheaper (the compiler then applies it only where bounds(v) lie in that range)
    assume = uniform_predicates(plain) + needed_ranges(
        seen, task.ranges, lambda at: fits(res.rhs, at) and ranged_cost(task.isa, at)(res.rhs) < bound)
    info.update(rhs=to_text(rhs), rhs_cost=list(grammar.cost(res.rhs)))
    if not task.generalize:
        return {**info, "status": "synthesized", "bounded": " && ".join(assume)}
    g = generalize(seen, rhs, assume=assume)
    if g is None:
        return {**info, "status": "rejected", "reason": "no generalization attempt verified"}
    return {**info, "status": "synthesized", "bounded": " && ".join(assume), "rule": g.text, "level": g.level,
            "constants": g.constants, "instances": g.instances, "verdict": g.verdict}


def _topdown(seen: Term, grammar: Grammar, bound: tuple, task: Task, res: "SearchResult") -> "SearchResult":
    """The goal-directed search (synth/topdown.py) after the enumerator ran over budget; its counts
    are added to the enumerator's."""
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from synth.topdown import Context

    info = load_target(task.isa)
    rw = Rewriter(_without(info.rules, task.hide), cost=info.cost)
    bits = TARGET_MAX_BITS.get(task.isa, 64)
    ctx = Context(
        grammar_for=lambda g: replace(lowering_grammar(g, task.isa), normal=grammar.normal),
        lower_now=lambda g: expand_fpir(rw.rewrite(g), bits),
        expand=lambda g: expand_fpir(g, bits),
        max_terms=task.max_terms,
        rlimit=task.rlimit,
    )
    return _after_enumerator(seen, grammar, bound, ctx, res)


def _after_enumerator(seen: Term, root: Grammar, bound: tuple, ctx: "Context", res: "SearchResult") -> "SearchResult":
    """synth/topdown.py's search from `root` once the enumerator's result `res` ended over budget, with
    the enumerator's counts added to its own (a left side outside what it handles: the enumerator's
    verdict stands, the reason in its detail)."""
    from synth.topdown import topdown

    try:
        td = topdown(seen, root, bound, ctx, extra_rows=res.learned)
    except (FPIRTypeError, ValueError) as e:
        return replace(res, detail=f"{res.detail}; top-down: {type(e).__name__}: {e}")
    detail = td.detail if td.status == "found" else f"{res.detail}; {td.detail}"
    return replace(td, terms=res.terms + td.terms, solver_calls=res.solver_calls + td.solver_calls,
                   rounds=res.rounds + td.rounds, detail=detail, pruned=res.pruned)


#: the term budget of a sub-goal in a uniform task's top-down search, in multiples of the task's: its
#: grammar holds the hoisted leaves and each variable's sign flip besides the plain ones (x86's rounding
#: bit `1 & reinterpret<i16>(psrl(reinterpret<u16>(x_i16), min(y, 16) - 1))` is at level 2, after
#: 152,080 candidates; the plain top-down search gives a sub-goal a quarter of the task's)
UNIFORM_SUB_TERMS = 2
#: compound hoisted leaves per grammar of a uniform task's top-down search at most (`hoisted_leaves`)
MAX_HOISTED_LEAVES = 6


def hoisted_leaves(t: Term, expanded: Term, types: "frozenset[ScalarType]") -> tuple[Term, ...]:
    """Work on uniform operands alone that a right side for `t` may read, as level-0 leaves of its
    grammar: computed once outside the loop, it costs no instructions (synth/cost.py), but the
    enumerator counts each of its nodes as a level. x86 `rounding_shr(x_i16, y_u16)` with y uniform
    is `psra_uniform(x, min(y, 16)) + (psrl_uniform(x, min(y, 16) - 1) & 1)`, 4 instructions, at
    level 6 over the plain leaves (more than 22M candidates at level 4) and level 4 over these.
    They are: the clamped shift amounts over uniform variables alone (synth/topdown.py
    `clamped_amounts`: `min(y, 16)`), and the sub-terms of `t` and of its generic expansion
    `expanded` over uniform variables alone (`y - 1`, `i16(y > 0)`) with a variable replaced by its
    clamp (`min(y, 16) - 1`: the clamp changes no shift's value; the sub-terms themselves are what
    the generic lowering computes, one level up); of a type in `types`, the `MAX_HOISTED_LEAVES`
    smallest."""
    from pitchfork.trs.predicate import is_uniform_term
    from synth.corpus import substitute
    from synth.topdown import clamped_amounts

    def uniform_only(x: Term) -> bool:
        return bool(x.args) and bool(x.variables()) and is_uniform_term(x)

    base = [x for root in (t, expanded) for x in root.walk() if uniform_only(x)]
    clamps = [c for root in (t, expanded) for c in clamped_amounts(root) if uniform_only(c)]
    out = dict.fromkeys(clamps)
    for c in clamps:
        y = c.args[0] if c.op == "min" else None
        if y is None or not y.is_var:
            continue
        for x in base:
            if y in x.variables():
                out[substitute(x, {y: c})] = None
    keep = [x for x in out if x.type in types and x.type.bits > 1]
    return tuple(sorted(keep, key=lambda x: (sum(1 for _ in x.walk()), to_text(x)))[:MAX_HOISTED_LEAVES])


def _with_hoisted(grammar: Grammar, t: Term, expanded: "Term | tuple[Term, ...]") -> Grammar:
    """`grammar` with `t`'s hoisted leaves (`hoisted_leaves`, or the task's, `expanded` a tuple: those
    over `t`'s variables) after its own, and each per-lane variable
    reinterpreted to the other sign (a level-0 form, which the bank applies only to terms of level 1
    and up: `psrl_uniform(reinterpret<u16>(x_i16), ...)` is one instruction, the logical shift of a
    signed value), in its bank key too."""
    from fpir.ops import make

    flips = [make("reinterpret", v, type=v.type.with_sign(not v.type.signed))
             for v in sorted(set(t.variables()), key=lambda v: v.name) if v.type.bits > 1 and not v.is_uniform_leaf]
    hoisted = hoisted_leaves(t, expanded, grammar.types) if isinstance(expanded, Term) else expanded
    have = set(t.variables())  # a task's hoisted leaf over a variable this sub-goal lacks is no leaf of it
    extra = tuple(x for x in hoisted + tuple(f for f in flips if f.type in grammar.types)
                  if x not in grammar.leaves and x.type in grammar.types and set(x.variables()) <= have)
    if not extra:
        return grammar
    key = None if grammar.key is None else grammar.key + "|hoisted:" + ";".join(_leaf_key(x) for x in extra)
    return replace(grammar, leaves=grammar.leaves + extra, key=key)


def _uniform_topdown(seen: Term, grammar: Grammar, bound: tuple, task: Task, res: "SearchResult",
                     rng: "dict[str, tuple[int, int]]") -> "SearchResult":
    """The goal-directed search (synth/topdown.py) for a uniform task (`_run_uniform`) after its
    enumerator ran over budget: the root's grammar is the task's (its cost, and only right sides
    that use a uniform operand), each sub-goal's is its own lowering grammar at the task's cost and
    encodable test; every grammar takes its hoisted leaves (`hoisted_leaves`), which the sub-searches
    return as they are. The counts are added to the enumerator's."""
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from synth.topdown import SUB_BUDGET_DIVISOR, Context

    info = load_target(task.isa)
    rw = Rewriter(_without(info.rules, task.hide), cost=info.cost)
    bits = TARGET_MAX_BITS.get(task.isa, 64)
    normal = _normal_form(task.isa, task.hide)
    cost = grammar.cost

    def sub_grammar(g: Term) -> Grammar:
        gram = replace(lowering_grammar(g, task.isa), cost=cost, normal=normal,
                       also=lambda t: within(rng, lambda: encodable_everywhere(t)))
        return _with_hoisted(gram, g, task_hoisted)

    task_hoisted = hoisted_leaves(seen, expand_fpir(seen, bits), grammar.types)
    root = _with_hoisted(grammar, seen, task_hoisted)
    hoisted = frozenset(task_hoisted)
    ctx = Context(
        grammar_for=sub_grammar,
        lower_now=lambda g: expand_fpir(rw.rewrite(g), bits),
        expand=lambda g: expand_fpir(g, bits),
        # the sub-searches' budget, `max_terms // SUB_BUDGET_DIVISOR`, at UNIFORM_SUB_TERMS times the task's
        max_terms=task.max_terms * SUB_BUDGET_DIVISOR * UNIFORM_SUB_TERMS,
        rlimit=task.rlimit,
        leaves=hoisted,
    )
    return _after_enumerator(seen, root, bound, ctx, res)


def narrowings(t: Term) -> list[tuple[Term, Term]]:
    """(narrowing node, its variable) for every `cast<N>(x)` / `saturating_cast<N>(x)` of a variable
    to a narrower type in t (the places a bounds predicate `fits(x, N)` can make the two agree)."""
    out = []
    for x in t.walk():
        if x.op in ("cast", "saturating_cast") and x.args[0].is_var and x.type.bits < x.args[0].type.bits:
            if x.type.bits > 1 and (x, x.args[0]) not in out:
                out.append((x, x.args[0]))
    return out


def _bounded_narrowing(seen: Term, grammar: Grammar, bound: tuple, task: Task) -> Optional[dict[str, Any]]:
    """Paper section 4.3, safe truncation or saturation: when the left side narrows a variable x to N,
    search again with x restricted to N's range (examples clamped, the solver told `x fits N`): there
    truncating and saturating narrowing agree, and so may cheaper forms (a reinterpret, the other
    narrowing instruction). A right side found is a rule under `fits(x, N)`, generalized and
    re-verified with that predicate (the rewriter checks it with its bounds analysis)."""
    from synth.generalize import generalize

    for node, v in narrowings(seen)[:2]:
        lo, hi = max(v.type.min, node.type.min), min(v.type.max, node.type.max)
        res = synthesize(
            seen, grammar, bound, max_terms=task.max_terms, rlimit=task.rlimit, bounds={v.name: (lo, hi)}
        )
        if res.status != "found" or res.rhs is None:
            continue
        assume = (f"fits({v.name}_{v.type.name}, {node.type.name})",)
        g = generalize(seen, res.rhs, assume=assume)
        if g is None:
            continue
        return {
            "status": "synthesized",
            "rhs": to_text(res.rhs),
            "rhs_cost": list(grammar.cost(res.rhs)),
            "bounded": assume[0],
            "rule": g.text,
            "level": g.level,
            "constants": g.constants,
            "instances": g.instances,
            "verdict": g.verdict,
        }
    return None


def narrower_than_type(lo: int, hi: int, ty: Any) -> bool:
    """[lo, hi] leaves out some value of scalar type `ty`."""
    return lo > ty.min or hi < ty.max


def range_predicates(seen: Term, ranges: tuple[tuple[int, int], ...]) -> tuple[dict[str, tuple[int, int]], tuple[str, ...]]:
    """The bounds (variable name -> (lo, hi)) and predicates (`lower_bounded(v0_i16, -16320)`,
    `upper_bounded(...)`) for the variables of `seen` whose range is narrower than their type."""
    found: dict[str, tuple[int, int]] = {}
    preds: list[str] = []
    names = {v.name: v for v in seen.variables()}
    for i, (lo, hi) in enumerate(ranges):
        v = names.get(f"v{i}")
        if v is None or not narrower_than_type(lo, hi, v.type):
            continue
        lo, hi = max(lo, v.type.min), min(hi, v.type.max)
        found[v.name] = (lo, hi)
        if lo > v.type.min:
            preds.append(f"lower_bounded({v.name}_{v.type.name}, {lo})")
        if hi < v.type.max:
            preds.append(f"upper_bounded({v.name}_{v.type.name}, {hi})")
    return found, tuple(preds)


def _bounded_ranges(seen: Term, grammar: Grammar, bound: tuple, task: Task) -> Optional[dict[str, Any]]:
    """Bounds predicates from interval analysis: when no right side holds for every input, search
    again with the variables restricted to the ranges interval analysis gave them wherever the left
    side was found (`Task.ranges`; examples clamped, the solver told). A right side found there is a
    rule under `lower_bounded` / `upper_bounded` predicates on those variables (the rewriter checks
    them with the same bounds analysis), generalized and re-verified with them; each predicate the
    rule verifies without is dropped (the widest rule that holds)."""
    from synth.generalize import generalize

    rng, assume = range_predicates(seen, task.ranges)
    if not rng:
        return None
    if task.kind == "lower":  # the cost and the encodable test see the ranges too (`_run_uniform`)
        also = grammar.also
        grammar = replace(grammar, cost=ranged_cost(task.isa, rng),
                          also=None if also is None else lambda t: within(rng, lambda: also(t)))
    res = synthesize(seen, grammar, bound, max_terms=task.max_terms, rlimit=task.rlimit, bounds=rng)
    if res.status != "found" or res.rhs is None:
        return None
    g = generalize(seen, res.rhs, assume=assume)
    if g is None:
        return None
    rhs = res.rhs
    keep = needed_ranges(seen, task.ranges, lambda at: ranged_cost(task.isa, at)(rhs) < bound and (
        grammar.also is None or within(at, lambda: encodable_everywhere(rhs)))) if task.kind == "lower" else ()
    for drop in assume:  # the widest rule: a bound it does not need is not stated
        if drop in keep:  # the right side is encodable and cheaper only within it
            continue
        fewer = tuple(a for a in assume if a != drop)
        h = generalize(seen, res.rhs, assume=fewer) if fewer != assume else None
        if h is not None:
            assume, g = fewer, h
    return {
        "status": "synthesized",
        "rhs": to_text(res.rhs),
        "rhs_cost": list(grammar.cost(res.rhs)),
        "bounded": " && ".join(assume),
        "rule": g.text,
        "level": g.level,
        "constants": g.constants,
        "instances": g.instances,
        "verdict": g.verdict,
    }
