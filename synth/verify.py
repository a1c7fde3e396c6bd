"""Verification of rewrite rules with Z3, at every type instance a rule can match.

For each rule, every assignment of its type variables to u1, u8, i8, ... i64 is tried. An instance
where the left side is ill-typed, or where the predicate is false for type reasons alone, cannot fire
and is skipped. For the others, wildcards become bit-vector variables, constant wildcards become
symbolic constants, computed constants on the right side become fresh variables tied to their
defining expression, and bounds predicates become assumptions on the inputs (sound because the
bounds analysis is). Z3 then proves `predicate => before == after` bit-exactly, or returns a
counterexample. A rule is VALID only if every instance is.

Flags (`add.nsw(x_T, y_T)`, fpir.ops.FlagSpec): a left side whose nodes carry a flag matches only
terms whose producer guarantees its fact (Halide's no-overflow rule for signed >= 32-bit arithmetic),
so the facts of the left side's flagged nodes are assumed: the proof is of `predicate and facts =>
before == after`. `is_uniform(x)` in the predicate (a conjunct) makes x one symbol for every lane, which
matters to right sides whose instructions read an operand at lane 0 only (fpir/z3enc.py: proof_lane). A flag on the right side is a new promise and is proved: under the same
assumptions, every fact the right side states must hold. Rules without flags get no extra assumption.

Every Z3 query is bounded by a resource limit (`rlimit`, Z3's deterministic step count) and runs in a
fresh context, never by wall-clock time, so a verdict does not depend on machine load or on which
rules were verified before in the same process.
"""

from __future__ import annotations

import itertools
import math
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import z3

from fpir.term import BROADCAST_NAME, Term, const, var
from fpir.text import FPIRSyntaxError, Raw, _Elaborator
from fpir.types import USER_TYPES, FPIRTypeError, ScalarType
from fpir.z3enc import (DEFAULT_RLIMIT, Verdict, equivalent, flag_facts, has_flags, isolated_solver, to_z3,
                        unknown_reason)
from pitchfork.trs.pattern import _CWILD_RE, parse_type_expr, split_wildcard
from pitchfork.trs.predicate import (VALUE_BOUNDS, IntDomain, PredicateError, PyDomain, Z3Domain, evaluate, is_const_expr,
                                     uses_bounds)
from pitchfork.trs.rules import Rule

_TVAR = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Za-z0-9]*)(?![A-Za-z0-9])")


@dataclass(frozen=True)
class InstanceResult:
    types: str
    verdict: Verdict


@dataclass(frozen=True)
class RuleResult:
    rule: Rule
    instances: tuple[InstanceResult, ...]
    error: str = ""

    @property
    def status(self) -> str:
        if self.error:
            return "INVALID"
        if not self.instances:
            return "UNKNOWN"
        if any(i.verdict.status == "INVALID" for i in self.instances):
            return "INVALID"
        if any(i.verdict.status == "UNKNOWN" for i in self.instances):
            return "UNKNOWN"
        return "VALID"

    def summary(self) -> str:
        if self.error:
            return f"INVALID ({self.error})"
        bad = [i for i in self.instances if i.verdict.status != "VALID"]
        if not bad:
            return f"VALID ({len(self.instances)} type instance{'s' if len(self.instances) != 1 else ''})"
        first = bad[0]
        return f"{first.verdict.status} at {first.types}: {first.verdict}"


def type_variables(rule: Rule) -> list[str]:
    names: set[str] = set()
    for text in (rule.lhs, rule.rhs, rule.predicate or ""):
        for m in _TVAR.finditer(text):
            names.add(m.group(1))
    return sorted(names)


