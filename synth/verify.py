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
before == after`. A flag on the right side is a new promise and is proved: under the same
assumptions, every fact the right side states must hold. Rules without flags get no extra assumption.

Every Z3 query is bounded by a resource limit (`rlimit`, Z3's deterministic step count) and runs in a
fresh context, never by wall-clock time, so a verdict does not depend on machine load or on which
rules were verified before in the same process.
"""

from __future__ import annotations

import itertools
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import z3

from fpir.term import Term, const, var
from fpir.text import FPIRSyntaxError, Raw, _Elaborator
from fpir.types import USER_TYPES, FPIRTypeError, ScalarType
from fpir.z3enc import DEFAULT_RLIMIT, Verdict, equivalent, flag_facts, has_flags, isolated_solver, unknown_reason
from pitchfork.trs.pattern import _CWILD_RE, parse_type_expr, split_wildcard
from pitchfork.trs.predicate import PredicateError, Z3Domain, evaluate, is_const_expr
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
            verdict = _prove_rhs_facts(rhs, reparam, rlimit, env) if has_flags(rhs) else None
            if verdict is None or verdict.valid:
                verdict = _prove(lhs, rhs, assume, reparam, rlimit, env, symbols)
            results.append(InstanceResult(_describe(tvars), verdict))
    if not results:
        # A rule that can never fire is a mistake (a typo in a type, a predicate false for every
        # type), not a rule we merely failed to prove.
        return RuleResult(rule, (), error="no type instance can fire: the left side is ill-typed or the "
                                          "predicate is false at every type instance")
    return RuleResult(rule, tuple(results))


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


def _prove(lhs: Term, rhs: Term, assume: list[z3.BoolRef], reparam: list[z3.BoolRef], rlimit: int,
           env: dict[str, z3.BitVecRef], symbols: dict[str, tuple[z3.BitVecRef, ScalarType]]) -> Verdict:
    """Cheapest proof first: equivalent() with a small budget; the multiplier fallbacks of
    synth/verify_fallback.py (multiplication uninterpreted, then integer arithmetic), which prove
    multiplier identities bit-blasting cannot afford; a case split on a rule constant (an eighth of
    the budget per case); the direct query with the whole budget. `reparam` is `assume` with constant
    wildcards expressed through `env` (_reparametrize), which the bit-vector queries use.

    Wide dividers and shifters by a symbolic amount (`x_u64 / c0` against `x_u64 >> log2(c0)`) defeat
    bit-blasting, but each value of the constant gives a query Z3 answers in milliseconds. A constant
    (a constant wildcard, a computed right-side constant or a log2 witness) whose admissible values the
    assumptions limit to at most SPLIT_LIMIT is enumerated exhaustively, so the split is exact.
    """
    from synth.verify_fallback import fallback

    quick = equivalent(lhs, rhs, reparam, min(rlimit, QUICK_RLIMIT), env)
    if quick.status != "UNKNOWN":
        return quick
    decisive = fallback(lhs, rhs, assume, rlimit)
    if decisive is not None:
        return decisive
    split = _split_on_constant(lhs, rhs, reparam, max(QUICK_RLIMIT, rlimit // 8), env, symbols)
    if split is not None and split.status != "UNKNOWN":
        return split
    if rlimit > QUICK_RLIMIT:
        return equivalent(lhs, rhs, reparam, rlimit, env)
    return quick


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
