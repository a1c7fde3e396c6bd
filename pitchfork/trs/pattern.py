"""Rule patterns: type expressions, pattern nodes, and the matcher.

A left-hand side is compiled from the FPIR text syntax (`fpir.text.parse_raw`) into pattern nodes:

* `x_u8`   a term wildcard of exactly type u8; `x_T` a wildcard whose type binds type variable T
  (type variables start with an upper-case letter);
* `c0`, `c1`, ... (optionally `c0_u8`, `c0_T`) constant wildcards: they match constants only;
* a bare integer matches a constant with exactly that value;
* `op(p, q)` / infix forms match that op; `u16(p)` and `cast<W>(p)` also match the result type;
* `op.flag(p, q)` (`add.nsw(x_T, y_T)`) matches only a node carrying that flag (fpir.ops.FlagSpec);
  a pattern without flags matches a node whatever flags it carries (dropping a fact is always sound);
* `either(p1, p2, ...)` is an alternate: any of the shapes (expanded into separate patterns).

Commutative ops are matched in both operand orders. The same wildcard used twice must match the
same term (terms are interned, so this is an identity test). Matching yields `Bindings`.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Union

from fpir.opspec import OPS, known_op, spec, split_flags
from fpir.term import Term
from fpir.text import Raw, _int_value
from fpir.types import FPIRTypeError, ScalarType, is_type_name, parse_type

COMMUTATIVE = frozenset({"add", "mul", "min", "max", "and", "or", "xor", "eq", "ne", "widening_add",
                         "widening_mul", "absd", "saturating_add", "halving_add", "rounding_halving_add"})

_TVAR_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_CWILD_RE = re.compile(r"^c[0-9]+$")
_WILD_RE = re.compile(r"^(.+)_([A-Za-z][A-Za-z0-9]*)$")


class RuleSyntaxError(ValueError):
    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        self.message, self.line, self.column = message, line, column
        super().__init__(message)


# ---------------------------------------------------------------------------------------------
# Type expressions


def _reduce_to_constructor(self: Any) -> tuple[type, tuple[Any, ...]]:
    """`__reduce__` of the frozen slots dataclasses below: pickled as a call of the constructor on the
    fields (a slots class's `__slots__` are its fields, in order). The dataclass default restores the
    fields through `_dataclass_setstate`, which looks the fields up again for every object; the rule
    cache (pitchfork/trs/cache.py) unpickles ~1,400 patterns in a cold `pitchfork lift`. Same objects
    either way: the constructors only store their arguments."""
    return type(self), tuple(getattr(self, name) for name in self.__slots__)


@dataclass(frozen=True, slots=True)
class TypeExpr:
    """A concrete type, a type variable, or wide/narrow/signed/unsigned of a type expression."""

    kind: str  # "concrete" | "var" | "wide" | "narrow" | "signed" | "unsigned"
    concrete: Optional[ScalarType] = None
    name: str = ""
    inner: Optional["TypeExpr"] = None
    __reduce__ = _reduce_to_constructor

    def __str__(self) -> str:
        if self.kind == "concrete":
            return self.concrete.name  # type: ignore[union-attr]
        if self.kind == "var":
            return self.name
        return f"{self.kind}({self.inner})"

    def eval(self, tvars: dict[str, ScalarType]) -> Optional[ScalarType]:
        """The concrete type under these bindings (None if a variable is unbound)."""
        if self.kind == "concrete":
            return self.concrete
        if self.kind == "var":
            return tvars.get(self.name)
        t = self.inner.eval(tvars)  # type: ignore[union-attr]
        if t is None:
            return None
        try:
            if self.kind == "wide":
                return t.widen()
            if self.kind == "narrow":
                return t.narrow()
            return t.with_sign(self.kind == "signed")
        except FPIRTypeError:
            return None

    def evaluator(self) -> Callable[[dict[str, ScalarType]], Optional[ScalarType]]:
        """`self.eval` as a function, with the two common forms (a type variable, a concrete type)
        decided once here instead of at every call (the compiled matchers and builders call it)."""
        if self.kind == "var":
            name = self.name
            return lambda tvars: tvars.get(name)
        if self.kind == "concrete":
            concrete = self.concrete
            return lambda tvars: concrete
        # wide / narrow / signed / unsigned of the inner expression's evaluator: `eval` without
        # re-dispatching on the kinds at every call
        inner = self.inner.evaluator()  # type: ignore[union-attr]
        step: Callable[[ScalarType], ScalarType] = (
            ScalarType.widen if self.kind == "wide" else ScalarType.narrow if self.kind == "narrow"
            else ScalarType.to_signed if self.kind == "signed" else ScalarType.to_unsigned)

        def compound(tvars: dict[str, ScalarType]) -> Optional[ScalarType]:
            t = inner(tvars)
            if t is None:
                return None
            try:
                return step(t)
            except FPIRTypeError:
                return None

        return compound

    def matcher(self) -> Callable[[ScalarType, dict[str, ScalarType]], Optional[dict[str, ScalarType]]]:
        """`self.match` as a function, the common forms decided once, as in `evaluator`."""
        if self.kind == "var":
            name = self.name

            def var_match(t: ScalarType, tvars: dict[str, ScalarType]) -> Optional[dict[str, ScalarType]]:
                got = tvars.get(name)  # (bound types are never None)
                if got is None:
                    out = dict(tvars)
                    out[name] = t
                    return out
                return tvars if got == t else None

            return var_match
        if self.kind == "concrete":
            concrete = self.concrete
            return lambda t, tvars: tvars if concrete == t else None
        return self.match

    def vars(self) -> set[str]:
        if self.kind == "var":
            return {self.name}
        return self.inner.vars() if self.inner else set()

    def match(self, t: ScalarType, tvars: dict[str, ScalarType]) -> Optional[dict[str, ScalarType]]:
        """Bind variables so that this expression evaluates to t; None if impossible."""
        if self.kind == "var" and self.name not in tvars:
            out = dict(tvars)
            out[self.name] = t
            return out
        if self.kind in ("wide", "narrow") and self.inner is not None and self.inner.eval(tvars) is None:
            try:
                target = t.narrow() if self.kind == "wide" else t.widen()
            except FPIRTypeError:
                return None
            return self.inner.match(target, tvars)
        got = self.eval(tvars)
        return tvars if got == t else None


@lru_cache(maxsize=4096)
def parse_type_expr(text: str) -> TypeExpr:
    text = text.strip()
    m = re.match(r"^(wide|narrow|signed|unsigned)\s*\((.*)\)$", text)
    if m:
        return TypeExpr(m.group(1), inner=parse_type_expr(m.group(2)))
    if is_type_name(text):
        return TypeExpr("concrete", concrete=parse_type(text))
    if _TVAR_RE.match(text):
        return TypeExpr("var", name=text)
    raise FPIRTypeError(f"bad type expression {text!r}")


def type_expr_of_raw(node: Raw) -> TypeExpr:
    """Type expression written as an expression (`wide(T)`, `T`, `u8`) inside a predicate."""
    if node.kind == "name":
        return parse_type_expr(node.text)
    if node.kind == "call" and node.text in ("wide", "narrow", "signed", "unsigned") and len(node.args) == 1:
        return TypeExpr(node.text, inner=type_expr_of_raw(node.args[0]))
    raise FPIRTypeError("expected a type expression")


# ---------------------------------------------------------------------------------------------
# Patterns


@dataclass(frozen=True, slots=True)
class PWild:
    name: str
    type: Optional[TypeExpr]
    __reduce__ = _reduce_to_constructor


@dataclass(frozen=True, slots=True)
class PConst:
    name: str
    type: Optional[TypeExpr]
    __reduce__ = _reduce_to_constructor


@dataclass(frozen=True, slots=True)
class PLit:
    value: int
    __reduce__ = _reduce_to_constructor


@dataclass(frozen=True, slots=True)
class PApp:
    op: str
    args: tuple["Pattern", ...]
    type: Optional[TypeExpr] = None  # explicit result type (casts)
    flags: tuple[str, ...] = ()  # flags the matched node must carry
    __reduce__ = _reduce_to_constructor


Pattern = Union[PWild, PConst, PLit, PApp]


@dataclass
class Bindings:
    terms: dict[str, Term] = field(default_factory=dict)
    types: dict[str, ScalarType] = field(default_factory=dict)

    def copy(self) -> "Bindings":
        return Bindings(dict(self.terms), dict(self.types))


def split_wildcard(name: str) -> tuple[str, Optional[TypeExpr]]:
    if _CWILD_RE.match(name):
        return name, None
    m = _WILD_RE.match(name)
    if not m:
        raise FPIRTypeError(f"wildcard {name!r} needs a type suffix (x_u8, x_T)")
    base, suffix = m.group(1), m.group(2)
    if _CWILD_RE.match(base):
        return base, parse_type_expr(suffix)
    return base, parse_type_expr(suffix)


def compile_pattern(node: Raw) -> list[Pattern]:
    """All alternative patterns a raw LHS denotes (either(...) expands to several)."""
    v = _int_value(node)
    if v is not None:
        return [PLit(v)]
    if node.kind == "name":
        base, t = split_wildcard(node.text)
        if _CWILD_RE.match(base):
            return [PConst(base, t)]
        return [PWild(base, t)]
    if node.kind == "neg":
        return [PApp("sub", (PLit(0), p)) for p in compile_pattern(node.args[0])]
    if node.kind == "lnot":
        return [PApp("not", (p,)) for p in compile_pattern(node.args[0])]
    name = node.text
    if name == "either":
        return [p for a in node.args for p in compile_pattern(a)]
    if name == "x" and len(node.args) == 1:
        return compile_pattern(node.args[0])
    ttype: Optional[TypeExpr] = None
    if node.tparam_text is not None:
        ttype = parse_type_expr(node.tparam_text)
    elif is_type_name(name):
        ttype, name = TypeExpr("concrete", concrete=parse_type(name)), "cast"
    if name in ("lor", "land"):
        name = "or" if name == "lor" else "and"
    name, flag_list = split_flags(name)
    if not known_op(name):
        raise FPIRTypeError(f"unknown operation {name!r}")
    s = spec(name)
    for f in flag_list:
        if f not in s.flags:
            raise FPIRTypeError(f"{name} takes no flag {f!r}")
    flags = tuple(sorted(set(flag_list)))
    if len(node.args) != s.arity:
        raise FPIRTypeError(f"{name} takes {s.arity} argument(s), got {len(node.args)}")
    if s.explicit_type and ttype is None:
        raise FPIRTypeError(f"{name} needs a type: {name}<t>(...)")
    alts = [compile_pattern(a) for a in node.args]
    return [PApp(name, tuple(combo), ttype, flags) for combo in itertools.product(*alts)]


def pattern_wildcards(p: Pattern) -> set[str]:
    if isinstance(p, (PWild, PConst)):
        return {p.name}
    if isinstance(p, PApp):
        return set().union(*[pattern_wildcards(a) for a in p.args]) if p.args else set()
    return set()


def pattern_text(p: Pattern) -> str:
    if isinstance(p, PWild):
        return f"{p.name}_{p.type}" if p.type else p.name
    if isinstance(p, PConst):
        return f"{p.name}_{p.type}" if p.type else p.name
    if isinstance(p, PLit):
        return str(p.value)
    args = ", ".join(pattern_text(a) for a in p.args)
    if p.op == "cast":
        return f"cast<{p.type}>({args})"
    if p.type is not None:
        return f"{p.op}<{p.type}>({args})"
    return f"{'.'.join((p.op,) + p.flags)}({args})"


# ---------------------------------------------------------------------------------------------
# Matching


def _bind_type(te: Optional[TypeExpr], t: ScalarType, b: Bindings) -> bool:
    if te is None:
        return True
    out = te.match(t, b.types)
    if out is None:
        return False
    b.types = out
    return True


def match(p: Pattern, t: Term, b: Bindings) -> Iterator[Bindings]:
    """Yield every extension of b under which p matches t (backtracking over commutative orders)."""
    if isinstance(p, (PWild, PConst)):
        if isinstance(p, PConst) and not t.is_const:
            return
        bound = b.terms.get(p.name)
        if bound is not None:
            if bound is t:  # terms (constants included) are interned: equal means identical
                yield b
            return
        nb = b.copy()
        if not _bind_type(p.type, t.type, nb):
            return
        nb.terms[p.name] = t
        yield nb
        return
    if isinstance(p, PLit):
        if t.is_const and t.value == p.value:
            yield b
        return
    if t.op != p.op:
        return
    if p.flags and not set(p.flags) <= set(t.attrs):
        return
    orders = [p.args]
    if p.op in COMMUTATIVE and len(p.args) == 2 and p.args[0] != p.args[1]:
        orders.append((p.args[1], p.args[0]))
    for args in orders:
        # Cheap early rejection: an operand pattern that is an op must see that op.
        if any(type(a) is PApp and a.op != ta.op for a, ta in zip(args, t.args)):
            continue
        if not _constants_typed_as_verified(p.op, args, t):
            continue
        for nb in _match_args(args, t.args, 0, b):
            if p.type is not None:
                nb2 = nb.copy()
                if not _bind_type(p.type, t.type, nb2):
                    continue
                yield nb2
            else:
                yield nb


def _constants_typed_as_verified(op: str, args: tuple[Pattern, ...], t: Term) -> bool:
    """An untyped constant wildcard only matches a constant of the type its position implies.

    The verifier gives an untyped `c0` the type the op's argument hint derives from the other
    operands (e.g. a shift amount gets the shifted value's type); a constant of another type (a
    signed amount) was never verified, so it must not match. Typed wildcards (`c0_S`) are free.
    """
    hint = spec(op).arg_hint
    if hint is None:
        return True
    known = [None if isinstance(a, (PConst, PLit)) else t.args[i].type for i, a in enumerate(args)]
    for i, a in enumerate(args):
        if isinstance(a, PConst) and a.type is None and t.args[i].is_const:
            want = hint(i, known, t.type if spec(op).explicit_type else None)
            if want is not None and want != t.args[i].type:
                return False
    return True


def _match_args(ps: tuple[Pattern, ...], ts: tuple[Term, ...], i: int, b: Bindings) -> Iterator[Bindings]:
    if i == len(ps):
        yield b
        return
    for nb in match(ps[i], ts[i], b):
        yield from _match_args(ps, ts, i + 1, nb)