class _Instance(_Elaborator):
    """Builds a rule side at one type instance, wildcards becoming variables."""

    def __init__(self, tvars: dict[str, ScalarType], symbols: dict[str, tuple[z3.BitVecRef, ScalarType]],
                 rhs_domain: Optional[Z3Domain] = None) -> None:
        super().__init__("<rule>", None)
        self.tvars, self.symbols, self.domain = tvars, symbols, rhs_domain
        self.assumptions: list[z3.BoolRef] = []
        # (computed constant's bit-vector, its type, the constant expression that defines it)
        self.defs: list[tuple[z3.BitVecRef, ScalarType, Raw]] = []
        self._fresh = 0

    def is_constant_expr(self, node: Raw) -> bool:
        return is_const_expr(node)

    def constant(self, node: Raw, expected: Optional[ScalarType]) -> Optional[Term]:
        if not is_const_expr(node):
            return None
        if node.kind == "int" or (node.kind == "neg" and node.args[0].kind == "int"):
            return super().constant(node, expected)
        if self.domain is None:  # left side: a constant wildcard
            if node.kind != "name":
                raise FPIRTypeError("constant expressions are not allowed on the left side")
            name, texpr = split_wildcard(node.text)
            t = texpr.eval(self.tvars) if texpr is not None else expected
            if t is None:
                raise FPIRTypeError(f"cannot infer the type of constant wildcard {name}")
            v = var(name, t)
            self.symbols[name] = (z3.BitVec(name, t.bits), t)
            return v
        if expected is None:
            raise FPIRTypeError("cannot infer the type of a constant expression")
        self._fresh += 1
        k = var(f"k{self._fresh}", expected)
        kz = z3.BitVec(k.name, expected.bits)
        ext = Z3_ext(kz, expected)
        self.assumptions.append(ext == evaluate(node, self.domain))
        self.defs.append((kz, expected, node))
        return k

    def name(self, node: Raw) -> Term:
        base, texpr = split_wildcard(node.text)
        if texpr is None:
            raise FPIRTypeError(f"wildcard {node.text} has no type")
        t = texpr.eval(self.tvars)
        if t is None:
            raise FPIRTypeError(f"type {texpr} undefined")
        if base in self.symbols and self.symbols[base][1] != t:
            raise FPIRTypeError(f"wildcard {base} used at two types")
        self.symbols[base] = (z3.BitVec(base, t.bits), t)
        return var(base, t)

    def type_param(self, node: Raw) -> Optional[ScalarType]:
        if node.tparam_text is None:
            return None
        t = parse_type_expr(node.tparam_text).eval(self.tvars)
        if t is None:
            raise FPIRTypeError(f"type {node.tparam_text} undefined")
        return t


def Z3_ext(x: z3.BitVecRef, t: ScalarType) -> z3.BitVecRef:
    from pitchfork.trs.predicate import Z3_WIDTH

    n = Z3_WIDTH - t.bits
    return z3.SignExt(n, x) if t.signed else z3.ZeroExt(n, x)


def _describe(tvars: dict[str, ScalarType]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(tvars.items())) or "(monomorphic)"


