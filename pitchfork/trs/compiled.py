"""Rules compiled for matching: patterns as matching functions, predicates as closures, an index by
root op and result type.

The interpreted forms (`pattern.match`, a generator that copies `Bindings` at every step, and
`predicate.evaluate`, which re-dispatches on the raw syntax tree at every call) stay the reference; this
module compiles each rule once, in the spirit of Halide's IRMatch and tinygrad's compiled matcher:

* `compile_pattern(p)` returns `m(term, terms, types) -> list of (terms, types)`: every way p matches
  the term, extending the given wildcard bindings, in exactly the order `pattern.match` yields them
  (operands left to right, a commutative op's written order before its swapped one). Operand patterns
  that are operations are checked against the operand's op before anything is bound.
* `compile_predicate(raw)` returns `f(terms, types, bounds, streams) -> bool` with the value and the
  errors of `rules.check_predicate` (PredicateError/KeyError -> False; both operands of && and || are
  evaluated, as the interpreter does, except that the &&s at the root stop at the first false
  operand, which gives the same value). A form it does not know is left to the interpreter.
* `CompiledRules(ruleset).candidates(op, type)` is the rules' (rule, pattern, matcher, predicate) rows
  for a node of that op and type, in index order: a pattern with a concrete result type (a cast to u8)
  is listed only under that type. Built once per (op, type). `candidates_for(term)` leaves out the rows
  whose operand patterns name ops the term's operands do not have (the matchers' first rejection),
  built once per (op, type, operand ops): what the rewriter tries at a node. The rows' matchers are
  the patterns generated as Python source (pitchfork/trs/matchgen.py: the same function as
  `compile_pattern(p)`, which answers for them whenever bindings are extended).

Invariant: compiled and interpreted forms agree on every term (tests/pitchfork/trs/test_compiled.py
checks it on random terms against every rule file), so the rewriter's results do not depend on which
it uses. Dictionaries a match returns are never mutated afterwards, so results share them freely.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional

from fpir.term import Term
from fpir.text import Raw, _int_value
from fpir.types import ScalarType
from pitchfork.trs.pattern import (COMMUTATIVE, PApp, PConst, PLit, Pattern, PWild, TypeExpr, _CWILD_RE,
                                   _constants_typed_as_verified, split_wildcard, type_expr_of_raw)
from pitchfork.trs.matchgen import matchers_for
from pitchfork.trs.predicate import PredicateError, is_stream, is_type_node, is_uniform_term


State = tuple[dict[str, Term], dict[str, ScalarType]]
Matcher = Callable[[Term, dict, dict], list]
Predicate = Callable[[dict, dict, Callable[[Term], tuple[int, int]], Any], bool]


# ---------------------------------------------------------------------------------------------
# Patterns


def compile_pattern(p: Pattern) -> Matcher:
    if isinstance(p, (PWild, PConst)):
        return _wild(p.name, p.type, isinstance(p, PConst))
    if isinstance(p, PLit):
        value = p.value

        def lit(t: Term, terms: dict, types: dict) -> list:
            return [(terms, types)] if t.op == "const" and t.attrs[0] == value else []

        return lit
    return _app(p)


def _wild(name: str, te: Optional[TypeExpr], const_only: bool) -> Matcher:
    type_match = te.matcher() if te is not None else None

    def wild(t: Term, terms: dict, types: dict) -> list:
        if const_only and t.op != "const":
            return []
        bound = terms.get(name)
        if bound is not None:
            return [(terms, types)] if bound is t else []
        if type_match is not None:
            out = type_match(t.type, types)
            if out is None:
                return []
            types = out
        terms = dict(terms)
        terms[name] = t
        return [(terms, types)]

    return wild


def _app(p: PApp) -> Matcher:
    op, te = p.op, p.type
    flags = frozenset(p.flags)
    orders = [p.args]
    if p.op in COMMUTATIVE and len(p.args) == 2 and p.args[0] != p.args[1]:
        orders.append((p.args[1], p.args[0]))
    from fpir.opspec import spec

    type_match = te.matcher() if te is not None else None
    hint = spec(op).arg_hint
    compiled = []
    for args in orders:
        ops = tuple((i, a.op) for i, a in enumerate(args) if type(a) is PApp)  # operand ops to check first
        # the positions of untyped constant wildcards: `_constants_typed_as_verified` can only refuse a
        # term with a constant at one of them, so it is asked only then
        const_at = tuple(i for i, a in enumerate(args) if isinstance(a, PConst) and a.type is None) \
            if hint is not None else ()
        compiled.append((tuple(compile_pattern(a) for a in args), ops, const_at, args))

    def app(t: Term, terms: dict, types: dict) -> list:
        if t.op != op:
            return []
        if flags and not flags <= set(t.attrs):
            return []
        targs = t.args
        out: list = []
        for fns, ops, const_at, pargs in compiled:
            # (plain loops rather than any(<generator>): a matcher runs at every candidate node)
            fits = True
            for i, o in ops:
                if targs[i].op != o:
                    fits = False
                    break
            if not fits:
                continue
            if const_at:
                for i in const_at:
                    if targs[i].op == "const":
                        fits = _constants_typed_as_verified(op, pargs, t)
                        break
                if not fits:
                    continue
            states: list = [(terms, types)]
            for f, ta in zip(fns, targs):
                if len(states) == 1:  # the usual case: one way to match so far
                    tm, ty = states[0]
                    states = f(ta, tm, ty)
                else:
                    nxt: list = []
                    for tm, ty in states:
                        nxt.extend(f(ta, tm, ty))
                    states = nxt
                if not states:
                    break
            if type_match is None:
                out.extend(states)
                continue
            for tm, ty in states:
                bound = type_match(t.type, ty)
                if bound is not None:
                    out.append((tm, bound))
        return out

    return app


def root_type(p: Pattern) -> Optional[ScalarType]:
    """The one result type a node must have for p to match it, when the pattern fixes it (casts)."""
    if isinstance(p, PApp) and p.type is not None and p.type.kind == "concrete":
        return p.type.concrete
    return None


# ---------------------------------------------------------------------------------------------
# Predicates (the match-time Python domain of predicate.evaluate, PyDomain)

Fn = Callable[[dict, dict, Any, Any], Any]  # (consts/terms, types, bounds, streams) -> value


class _Unsupported(Exception):
    """A predicate form this compiler does not know: the interpreter evaluates the rule's predicate."""


