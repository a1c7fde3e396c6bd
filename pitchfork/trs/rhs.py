"""Right-hand sides compiled once into builders: closures that build a rule's right side under match
bindings without re-reading its syntax tree.

`rules.RhsBuilder` (fpir.text's elaborator, run on an explicit stack of generators) is the definition:
at every node it asks whether the node is a constant expression, splits the op name and its flags,
looks up the op's spec, checks arity and type parameters, then builds. All of that depends on the
rule's text alone, so `compile_rhs` does it once per right side and leaves the builder only what
depends on the bindings: the wildcards' terms and types, the constants computed from them, the
argument type hints, and `fpir.ops.make`.

Invariant: `compile_rhs(raw)(b, bounds, expected)` returns the very term (interned: the same object)
`RhsBuilder(b, bounds).elab(raw, expected)` returns, and raises NoRewrite wherever that raises an
FPIRSyntaxError or NoRewrite (the only outcomes `rules.build_rhs` distinguishes). Right sides are a
few levels deep, so plain recursion is used. tests/pitchfork/trs/test_rhs.py checks both builders
against each other on every right side tried while selecting the micro-benchmark corpus (three ISAs)
and while compiling three benchmarks (three ISAs).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from fpir.opspec import known_op, spec, split_flags
from fpir.term import Term, const
from fpir.text import SHIFT_AMOUNT, Raw, retype_shift_constant
from fpir.types import FPIRTypeError, ScalarType, is_type_name, parse_type, u1
from fpir.ops import make
from pitchfork.trs.compiled import compile_value
from pitchfork.trs.pattern import _CWILD_RE, Bindings, parse_type_expr, split_wildcard
from pitchfork.trs.predicate import PredicateError, PyDomain, evaluate, is_const_expr

#: (bindings, bounds, expected type) -> term
Builder = Callable[[Bindings, Callable[[Term], tuple[int, int]], Optional[ScalarType]], Term]
#: what a compiled node runs: (context, expected type) -> term
_Node = Callable[["_Context", Optional[ScalarType]], Term]


class _Context:
    """One build's bindings; the constant-evaluation domain is made only if a constant is computed."""

    __slots__ = ("b", "bounds", "_domain")

    def __init__(self, b: Bindings, bounds: Callable[[Term], tuple[int, int]]) -> None:
        self.b, self.bounds, self._domain = b, bounds, None

    def domain(self) -> PyDomain:
        if self._domain is None:
            consts = {k: v.value for k, v in self.b.terms.items() if _CWILD_RE.match(k)}
            self._domain = PyDomain(consts, self.b.terms, self.b.types, self.bounds)
        return self._domain


def compile_rhs(raw: Raw, no_rewrite: type[Exception]) -> Builder:
    """The builder of right side `raw` (see the module docstring); it raises `no_rewrite`
    (`rules.NoRewrite`, passed in: this module sits below rules.py) where the rule cannot fire."""
    root = _compile(raw, no_rewrite)

    def build(b: Bindings, bounds: Callable[[Term], tuple[int, int]], expected: Optional[ScalarType] = None) -> Term:
        return root(_Context(b, bounds), expected)

    return build


def _fail(no_rewrite: type[Exception], message: str) -> _Node:
    def f(ctx: _Context, expected: Optional[ScalarType]) -> Term:
        raise no_rewrite(message)

    return f


def _compile(node: Raw, no_rewrite: type[Exception]) -> _Node:  # noqa: C901 - one case per form, as _elab
    if is_const_expr(node):  # RhsBuilder.constant: computed when the rule fires, typed by the context
        # the value as a compiled closure (compiled.compile_value: evaluate's value, its PredicateError),
        # the interpreter for a form it does not know
        value = compile_value(node)

        def constant(ctx: _Context, expected: Optional[ScalarType]) -> Term:
            if expected is None:
                raise no_rewrite(f"no type for constant expression at column {node.column}")
            try:
                if value is not None:
                    v = value(ctx.b.terms, ctx.b.types, ctx.bounds, None)
                else:
                    v = evaluate(node, ctx.domain())
            except PredicateError as e:
                raise no_rewrite(str(e)) from None
            if not expected.contains(int(v)):
                raise no_rewrite(f"constant {v} does not fit {expected}")
            return const(int(v), expected)

        return constant
    if node.kind == "name":
        try:
            key = split_wildcard(node.text)[0]
        except Exception as e:  # noqa: BLE001 - raised where the interpreter raises it: when built
            err = e

            def bad_name(ctx: _Context, expected: Optional[ScalarType]) -> Term:
                raise err

            return bad_name
        return lambda ctx, expected: ctx.b.terms[key]
    if node.kind == "neg":
        inner = _compile(node.args[0], no_rewrite)

        def neg(ctx: _Context, expected: Optional[ScalarType]) -> Term:
            x = inner(ctx, expected)
            return _apply(no_rewrite, "sub", [const(0, x.type), x])

        return neg
    if node.kind == "lnot":
        inner = _compile(node.args[0], no_rewrite)

        def lnot(ctx: _Context, expected: Optional[ScalarType]) -> Term:
            x = inner(ctx, u1)
            if x.type != u1:
                raise no_rewrite(f"'!' needs a u1 operand, got {x.type}")
            return _apply(no_rewrite, "not", [x])

        return lnot
    return _call(node, no_rewrite)