def verify_rule(rule: Rule, rlimit: int = DEFAULT_RLIMIT) -> RuleResult:
    """Verify every type instance of `rule`; each Z3 query may spend up to `rlimit` resource units."""
    tv = type_variables(rule)
    results: list[InstanceResult] = []
    for combo in itertools.product(USER_TYPES, repeat=len(tv)):
        tvars = dict(zip(tv, combo))
        for alt in rule.alternatives:
            symbols: dict[str, tuple[z3.BitVecRef, ScalarType]] = {}
            try:
                lhs = _Instance(tvars, symbols).elab(alt, None)
            except (FPIRTypeError, FPIRSyntaxError):
                continue  # the left side cannot match at this instance
            dom = Z3Domain(symbols, tvars)
            try:
                pred = evaluate(rule.pred_raw, dom) if rule.pred_raw is not None else z3.BoolVal(True)
            except PredicateError:
                continue  # e.g. a type function undefined at this instance: the rule cannot fire
            if isinstance(pred, bool):
                pred = z3.BoolVal(pred)
            if z3.is_false(z3.simplify(pred)):
                continue
            builder = _Instance(tvars, symbols, dom)
            try:
                rhs = builder.elab(rule.rhs_raw, lhs.type)  # type: ignore[arg-type]
            except (FPIRTypeError, FPIRSyntaxError, PredicateError) as e:
                msg = getattr(e, "message", str(e))
                results.append(InstanceResult(_describe(tvars), Verdict("INVALID", reason=f"right side: {msg}")))
                continue
            if rhs.type != lhs.type:
                results.append(InstanceResult(_describe(tvars), Verdict(
                    "INVALID", reason=f"right side has type {rhs.type}, left side {lhs.type}")))
                continue
            try:
                facts = flag_facts(lhs)
            except ValueError as e:
                results.append(InstanceResult(_describe(tvars), Verdict("UNKNOWN", reason=str(e))))
                continue
            assume = [pred, *dom.side, *builder.assumptions, *facts]
            env, reparam = _reparametrize(symbols, builder.defs, assume)
            if dom.uniform:
                top = {_uniform_arg(c) for c in _conjuncts(rule.pred_raw)} if rule.pred_raw is not None else set()
                if not dom.uniform <= top:
                    results.append(InstanceResult(_describe(tvars), Verdict(
                        "INVALID", reason="is_uniform(x) is only understood as a conjunct of the predicate")))
                    continue
                for n in sorted(dom.uniform):  # one symbol for every lane (fpir/z3enc.py)
                    env.setdefault(n, symbols[n][0])
            verdict = _prove_rhs_facts(rhs, reparam, rlimit, env) if has_flags(rhs) else None
            if verdict is None or verdict.valid:
                int_query = None if facts else IntQuery(rule, tvars, symbols, tuple(builder.defs))
                verdict = _prove(lhs, rhs, assume, reparam, rlimit, env, symbols, int_query)
            results.append(InstanceResult(_describe(tvars), verdict))
    if not results:
        # A rule that can never fire is a mistake (a typo in a type, a predicate false for every
        # type), not a rule we merely failed to prove.
        return RuleResult(rule, (), error="no type instance can fire: the left side is ill-typed or the "
                                          "predicate is false at every type instance")
    return RuleResult(rule, tuple(results))


@dataclass(frozen=True)
class IntQuery:
    """A rule instance's predicate and right-side constant definitions over Z3 integers
    (pitchfork.trs.predicate.IntDomain), for the integer-arithmetic proof of synth/verify_fallback.py,
    with symbols named like the variables of its encoding."""

    rule: Rule
    tvars: dict[str, ScalarType]
    symbols: dict[str, tuple[z3.BitVecRef, ScalarType]]
    defs: tuple[tuple[z3.BitVecRef, ScalarType, Raw], ...]

    def assumptions(self, fixed: dict[str, int]) -> Optional[tuple[list[z3.BoolRef], frozenset[str], bool]]:
        """(the assumptions with the `fixed` constants replaced by their values, the constants used
        as symbolic shift amounts or powers of two, whether they multiply or shift symbolic values
        by each other), or None if IntDomain cannot encode them exactly."""
        names: dict[str, z3.ArithRef] = {n: z3.Int(n) for n in self.symbols}
        names.update({kz.decl().name(): z3.Int(kz.decl().name()) for kz, _, _ in self.defs})
        names.update({n: z3.IntVal(v) for n, v in fixed.items()})
        dom = IntDomain(names, self.tvars)
        try:
            out = [evaluate(self.rule.pred_raw, dom)] if self.rule.pred_raw is not None else []
            out += [z3.Int(kz.decl().name()) == evaluate(node, dom) for kz, _, node in self.defs]
        except PredicateError:
            return None
        out = [z3.BoolVal(x) if isinstance(x, bool) else x for x in out]
        return [*out, *dom.side], frozenset(dom.symbolic_amounts), dom.nonlinear

    def values(self, name: str) -> Optional[list[int]]:
        """Every value the constant wildcard `name` can take under the predicate, found without a
        solver model (so the same on every run): the top-level conjuncts of the predicate that
        mention only this constant are evaluated for each value in a window around zero, and the
        window is proved (over integers) to hold all of them. None if there are more than
        SPLIT_LIMIT or the window cannot be proved."""
        if name not in self.symbols or self.rule.pred_raw is None:
            return None
        t = self.symbols[name][1]
        own = [c for c in _conjuncts(self.rule.pred_raw) if _constants(c) == {name} and not uses_bounds(c)]
        if not own:
            return None
        lo, hi = max(t.min, -4 * SPLIT_LIMIT), min(t.max, 4 * SPLIT_LIMIT)
        out: list[int] = []
        for v in range(lo, hi + 1):
            dom = PyDomain({name: v}, {}, self.tvars, lambda _t: (0, 0))
            try:
                ok = all(bool(evaluate(c, dom)) for c in own)
            except PredicateError:
                ok = False
            if ok:
                out.append(v)
                if len(out) > SPLIT_LIMIT:
                    return None
        if (lo, hi) != (t.min, t.max):  # no admissible value outside the window
            c = z3.Int(name)
            dom_i = IntDomain({name: c}, self.tvars)
            try:
                facts = [evaluate(x, dom_i) for x in own]
            except PredicateError:
                return None
            outside = z3.And(c >= t.min, c <= t.max, z3.Or(c < lo, c > hi))
            solver, _ = isolated_solver([*facts, *dom_i.side, outside], QUICK_RLIMIT)
            if solver.check() != z3.unsat:
                return None
        return out


