"""Lowering: FPIR terms to target instructions, per ISA (paper section 3.3), and generic expansions.

`select_instructions(term, target, isel)` is the whole instruction selector for one expression:

* isel="pitchfork": lift (pitchfork.selection.lift), then rewrite with the target's lowering TRS
  (rules/lower/<isa>.rules, cost = the target's cost model), then expand whatever FPIR op is left
  with the generic lowering (rules/lower/generic.rules: efficient expansions that need no wider type
  where one exists; the op's own definition as the last resort);
* isel="llvm": the "LLVM alone" baseline: no lifting and no target rules; the expression is emitted
  as generic LLVM vector IR as written, user-written FPIR ops are expanded with the same generic
  rules, and LLVM's own instruction selection decides.

Width convention (the paper's section 5.1): generic expansions never introduce a type wider than
the target's widest native lane (`TARGET_MAX_BITS`: 64 bits on x86-avx2 and arm64, 32 on hvx128)
when a rule can avoid it. So a 64-bit mul_shr / rounding_mul_shr never makes an i128 product (it
uses 32 x 32 -> 64-bit partial products), and on HVX a 32-bit one stays in 32-bit arithmetic (16-bit
partial products), as the paper's LLVM baseline did so that LLVM could compile every benchmark. Both
isels follow it; an op whose own operands or result are wider (widening_add on u64) keeps its width.

Invariant: the result contains only primitive ops and target instructions, and means exactly what
the input means (every rule involved is verified, see `pitchfork verify`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Generator, Optional

from fpir.ops import expansion, make
from fpir.opspec import OPS, spec
from fpir.term import Term
from fpir.trampoline import trampoline
from pitchfork.selection.bounds import bounds
from pitchfork.trs.pattern import Bindings
from pitchfork.trs.predicate import Streams
from pitchfork.trs.rewriter import Rewriter, RewriteStats
from pitchfork.trs.rules import NoRewrite, RuleSet, build_rhs, check_predicate

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"


@lru_cache(maxsize=1)
def generic_rules() -> RuleSet:
    path = RULES_DIR / "lower" / "generic.rules"
    return RuleSet.from_files([path] if path.exists() else [])


# Widest type (bits) generic code may introduce on each target: its widest native vector lane. HVX
# has no 64-bit lanes (LLVM scalarises <N x i64>), so on HVX a 32-bit mul_shr stays in 32 bits.
TARGET_MAX_BITS = {"x86-avx2": 64, "arm64": 64, "hvx128": 32}
DEFAULT_MAX_BITS = 64

_WIDTH: dict[Term, int] = {}


def widest(term: Term) -> int:
    """The widest element type (bits) of any node of the term."""
    hit = _WIDTH.get(term)
    if hit is None:
        stack: list[tuple[Term, bool]] = [(term, False)]
        while stack:  # post-order, entering only sub-terms not known yet (linear in new nodes)
            t, ready = stack.pop()
            if t in _WIDTH:
                continue
            if ready:
                _WIDTH[t] = max([t.type.bits] + [_WIDTH[a] for a in t.args])
                continue
            stack.append((t, True))
            stack.extend((a, False) for a in t.args if a not in _WIDTH)
        hit = _WIDTH[term]
    return hit


def _candidates(t: Term):  # type: ignore[no-untyped-def]
    """Right-hand sides of the generic rules rooted at t's op that match t, in file order. Through the
    rules' compiled matchers and predicates (pitchfork/trs/compiled.py: the same matches, in the same
    order, as `pattern.match` and `check_predicate`; rows that cannot match t are left out before
    matching), as the rewriter matches."""
    for rule, _pattern, matcher, pred in generic_rules().compiled().candidates_for(t):
        for terms, types in matcher(t, {}, {}):
            b = Bindings(terms, types)
            if pred is not None:
                if not pred(terms, types, bounds, None):
                    continue
            elif not check_predicate(rule, b, bounds):
                continue
            try:
                rhs = build_rhs(rule, b, bounds)
            except (NoRewrite, TypeError, ValueError):
                continue
            if rhs.type == t.type:
                yield rhs
                break  # one instance per rule


def _expand_node(t: Term) -> Term:
    """One FPIR node to an equivalent term without that node at its root (first matching rule)."""
    for rhs in _candidates(t):
        return rhs
    return expansion(t)


def _fold(t: Term) -> Term:
    """Fold selects and boolean and/or with a constant operand (left by rules on constant amounts)."""
    if t.op == "select" and t.args[0].is_const:
        return t.args[1] if t.args[0].value else t.args[2]
    if t.op in ("and", "or") and t.type.bits == 1:
        a, b = t.args
        for c, other in ((a, b), (b, a)):
            if c.is_const:
                absorbing = 0 if t.op == "and" else 1
                return c if c.value == absorbing else other
    return t


def expand_fpir(term: Term, max_bits: Optional[int] = DEFAULT_MAX_BITS) -> Term:
    """Replace every FPIR op by primitive ops (target instructions are kept).

    Each FPIR node takes the first generic rule (rules/lower/generic.rules, file order) whose full
    expansion needs no type wider than max(max_bits, the node's own widest type); when none does, the
    first matching rule; when none matches, the op's definition. Rules rooted at a primitive op
    (fusions such as the high half of a widening multiply) replace a node only when its plain
    expansion is wider than that bound. max_bits=None: always the first matching rule, no fusions.
    """
    memo: dict[Term, Term] = {}

    def allowed(t: Term) -> Optional[int]:
        if max_bits is None:
            return None
        return max([max_bits, t.type.bits] + [a.type.bits for a in t.args])

    # Recursive in form (`yield x` is "expand x"), run on an explicit stack by fpir/trampoline.py so
    # that 10,000-deep terms are fine.
    def go(t: Term) -> Generator[Term, Term, Term]:
        hit = memo.get(t)
        if hit is not None:
            return hit
        if not t.args:
            cur = t
        else:
            kind = spec(t.op).kind
            args = []
            for a in t.args:
                args.append((yield a))
            if all(a is b for a, b in zip(args, t.args)):
                cur = _fold(t)
            else:
                # Flags are kept: the arguments have the same values, so their facts still hold.
                cur = _fold(make(t.op, *args, type=t.type if spec(t.op).explicit_type else None, flags=t.attrs))
            if cur.args and spec(cur.op).kind == "fpir":  # (folding may leave a constant)
                # cur has expanded arguments and an FPIR op at its root
                limit = allowed(cur)
                first: Optional[Term] = None
                chosen: Optional[Term] = None
                for rhs in _candidates(cur):
                    full = yield rhs
                    if limit is None or widest(full) <= limit:
                        chosen = full
                        break
                    if first is None:
                        first = full
                if chosen is None:
                    chosen = first if first is not None else (yield expansion(cur))
                cur = chosen
            elif kind == "primitive" and max_bits is not None and t.op in generic_rules().index:
                limit = max(max_bits, t.type.bits)
                if widest(cur) > limit:
                    for rhs in _candidates(t):
                        fused = yield rhs
                        if widest(fused) <= limit:
                            cur = fused
                            break
        memo[t] = cur
        return cur

    return trampoline(go, term, shortcut=memo.get)


#: instructions (the first component of a target's cost) by which the e-graph's lowering must beat
#: greedy's to be kept. The target cost counts an FPIR op left for the generic expansion (and LLVM)
#: as a fixed number of instructions, and LLVM re-associates and combines such chains itself: on x86
#: gaussian3x3 the e-graph's re-associated sum of extending_adds is one instruction cheaper by the
#: estimate (76 vs 77), but LLVM's combines turn it into vpavgw/vpand/vpsllw code, 199 instructions per
#: iteration instead of 183 (+10% static cycles). A difference of one instruction is within the
#: estimate's resolution, so it keeps greedy's lowering (the frontend's own shape).
E_GRAPH_MARGIN = 2


@dataclass
class Selection:
    input: Term
    fpir: Term
    lowered: Term
    final: Term
    lift_stats: Optional[RewriteStats] = None
    lower_stats: Optional[RewriteStats] = None
    seconds: float = 0.0


def _canonical_target(target: object) -> str:
    from pitchfork.targets import canonical

    name = getattr(target, "name", target)
    try:
        return canonical(str(name))
    except ValueError:
        return str(name)


def select_instructions(term: Term, target: str, isel: str = "pitchfork", streams: Optional[Streams] = None,
                        unavailable: frozenset[str] = frozenset()) -> Selection:
    """`term` lifted, lowered for `target` and expanded (isel=llvm: expanded only). `streams` are the
    frontend's facts about which leaves read one stream of memory (`stream(...)` rule predicates);
    `unavailable`: target instructions the target's features lack (no rule producing one is used)."""
    import time

    from pitchfork.targets import load_target

    t0 = time.perf_counter()
    max_bits = TARGET_MAX_BITS.get(_canonical_target(target), DEFAULT_MAX_BITS)
    if isel == "llvm":
        final = expand_fpir(term, max_bits)
        return Selection(term, term, term, final, seconds=time.perf_counter() - t0)
    if isel != "pitchfork":
        raise ValueError(f"isel must be 'pitchfork' or 'llvm', not {isel!r}")
    from pitchfork.selection.lift import current_engine, lifter, normalize_shift_constants

    lw = lifter()
    egraph = current_engine() == "egraph"
    if egraph:  # equality saturation (pitchfork/selection/egraph), never worse than greedy
        from pitchfork.selection.egraph.engine import SELECTION_BUDGET, lift_egraph, prove

        # an e-graph result comes back unproved (defer): it is proved below only if it is kept
        res = lift_egraph(term, lw.rules, SELECTION_BUDGET, defer=True)
        lifted = res.term
        lw.stats.seconds = res.seconds
    else:
        lifted = lw.rewrite(normalize_shift_constants(term))
    info = load_target(target, unavailable=unavailable)
    rw = Rewriter(info.rules, cost=info.cost, streams=streams)
    lowered = rw.rewrite(lifted)
    if egraph and res.source == "egraph" and res.greedy_term is not None:
        # The e-graph's result is cheaper by the target-agnostic cost; it is kept only if it also
        # lowers to something cheaper by the target's cost (gaussian5x5's rows lift cheaper but lower
        # dearer on arm64 and hvx128), by at least E_GRAPH_MARGIN instructions: never worse than
        # greedy where the code is chosen. Only a kept result is proved equal to the input (engine.prove;
        # a discarded one cannot reach the output): if no proof holds, greedy's lifting is used and
        # res.note says why.
        rg = Rewriter(info.rules, cost=info.cost, streams=streams)
        lowered_greedy = rg.rewrite(res.greedy_term)
        ce, cg = info.cost(lowered), info.cost(lowered_greedy)
        if not (ce < cg and ce[0] <= cg[0] - E_GRAPH_MARGIN):
            lifted, lowered, rw = res.greedy_term, lowered_greedy, rg
        else:
            res = prove(res)
            if res.source != "egraph" or res.term is not lifted:  # (a stored result saturated afresh: not lowered)
                lifted, lowered, rw = res.greedy_term, lowered_greedy, rg
    if egraph:
        lw.stats.fired.update(res.greedy_fired)
    final = expand_fpir(lowered, max_bits)
    return Selection(term, lifted, lowered, final, lw.stats, rw.stats, time.perf_counter() - t0)