def compile_predicate(raw: Optional[Raw]) -> Optional[Predicate]:
    """The predicate as a closure, or None when it has a form only the interpreter handles."""
    if raw is None:
        return lambda terms, types, bounds, streams: True
    try:
        parts = [_expr(c) for c in _conjuncts(raw)]
    except _Unsupported:
        return None

    def pred(terms: dict, types: dict, bounds: Any, streams: Any) -> bool:
        s = streams or {}
        try:
            # The &&s at the root stop at the first false operand: the interpreter evaluates the rest
            # too, but whatever they give, or a PredicateError / KeyError they raise, the predicate is
            # false then as well (those errors mean false). Only a conjunct after a false one, often a
            # bounds analysis, is no longer computed.
            for part in parts:
                if not part(terms, types, bounds, s):
                    return False
            return True
        except (PredicateError, KeyError):
            return False

    return pred


def _conjuncts(raw: Raw) -> list[Raw]:
    """The operands of the chain of `&&` at the root of a predicate, left to right (raw itself when its
    root is not `&&`)."""
    out: list[Raw] = []
    stack = [raw]
    while stack:
        n = stack.pop()
        if n.kind == "call" and n.text == "land" and len(n.args) == 2:
            stack.extend(reversed(n.args))
        else:
            out.append(n)
    return out


def _raise(e: Exception) -> Fn:
    def f(*_: Any) -> Any:
        raise e

    return f


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    # (the operator module's functions where the value is Python's own operator: C calls)
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "div": lambda a, b: 0 if b == 0 else a // b, "mod": lambda a, b: 0 if b == 0 else a % b,
    "shl": lambda a, b: a << b if 0 <= b <= 512 else 0, "shr": operator.rshift,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}


def _type_of(te: TypeExpr) -> Callable[[dict], ScalarType]:
    if te.kind == "var":  # (the common form, without the evaluator's call)
        name = te.name

        def var(types: dict) -> ScalarType:
            t = types.get(name)
            if t is None:
                raise PredicateError(f"type {te} is not defined here")
            return t

        return var
    evaluate_type = te.evaluator()

    def f(types: dict) -> ScalarType:
        t = evaluate_type(types)
        if t is None:
            raise PredicateError(f"type {te} is not defined here")
        return t

    return f


def _static_type(node: Raw) -> Callable[[dict], ScalarType]:
    try:
        return _type_of(type_expr_of_raw(node))
    except Exception:  # noqa: BLE001 - rare static error: keep the interpreter's exact behaviour
        raise _Unsupported() from None


def _wild_name(node: Raw) -> str:
    if node.kind != "name":
        raise _Unsupported()
    try:
        return split_wildcard(node.text)[0]
    except Exception:  # noqa: BLE001
        raise _Unsupported() from None


def compile_value(node: Raw) -> Optional[Fn]:
    """`predicate.evaluate(node, PyDomain(...))` as a closure `f(terms, types, bounds, streams)` (the same
    value; PredicateError where that raises it), or None for a form only the interpreter handles. The
    right-hand sides' computed constants use it (pitchfork/trs/rhs.py)."""
    try:
        return _expr(node)
    except _Unsupported:
        return None