def _conjuncts(node: Raw) -> list[Raw]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.kind == "call" and n.text == "land":
            stack.extend(n.args)
        else:
            out.append(n)
    return out


def _uniform_arg(node: Raw) -> str:
    """The wildcard of a predicate conjunct `is_uniform(x)` ("" for any other conjunct)."""
    if node.kind == "call" and node.text == "is_uniform" and node.args and node.args[0].kind == "name":
        return split_wildcard(node.args[0].text)[0]
    return ""


def _constants(node: Raw) -> set[str]:
    """The constant wildcards a predicate fragment mentions."""
    out, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n.kind == "name" and _CWILD_RE.match(n.text):
            out.add(n.text)
        stack.extend(n.args)
    return out


def _prove_rhs_facts(rhs: Term, assume: list[z3.BoolRef], rlimit: int, env: dict[str, z3.BitVecRef]) -> Verdict:
    """VALID if the assumptions imply every fact the right side's flags state (a rule may only
    promise what the left side guarantees)."""
    try:
        facts = flag_facts(rhs, env)
    except ValueError as e:
        return Verdict("UNKNOWN", reason=str(e))
    solver, _ctx = isolated_solver([*assume, z3.Not(z3.And(*facts))], rlimit)
    r = solver.check()
    if r == z3.unsat:
        return Verdict("VALID")
    if r == z3.unknown:
        return Verdict("UNKNOWN", reason=f"right side flags: {unknown_reason(solver)}")
    return Verdict("INVALID", reason="a flag on the right side states a fact the left side does not guarantee")


QUICK_RLIMIT = 2_000_000  # what the first, direct query gets (most rules need far less)
SPLIT_LIMIT = 160
JOINT_SPLIT_LIMIT = 512  # cases of a split on several shift constants at once (16-bit: 16 x 16)