def _call(node: Raw, no_rewrite: type[Exception]) -> _Node:
    name, args = node.text, node.args
    if name in ("lor", "land"):
        parts = [_compile(a, no_rewrite) for a in args]
        op = "or" if name == "lor" else "and"

        def logic(ctx: _Context, expected: Optional[ScalarType]) -> Term:
            terms = [p(ctx, u1) for p in parts]
            if any(t.type != u1 for t in terms):
                raise no_rewrite(f"'{'||' if name == 'lor' else '&&'}' needs u1 operands")
            return _apply(no_rewrite, op, terms)

        return logic
    if name == "x" and len(args) == 1 and node.tparam_text is None:
        return _compile(args[0], no_rewrite)  # the paper's broadcast notation x(c)
    tparam: Optional[Callable[[dict], Optional[ScalarType]]] = None
    if node.tparam_text is not None:  # RhsBuilder.type_param: a type expression over the bound types
        try:
            te = parse_type_expr(node.tparam_text)
        except Exception as e:  # noqa: BLE001 - raised where the interpreter raises it: when built
            return _fail(no_rewrite, str(e))
        tparam = te.evaluator()
    fixed: Optional[ScalarType] = None
    if tparam is None and is_type_name(name):
        fixed, name = parse_type(name), "cast"
    name, flags = split_flags(name)
    if not known_op(name):
        return _fail(no_rewrite, f"unknown operation {name!r}")
    s = spec(name)
    typed = tparam is not None or fixed is not None
    if s.explicit_type and not typed:
        return _fail(no_rewrite, f"{name} needs a type: {name}<t>(...)")
    if not s.explicit_type and typed:
        if tparam is not None:  # the type is evaluated (and may be undefined) before this error
            text = node.tparam_text

            def untyped(ctx: _Context, expected: Optional[ScalarType]) -> Term:
                if tparam(ctx.b.types) is None:
                    raise no_rewrite(f"type {text} undefined")
                raise no_rewrite(f"{name} takes no type parameter")

            return untyped
        return _fail(no_rewrite, f"{name} takes no type parameter")
    if len(args) != s.arity:
        return _fail(no_rewrite, f"{name} takes {s.arity} argument(s), got {len(args)}")
    hint, explicit, op = s.arg_hint, s.explicit_type, name
    parts = [_compile(a, no_rewrite) for a in args]
    n = len(args)
    # the operands that are not constant expressions are built first (their hint knows no sibling),
    # then the constant ones, typed by the hint from the others' types: both decided by the text alone
    first = tuple(i for i, a in enumerate(args) if not is_const_expr(a))
    later = tuple(i for i, a in enumerate(args) if is_const_expr(a))
    # which of the first ones are given their hint: a wildcard's builder ignores the type it is given,
    # so its hint (pure, and a loop over the signatures for a target op) is not computed
    hinted = tuple(hint is not None and _takes_type(args[i]) for i in range(n))
    nothing_known: list[Optional[ScalarType]] = [None] * n  # (hints only read it)
    shift = op in SHIFT_AMOUNT  # retype_shift_constant changes nothing for other ops
    text = node.tparam_text

    def call(ctx: _Context, expected: Optional[ScalarType]) -> Term:
        if tparam is not None:
            ttype = tparam(ctx.b.types)
            if ttype is None:
                raise no_rewrite(f"type {text} undefined")
        else:
            ttype = fixed
        inner_expected = ttype if explicit else expected
        terms: list[Any] = [None] * n
        for i in first:
            terms[i] = parts[i](ctx, hint(i, nothing_known, inner_expected) if hinted[i] else None)
        if later:
            known = [t.type if t is not None else None for t in terms]
            for i in later:
                h = hint(i, known, inner_expected) if hint else None
                if h is None and hint:  # e.g. rounding_shr(u8(255), 8): the constants typed so far
                    h = hint(i, [t.type if t is not None else None for t in terms], inner_expected)
                terms[i] = parts[i](ctx, h)
        if shift:
            terms = retype_shift_constant(op, terms, other_width_only=True)
        try:
            return make(op, *terms, type=ttype, flags=flags)
        except FPIRTypeError as e:
            raise no_rewrite(str(e)) from None

    return call


def _takes_type(node: Raw) -> bool:
    """Whether the builder `_compile(node)` reads the type it is given: every form but a wildcard's name
    (also inside the broadcast notation x(...)), whose builder returns the bound term whatever it is told."""
    while node.kind == "call" and node.text == "x" and len(node.args) == 1 and node.tparam_text is None:
        node = node.args[0]
    return is_const_expr(node) or node.kind != "name"


def _apply(no_rewrite: type[Exception], op: str, terms: list[Term], ttype: Optional[ScalarType] = None,
           flags: Any = ()) -> Term:
    terms = retype_shift_constant(op, terms, other_width_only=True)
    try:
        return make(op, *terms, type=ttype, flags=flags)
    except FPIRTypeError as e:
        raise no_rewrite(str(e)) from None