def _expr(node: Raw) -> Fn:  # noqa: C901 - one case per predicate form, as predicate.evaluate
    v = _int_value(node)
    if v is not None:
        return lambda tm, ty, b, s: v
    if node.kind == "name":
        text = node.text
        if _CWILD_RE.match(text):  # PyDomain.const_wild: the bound constant's value; unbound is a KeyError
            return lambda tm, ty, b, s: tm[text].value
        if text in ("true", "false"):
            val = text == "true"
            return lambda tm, ty, b, s: val
        return _raise(PredicateError(f"{text!r} cannot be used as a value here"))
    if node.kind == "neg":
        x = _expr(node.args[0])
        return lambda tm, ty, b, s: 0 - x(tm, ty, b, s)
    if node.kind == "lnot":
        x = _expr(node.args[0])
        return lambda tm, ty, b, s: not x(tm, ty, b, s)
    name, args = node.text, node.args
    if name in ("eq", "ne") and len(args) == 2 and is_type_node(args[0]) and is_type_node(args[1]):
        t0, t1 = type_expr_of_raw(args[0]).evaluator(), type_expr_of_raw(args[1]).evaluator()
        want = name == "eq"

        e0, e1 = type_expr_of_raw(args[0]), type_expr_of_raw(args[1])
        if e0.kind == "var" and e1.kind == "concrete":  # eq(T, u8): the usual form; types are interned
            n0, c1 = e0.name, e1.concrete
            return (lambda tm, ty, b, s: ty.get(n0) is c1) if want else (lambda tm, ty, b, s: ty.get(n0) is not c1)

        def type_eq(tm: dict, ty: dict, b: Any, s: Any) -> bool:
            a, c = t0(ty), t1(ty)
            same = a is not None and c is not None and a == c
            return same if want else not same

        return type_eq
    if name in _BINOPS and len(args) == 2:
        f, x = _BINOPS[name], _expr(args[0])
        k = _int_value(args[1])
        if k is not None:  # `bits(T) == 16`: the literal operand is not a call
            return lambda tm, ty, b, s: f(x(tm, ty, b, s), k)
        y = _expr(args[1])
        return lambda tm, ty, b, s: f(x(tm, ty, b, s), y(tm, ty, b, s))
    if name == "not" and len(args) == 1:
        x = _expr(args[0])
        return lambda tm, ty, b, s: ~x(tm, ty, b, s)
    if name in ("land", "lor") and len(args) == 2:
        x, y = _expr(args[0]), _expr(args[1])
        if name == "land":
            def land(tm: dict, ty: dict, b: Any, s: Any) -> Any:
                p, q = x(tm, ty, b, s), y(tm, ty, b, s)  # both evaluated, as the interpreter does
                return p and q

            return land

        def lor(tm: dict, ty: dict, b: Any, s: Any) -> Any:
            p, q = x(tm, ty, b, s), y(tm, ty, b, s)
            return p or q

        return lor
    if name == "is_pow2" and len(args) == 1:
        x = _expr(args[0])

        def is_pow2(tm: dict, ty: dict, b: Any, s: Any) -> bool:
            a = x(tm, ty, b, s)
            return a > 0 and a & (a - 1) == 0

        return is_pow2
    if name == "log2" and len(args) == 1:
        x = _expr(args[0])

        def log2(tm: dict, ty: dict, b: Any, s: Any) -> int:
            a = x(tm, ty, b, s)
            if a <= 0:
                raise PredicateError("log2 of a non-positive value")
            return a.bit_length() - 1

        return log2
    if name in ("bits", "tmin", "tmax") and len(args) >= 1:
        tf = _static_type(args[0])
        get = operator.attrgetter({"bits": "bits", "tmin": "min", "tmax": "max"}[name])
        return lambda tm, ty, b, s: get(tf(ty))
    if name in ("is_signed", "is_unsigned") and len(args) >= 1:
        tf, want = _static_type(args[0]), name == "is_signed"
        return lambda tm, ty, b, s: tf(ty).signed == want
    if name == "represents" and len(args) >= 2:
        wf, nf = _static_type(args[0]), _static_type(args[1])
        return lambda tm, ty, b, s: wf(ty).can_represent(nf(ty))
    if name in ("upper_bounded", "lower_bounded") and len(args) == 2:
        w, x = _wild_name(args[0]), _expr(args[1])
        upper = name == "upper_bounded"

        def bounded(tm: dict, ty: dict, b: Any, s: Any) -> bool:
            v = x(tm, ty, b, s)  # the bound first, then the wildcard's interval (the interpreter's order)
            return b(tm[w])[1] <= v if upper else b(tm[w])[0] >= v

        return bounded
    if name == "fits" and len(args) == 2:
        w = _wild_name(args[0])
        tf = _static_type(args[1])

        def fits(tm: dict, ty: dict, b: Any, s: Any) -> bool:
            t = tf(ty)
            lo, hi = b(tm[w])
            return t.min <= lo and hi <= t.max

        return fits
    if name == "sum_fits" and len(args) >= 2:
        ws = [_wild_name(a) for a in args[:-1]]
        tf = _static_type(args[-1])

        def sum_fits(tm: dict, ty: dict, b: Any, s: Any) -> bool:
            t = tf(ty)
            bs = [b(tm[n]) for n in ws]
            return t.min <= sum(x[0] for x in bs) and sum(x[1] for x in bs) <= t.max

        return sum_fits
    if name == "is_variable" and len(args) == 1:
        w = _wild_name(args[0])
        return lambda tm, ty, b, s: not tm[w].is_const
    if name in ("is_uniform", "is_varying") and len(args) == 1:
        w, want = _wild_name(args[0]), name == "is_uniform"
        return lambda tm, ty, b, s: uniform(tm[w]) == want
    if name == "stream":
        ws = [_wild_name(a) for a in args]
        return lambda tm, ty, b, s: is_stream([tm[n] for n in ws], s)
    raise _Unsupported()