def _prove(lhs: Term, rhs: Term, assume: list[z3.BoolRef], reparam: list[z3.BoolRef], rlimit: int,
           env: dict[str, z3.BitVecRef], symbols: dict[str, tuple[z3.BitVecRef, ScalarType]],
           int_query: Optional[IntQuery] = None) -> Verdict:
    """Cheapest proof first: equivalent() with a small budget; a case split on an input used as a
    shift amount (_split_on_shift_amount: a small budget per case); the multiplier fallbacks of
    synth/verify_fallback.py (multiplication uninterpreted, then integer arithmetic), which prove
    multiplier identities bit-blasting cannot afford; a case split on a rule constant (an eighth of
    the budget per case); the direct query with the whole budget. `reparam` is `assume` with constant
    wildcards expressed through `env` (_reparametrize), which the bit-vector queries use; `int_query`
    gives `assume` over Z3 integers, for the integer-arithmetic fallback.

    A rule constant used as a shift amount (`widening_shl(x_T, c0)`, `c0 << c2`) makes the integer
    query a case split inside nonlinear arithmetic, which Z3 handles badly; when the assumptions limit
    it to at most SPLIT_LIMIT values, the integer proof runs once per value instead (exact).

    A predicate that bounds an operand (`upper_bounded(x, 1 << c0)`) next to a product, or a left side
    that shifts a product right by a rule constant (`rounding_shr(widening_mul(x, y), c0)`,
    `rounding_mul_shr(x, y, c0)`: _shifted_product), makes both bit-vector queries hopeless at 32 bits
    (a 64-bit multiplier whose range decides the result): such instances, if the cheap stages fail,
    get the integer split with product bounds before the bit-vector split (_integer_split); it only
    returns VALID or a counterexample the bit-vector query confirms, so it decides nothing the later
    stages would have decided otherwise.

    Wide dividers and shifters by a symbolic amount (`x_u64 / c0` against `x_u64 >> log2(c0)`) defeat
    bit-blasting, but each value of the constant gives a query Z3 answers in milliseconds. A constant
    (a constant wildcard, a computed right-side constant or a log2 witness) whose admissible values the
    assumptions limit to at most SPLIT_LIMIT is enumerated exhaustively, so the split is exact.
    """
    from synth.verify_fallback import equivalent_int, fallback

    base = int_query.assumptions({}) if int_query is not None else None
    # A product or shift of rule constants by each other in the predicate (`c0 * c1` fits T) is a
    # 160-bit multiplier or shifter for bit-blasting: only such instances try the integer proof
    # (first); every other instance takes the same path as before it existed.
    int_first = base is not None and base[2]
    if int_first:
        early = _integer_split(lhs, rhs, assume, rlimit, int_query)
        if early is None and base is not None and not base[1]:
            v = equivalent_int(lhs, rhs, QUICK_RLIMIT, base[0])
            early = v if v.status == "VALID" else None
        if early is not None:
            return early
    quick = equivalent(lhs, rhs, reparam, min(rlimit, QUICK_RLIMIT), env)
    if quick.status != "UNKNOWN":
        return quick
    if rlimit > QUICK_RLIMIT:
        by_amount = _split_on_shift_amount(lhs, rhs, reparam, env, symbols)
        if by_amount is not None:
            return by_amount
    # The integer proof under assumptions only where it was tried first: elsewhere the bit-vector
    # case split below is the cheaper proof, as before.
    decisive = fallback(lhs, rhs, assume, rlimit, base[0] if (base is not None and int_first) else None)
    if decisive is not None:
        return decisive
    if not int_first and int_query is not None and (_bounds_facts(int_query.rule.pred_raw)
                                                    or _shifted_product(lhs)):
        bounded = _integer_split(lhs, rhs, assume, rlimit, int_query, product_bounds=True,
                                 confirm=(reparam, env))
        if bounded is not None:
            return bounded
    split = _split_on_constant(lhs, rhs, reparam, max(QUICK_RLIMIT, rlimit // 8), env, symbols)
    if split is not None and split.status != "UNKNOWN":
        return split
    if rlimit > QUICK_RLIMIT:
        return equivalent(lhs, rhs, reparam, rlimit, env)
    return quick


def _bounds_facts(node: Optional[Raw]) -> bool:
    """The predicate bounds an operand's value (upper_bounded, lower_bounded, fits, sum_fits)."""
    if node is None:
        return False
    if node.kind == "call" and node.text in VALUE_BOUNDS:
        return True
    return any(_bounds_facts(a) for a in node.args)


def _shifted_product(t: Term) -> bool:
    """The left side shifts a product of two non-constant operands right by a rule constant
    (`widening_mul(x, y) >> c0`, `rounding_shr(widening_mul(x, y), c0)`, or mul_shr /
    rounding_mul_shr themselves, whose definitions are those forms). With no bound in the predicate
    the product's range still decides the result (shifted by at least bits(T), it always fits T), and
    the product's interval lemma states it."""
    for n in t.walk():
        if n.op in ("mul_shr", "rounding_mul_shr") and _is_rule_constant(n.args[2]):
            factors = n.args[:2]  # the op is its definition's shifted widening_mul (fpir/ops.py)
        elif n.op in ("shr", "rounding_shr") and _is_rule_constant(n.args[1]) and n.args[0].op in ("mul", "widening_mul"):
            factors = n.args[0].args
        else:
            continue
        if not any(a.is_const or _is_rule_constant(a) for a in factors):
            return True
    return False


def _is_rule_constant(t: Term) -> bool:
    return t.op == "var" and bool(BROADCAST_NAME.match(t.name))


# Ops whose last operand is a shift amount. The integer split of a product-bounds proof fixes the rule
# constants given there (`rounding_shr(p, c0)` needs c0 known to be linear); the other integer proofs
# split on plain shifts' amounts only, as they did before the product-bounds stage existed.
_SHIFT_OPS = ("shl", "shr")
_FPIR_SHIFT_OPS = ("widening_shl", "widening_shr", "rounding_shr", "rounding_shl", "saturating_shl", "mul_shr",
                   "rounding_mul_shr")


def _integer_split(lhs: Term, rhs: Term, assume: list[z3.BoolRef], rlimit: int,
                   int_query: Optional[IntQuery], product_bounds: bool = False,
                   confirm: Optional[tuple[list[z3.BoolRef], dict[str, z3.BitVecRef]]] = None) -> Optional[Verdict]:
    """VALID if the integer proof succeeds for every value of a rule constant used as a shift amount
    (see _prove); None if there is no such constant or a case is not proved.

    `product_bounds` (rules whose predicate bounds an operand, _prove): each case's integer query
    narrows the variables by the bounds the case's assumptions state and gives every product its
    interval as a lemma (verify_fallback.equivalent_int), which turns "a truncating narrow of a
    product with a bounded factor is the saturating one" from a nonlinear search into linear
    arithmetic. `confirm` = (the bit-vector assumptions, env): a case the integer query refutes is
    checked by the bit-vector query at the counterexample's inputs, and a confirmed counterexample is
    the verdict (INVALID); otherwise the case is not proved (None)."""
    from synth.verify_fallback import equivalent_int

    if int_query is None:
        return None
    base = int_query.assumptions({})
    if base is None:
        return None
    amounts = set(base[1])
    shifts = _SHIFT_OPS + (_FPIR_SHIFT_OPS if product_bounds else ())
    for t in (lhs, rhs):
        for n in t.walk():
            if n.op in shifts and _is_rule_constant(n.args[-1]):
                amounts.add(n.args[-1].name)
    bounded = sorted((len(vs), name, vs) for name in sorted(amounts)
                     if (vs := int_query.values(name)) is not None)
    if not bounded:
        return None
    # Split on every bounded shift amount at once while the cases stay few (two shift constants,
    # `(widening_shl(x, c0) + widening_shl(y, c1)) * c2`, leave an If-chain per amount inside the
    # nonlinear query otherwise); else on the one with the fewest values, as before.
    chosen = [bounded[0]]
    for entry in bounded[1:]:
        if math.prod(len(vs) for _, _, vs in chosen) * entry[0] <= JOINT_SPLIT_LIMIT:
            chosen.append(entry)
    names = [name for _, name, _ in chosen]
    per_case = max(QUICK_RLIMIT, rlimit // 8) if len(chosen) == 1 else QUICK_RLIMIT
    if product_bounds:  # linear once the lemmas are in: a case that needs more is not this proof's
        per_case = QUICK_RLIMIT
    for combo in itertools.product(*(vs for _, _, vs in chosen)):
        fixed = dict(zip(names, combo))
        case = int_query.assumptions(fixed)
        if case is None:
            return None
        verdict = equivalent_int(lhs, rhs, per_case, case[0], fixed=fixed, product_bounds=product_bounds)
        if verdict.status == "INVALID" and confirm is not None:
            return _confirmed(lhs, rhs, verdict, fixed, confirm)
        if verdict.status != "VALID":
            return None
    return Verdict("VALID", reason=f"integer arithmetic{', product bounds' if product_bounds else ''}, "
                                   f"split on {', '.join(names)}")


def _confirmed(lhs: Term, rhs: Term, verdict: Verdict, fixed: dict[str, int],
               confirm: tuple[list[z3.BoolRef], dict[str, z3.BitVecRef]]) -> Optional[Verdict]:
    """The bit-vector query's own verdict with every variable of the two sides pinned to the integer
    counterexample (which holds the case's rule constants too), so the query is concrete and cheap:
    INVALID with its counterexample, or None if it does not refute the rule."""
    reparam, env = confirm
    values = {**verdict.counterexample, **fixed}
    pins: list[z3.BoolRef] = []
    for v in {v.name: v for t in (lhs, rhs) for v in t.variables()}.values():
        if v.name in env or v.name not in values:
            continue  # a constant expressed through its right-side copy (_reparametrize)
        pins.append(z3.BitVec(v.name, v.type.bits) == values[v.name] % (1 << v.type.bits))
    check = equivalent(lhs, rhs, [*reparam, *pins], QUICK_RLIMIT, env)
    return check if check.status == "INVALID" else None


def _split_on_constant(lhs: Term, rhs: Term, assume: list[z3.BoolRef], rlimit: int,
                       env: dict[str, z3.BitVecRef],
                       symbols: dict[str, tuple[z3.BitVecRef, ScalarType]]) -> Optional[Verdict]:
    from z3.z3util import get_vars

    inputs = {n for n in symbols if not _CWILD_RE.match(n)}
    seen: dict[str, z3.ExprRef] = {}
    for a in assume:
        for v in get_vars(a):
            if v.decl().name() not in inputs:
                seen[v.decl().name()] = v
    best: Optional[tuple[z3.ExprRef, list[z3.ExprRef]]] = None
    for v in seen.values():
        values = _enumerate(v, assume)
        if values is not None and (best is None or len(values) < len(best[1])):
            best = (v, values)
    if best is None:
        return None
    sym, values = best
    for val in values:
        verdict = equivalent(lhs, rhs, [*assume, sym == val], rlimit, env)
        if verdict.status != "VALID":
            return verdict
    return Verdict("VALID")


_SHIFTS = (z3.Z3_OP_BSHL, z3.Z3_OP_BLSHR, z3.Z3_OP_BASHR)


def _shift_amount_inputs(exprs: Sequence[z3.ExprRef], inputs: set[str]) -> dict[str, int]:
    """Input variables (by name) read by the amount of a shift by a non-constant amount in `exprs`,
    with the number of such shifts reading each."""
    from z3.z3util import get_vars

    out: dict[str, int] = {}
    seen: set[int] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if e.get_id() in seen or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        if e.decl().kind() in _SHIFTS and not z3.is_bv_value(e.arg(1)):
            for v in get_vars(e.arg(1)):
                if v.decl().name() in inputs:
                    out[v.decl().name()] = out.get(v.decl().name(), 0) + 1
        stack.extend(e.children())
    return out


def _split_on_shift_amount(lhs: Term, rhs: Term, assume: list[z3.BoolRef], env: dict[str, z3.BitVecRef],
                           symbols: dict[str, tuple[z3.BitVecRef, ScalarType]]) -> Optional[Verdict]:
    """The proof by cases on an input used as a shift amount, or None if there is none or a case is
    not decided within QUICK_RLIMIT (then the later stages of _prove decide, as before this one existed).

    Two differently built barrel shifters by the same symbolic amount (rounding_shr(x_u64, y_u64)'s
    definition shifts a 128-bit sum, x86.psrlv shifts x itself) defeat bit-blasting (hundreds of
    seconds), but each value of the amount leaves wiring that Z3 proves in milliseconds. The cases
    are y == k for every value k of y's type with |k| <= B (the widest type of the two sides) and the
    rest, y > B and y < -B, as one case each: together every value, so the split is exact; a case's
    counterexample is one of the rule. The input read by the most shifts is split on."""
    from fpir.opspec import has_lane_ops
    from synth.verify_fallback import multiplies

    if has_lane_ops(lhs) or has_lane_ops(rhs):
        return None  # cases on a lane-wise input would constrain one lane only (equivalent refuses them)
    if multiplies(lhs) or multiplies(rhs):
        return None  # every case keeps the multipliers bit-blasting cannot afford: the fallbacks' job
    inputs = {n for n in symbols if not _CWILD_RE.match(n) and n not in env}
    counts = _shift_amount_inputs([to_z3(lhs, env), to_z3(rhs, env)], inputs)
    if not counts:
        return None
    name = min(counts, key=lambda n: (-counts[n], n))
    sym, t = symbols[name]
    bound = max(n.type.bits for side in (lhs, rhs) for n in side.walk())
    cases = [sym == k for k in range(max(t.min, -bound), min(t.max, bound) + 1)]
    if bound < t.max:
        cases.append(sym > bound if t.signed else z3.UGT(sym, bound))
    if -bound > t.min:
        cases.append(sym < -bound)
    for case in cases:
        verdict = equivalent(lhs, rhs, [*assume, case], QUICK_RLIMIT, env)
        if verdict.status == "INVALID":
            return verdict
        if verdict.status != "VALID":
            return None
    return Verdict("VALID", reason=f"split on the shift amount {name}")


def _enumerate(sym: z3.ExprRef, assume: list[z3.BoolRef]) -> Optional[list[z3.ExprRef]]:
    """All values sym can take under the assumptions, or None if there are more than SPLIT_LIMIT."""
    s, ctx = isolated_solver(assume, QUICK_RLIMIT)
    local = sym.translate(ctx)
    values: list[z3.ExprRef] = []
    while len(values) <= SPLIT_LIMIT:
        r = s.check()
        if r == z3.unsat:
            return values
        if r != z3.sat:
            return None
        val = s.model().eval(local, model_completion=True)
        values.append(val.translate(sym.ctx))
        s.add(local != val)
    return None


def _reparametrize(symbols: dict[str, tuple[z3.BitVecRef, ScalarType]],
                   defs: Sequence[tuple[z3.BitVecRef, ScalarType, Raw]],
                   assume: list[z3.BoolRef]) -> tuple[dict[str, z3.BitVecRef], list[z3.BoolRef]]:
    """Express a constant wildcard copied to the right side at another type through that copy.

    `cast<u32>(x_u16) * c0 -> widening_mul(x_u16, c0)` has c0 : u32 on the left and a u16 copy k on
    the right, tied by ext(k) == ext(c0). Proving the two 32-bit products equal through that
    equation defeats Z3 (it bit-blasts two multipliers). Every admissible c0 is the image of exactly
    one admissible k, so writing c0 as k's value on the left (c0 := low bits of ext(k)) is an
    equivalent query in which both products are the same term.
    """
    env: dict[str, z3.BitVecRef] = {}
    pairs: list[tuple[z3.BitVecRef, z3.BitVecRef]] = []
    for kz, kt, node in defs:
        if node.kind != "name" or not _CWILD_RE.match(node.text) or node.text in env:
            continue
        if node.text not in symbols or symbols[node.text][0].size() < kt.bits:
            continue
        csym, ct = symbols[node.text]
        repl = z3.simplify(z3.Extract(ct.bits - 1, 0, Z3_ext(kz, kt)))
        env[node.text] = repl
        pairs.append((csym, repl))
    if not pairs:
        return env, assume
    return env, [z3.substitute(a, *pairs) for a in assume]


def _verify_text(args: tuple[str, str, int, int]) -> RuleResult:
    from pitchfork.trs.rules import parse_rule

    text, source, line, rlimit = args
    return verify_rule(parse_rule(text, source, line), rlimit)


def verify_rules(rules: Sequence[Rule], rlimit: int = DEFAULT_RLIMIT, jobs: int = 1,
                 progress: Optional[object] = None) -> Iterable[RuleResult]:
    """Verify rules, in parallel processes when jobs > 1; yields results in order."""
    if jobs <= 1:
        for r in rules:
            yield verify_rule(r, rlimit)
        return
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        yield from ex.map(_verify_text, [(r.text(), r.source, r.line, rlimit) for r in rules])