_UNIFORM: dict[Term, bool] = {}


def uniform(term: Term) -> bool:
    """predicate.is_uniform_term, memoised per interned term (the walk is linear in the term's size,
    and a rewrite asks it about every sub-term of a chain)."""
    hit = _UNIFORM.get(term)
    if hit is None:
        if len(_UNIFORM) > 500_000:
            _UNIFORM.clear()
        hit = _UNIFORM[term] = is_uniform_term(term)
    return hit


# ---------------------------------------------------------------------------------------------
# The index


class CompiledRules:
    """A RuleSet's rules compiled, indexed by (root op, result type)."""

    def __init__(self, index: dict[str, list]) -> None:
        self.index = index
        self._by_op: dict[str, list] = {}
        self._by_op_type: dict[tuple[str, ScalarType], list] = {}
        self._by_shape: dict[tuple[str, int, bool, tuple[str, ...]], list] = {}

    def _op_rows(self, op: str) -> list:
        rows = self._by_op.get(op)
        if rows is None:
            entries = self.index.get(op, [])
            patterns = [p for _r, p in entries]
            # the matchers generated as Python source (pitchfork/trs/matchgen.py), the closures of
            # compile_pattern behind them for calls that extend bindings
            matchers = matchers_for(patterns, compile_pattern, op)
            rows = [(rule, pattern, m, compile_predicate(rule.pred_raw), root_type(pattern))
                    for (rule, pattern), m in zip(entries, matchers)]
            self._by_op[op] = rows
        return rows

    def candidates(self, op: str, t: ScalarType) -> list:
        """(rule, pattern, matcher, predicate or None) for a node of this op and type, in index order."""
        key = (op, t)
        rows = self._by_op_type.get(key)
        if rows is None:
            rows = [(r, p, m, f) for r, p, m, f, rt in self._op_rows(op) if rt is None or rt == t]
            self._by_op_type[key] = rows
        return rows

    def candidates_for(self, t: Term) -> list:
        """`candidates(t.op, t.type)` without the rows that cannot match `t` because, in each of the
        pattern's operand orders, an operand pattern that is an operation names another op than t's
        operand there: the rule's matcher rejects exactly those before binding anything (`_app`), so
        the rows left give the same matches in the same order. Kept per (op, type, the operands' ops)."""
        # (the type enters the key as its two fields, as in fpir.term.intern: no Python __hash__ call;
        # the operand ops spelled out for the usual arities rather than through a generator)
        args, ty = t.args, t.type
        n = len(args)
        ops = (args[0].op, args[1].op) if n == 2 else (args[0].op,) if n == 1 else tuple(a.op for a in args)
        key = (t.op, ty.bits, ty.signed, ops)
        rows = self._by_shape.get(key)
        if rows is None:
            rows = [row for row in self.candidates(t.op, ty) if _operand_ops_fit(row[1], ops)]
            self._by_shape[key] = rows
        return rows


def _operand_ops_fit(p: PApp, arg_ops: tuple[str, ...]) -> bool:
    """Whether some operand order of `p` (as `_app` tries them) has every operation operand's op equal
    to the term operand's op at its position."""
    orders = [p.args]
    if p.op in COMMUTATIVE and len(p.args) == 2 and p.args[0] != p.args[1]:
        orders.append((p.args[1], p.args[0]))
    return any(all(type(a) is not PApp or (i < len(arg_ops) and arg_ops[i] == a.op) for i, a in enumerate(args))
               for args in orders)
