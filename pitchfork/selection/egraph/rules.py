"""Rule files compiled to egglog rules, polymorphically: one rule file stays the single source of a rule.

Used for rules/egraph/algebra.rules (the equivalences the e-graph saturates with). A rule becomes one
egglog `rule` whose type variables are egglog String variables: a term wildcard `x_T` binds `x` and
constrains `(= (tyof x) ty_T)`, each node's type field is its symbolic result type, constants take
their type from the context (the other operand, or the cast around them) as in the rule language.
Type functions of the predicate (`bits`, `tmin`, `tmax`, `is_signed`, `represents`) read small
tables declared once from fpir.types (`type_tables`); constant arithmetic becomes egglog i64 / Bool
expressions; a computed constant of the right side must fit its type (as pitchfork.trs.rules.build_rhs
refuses one that does not).

The subset compiled here: ops whose result has their operands' type (+ - * / min max & | ^ << >>),
cast/reinterpret, constant wildcards and literals. Anything else raises Unsupported naming the rule.
(The lifting rules of rules/lift/ are applied by the greedy TRS on e-class representatives instead:
compiled per type instance they were thousands of egglog rules, far too slow for egglog to add.)
Soundness does not depend on this module: every rule is verified by Z3 at every type instance, the
compiled form keeps the rule's predicate, and the engine validates every extracted term.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from fpir.text import Raw, _int_value
from fpir.types import USER_TYPES
from pitchfork.trs.pattern import _CWILD_RE, split_wildcard
from pitchfork.trs.predicate import PredicateError
from pitchfork.trs.rules import Rule

from pitchfork.selection.egraph.declare import CONST, I64_MAX, I64_MIN, ctor, quote

SAME_TYPE_OPS = frozenset({"add", "sub", "mul", "div", "min", "max", "and", "or", "xor", "shl", "shr"})
_I64 = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^"}
_CMP = {"eq": "bool-=", "lt": "bool-<", "le": "bool-<=", "gt": "bool->", "ge": "bool->="}


class Unsupported(ValueError):
    """A rule outside the subset this compiler handles."""


@dataclass(frozen=True)
class Sym:
    text: str
    kind: str  # "i64" | "bool"


def type_tables() -> str:
    """egglog tables of the type functions predicates use, one row per user type (fpir.types)."""
    lines = ["(function tt_bits (String) i64 :merge old)", "(function tt_tmin (String) i64 :merge old)",
             "(function tt_tmax (String) i64 :merge old)", "(function tt_is_signed (String) bool :merge old)",
             "(function tt_represents (String String) bool :merge old)"]
    for t in USER_TYPES:
        n = quote(t.name)
        # u64's maximum is past i64: every constant the e-graph holds is below it, so I64_MAX answers alike
        lines += [f"(set (tt_bits {n}) {t.bits})", f"(set (tt_tmin {n}) {max(t.min, I64_MIN)})",
                  f"(set (tt_tmax {n}) {min(t.max, I64_MAX)})", f"(set (tt_is_signed {n}) {'true' if t.signed else 'false'})"]
        for u in USER_TYPES:
            lines.append(f"(set (tt_represents {n} {quote(u.name)}) {'true' if t.can_represent(u) else 'false'})")
    return "\n".join(lines) + "\n"


def _txt(a: Any) -> str:
    if isinstance(a, Sym):
        return a.text
    if isinstance(a, bool):
        return "true" if a else "false"
    if not I64_MIN <= int(a) <= I64_MAX:
        raise Unsupported(f"constant {a} outside egglog's i64")
    return str(int(a))


def _ty(text: str) -> str:
    """The egglog spelling of a type: a concrete name quoted, a type variable as `ty_T`."""
    if text[:1] in "ui" and text[1:].isdigit():
        return quote(text)
    if not text.isidentifier() or not text[:1].isupper():
        raise Unsupported(f"type expression {text!r}")
    return "ty_" + text


class _Compiler:
    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.facts: list[str] = []  # type constraints of term wildcards
        self.guards: list[str] = []  # what constant expressions need to mean what Python means
        self.bound: set[str] = set()

    # ---- types ----
    def natural_type(self, node: Raw) -> Optional[str]:
        """The type of a sub-expression that does not take it from context (None for constants)."""
        if node.kind == "name" and self.is_const(node) and "_" in node.text:
            return _ty(node.text.split("_", 1)[1])  # a typed constant wildcard, c0_T
        if _int_value(node) is not None or (self.is_const(node) and node.kind != "call"):
            return None
        if node.kind == "name":
            base, texpr = split_wildcard(node.text)
            if texpr is None:
                raise Unsupported(f"wildcard {node.text} has no type")
            return _ty(str(texpr))
        if node.kind == "call" and node.text in ("cast", "reinterpret"):
            return _ty(node.tparam_text or "")
        if node.kind == "call" and node.text in SAME_TYPE_OPS:
            for a in node.args:
                t = self.natural_type(a)
                if t is not None:
                    return t
            return None
        raise Unsupported(f"operation {node.text!r}")

    @staticmethod
    def is_const(node: Raw) -> bool:
        if _int_value(node) is not None:
            return True
        if node.kind == "name":
            return bool(_CWILD_RE.match(node.text.split("_")[0]))
        return node.kind in ("call", "neg") and node.text not in ("cast", "reinterpret") and all(
            _Compiler.is_const(a) for a in node.args) and bool(node.args)

    # ---- left side ----
    def pattern(self, node: Raw, expected: Optional[str]) -> str:
        if self.is_const(node) and node.kind != "call":
            t = expected
            if node.kind == "name" and "_" in node.text:
                t = _ty(node.text.split("_", 1)[1])
            if t is None:
                raise Unsupported("a constant whose type the context does not give")
            v = _int_value(node)
            if v is not None:
                return f"({CONST} {_txt(v)} {t})"
            if node.kind != "name":
                raise Unsupported("constant expressions on the left side")
            return f"({CONST} {node.text.split('_')[0]} {t})"
        if node.kind == "name":
            base, texpr = split_wildcard(node.text)
            if base not in self.bound:
                self.bound.add(base)
                self.facts.append(f"(= (tyof {base}) {_ty(str(texpr))})")
            return base
        return self.node(node, expected, self.pattern)

    def node(self, node: Raw, expected: Optional[str], sub: Any) -> str:
        if node.kind != "call":
            raise Unsupported(f"{node.kind} node")
        if node.text in ("cast", "reinterpret"):
            rt = _ty(node.tparam_text or "")
            arg = node.args[0]
            at = self.natural_type(arg)
            return f"({ctor(node.text)} {rt} {sub(arg, at)})"
        if node.text not in SAME_TYPE_OPS:
            raise Unsupported(f"operation {node.text!r}")
        t = next((x for x in map(self.natural_type, node.args) if x is not None), None) or expected
        if t is None:
            raise Unsupported("an operation on constants only")
        return f"({ctor(node.text)} {t} {' '.join(sub(a, t) for a in node.args)})"

    # ---- right side ----
    def action(self, node: Raw, expected: Optional[str]) -> str:
        if self.is_const(node):
            if expected is None:
                raise Unsupported("a constant whose type the context does not give")
            v = self.value(node)
            if isinstance(v, Sym):
                self.guards += [f"(>= {v.text} (tt_tmin {expected}))", f"(<= {v.text} (tt_tmax {expected}))"]
            return f"({CONST} {_txt(v)} {expected})"
        if node.kind == "name":
            return split_wildcard(node.text)[0]
        return self.node(node, expected, self.action)

    # ---- predicates and constant expressions ----
    def value(self, node: Raw) -> Any:
        v = _int_value(node)
        if v is not None:
            return v
        if node.kind == "name":
            if _CWILD_RE.match(node.text.split("_")[0]):
                return Sym(node.text.split("_")[0], "i64")
            if node.text in ("true", "false"):
                return node.text == "true"
            raise Unsupported(f"{node.text!r} as a value")
        if node.kind == "neg":
            return self.binop("sub", 0, self.value(node.args[0]))
        if node.kind == "lnot":
            return Sym(f"(not {_txt(self.value(node.args[0]))})", "bool")
        name, args = node.text, node.args
        if name in ("bits", "tmin", "tmax"):
            return Sym(f"(tt_{name} {_ty(args[0].text)})", "i64")
        if name in ("is_signed", "is_unsigned"):
            s = f"(tt_is_signed {_ty(args[0].text)})"
            return Sym(s if name == "is_signed" else f"(not {s})", "bool")
        if name == "represents":
            return Sym(f"(tt_represents {_ty(args[0].text)} {_ty(args[1].text)})", "bool")
        if name in ("land", "lor"):
            return Sym(f"({'and' if name == 'land' else 'or'} {_txt(self.value(args[0]))} {_txt(self.value(args[1]))})", "bool")
        if name == "is_pow2":
            a = _txt(self.value(args[0]))
            return Sym(f"(and (bool-> {a} 0) (bool-= (& {a} (- {a} 1)) 0))", "bool")
        if name == "log2":
            a = _txt(self.value(args[0]))
            self.guards.append(f"(> {a} 0)")
            return Sym(f"(log2 {a})", "i64")
        if len(args) == 2:
            return self.binop(name, self.value(args[0]), self.value(args[1]))
        raise Unsupported(f"predicate function {name!r}")

    def binop(self, op: str, a: Any, b: Any) -> Sym:
        x, y = _txt(a), _txt(b)
        if op in _I64:
            return Sym(f"({_I64[op]} {x} {y})", "i64")
        if op in ("shl", "shr"):
            self.guards += [f"(>= {y} 0)", f"(< {y} 62)"]
            return Sym(f"({'<<' if op == 'shl' else '>>'} {x} {y})", "i64")
        if op in _CMP:
            return Sym(f"({_CMP[op]} {x} {y})", "bool")
        if op == "ne":
            return Sym(f"(not (bool-= {x} {y}))", "bool")
        raise Unsupported(f"{op} in a predicate")


def compile_rule(rule: Rule, ruleset: str) -> str:
    """The egglog rule for `rule` (raises Unsupported outside the subset)."""
    if len(rule.alternatives) != 1:
        raise Unsupported("alternatives (either)")
    c = _Compiler(rule)
    lhs = rule.alternatives[0]
    pat = c.pattern(lhs, None)
    root_t = c.natural_type(lhs)
    rhs = c.action(rule.rhs_raw, root_t)  # type: ignore[arg-type]
    pred = []
    if rule.pred_raw is not None:
        try:
            v = c.value(rule.pred_raw)
        except PredicateError as e:
            raise Unsupported(str(e)) from None
        pred = [f"(= {_txt(v)} true)"]
    query = " ".join([f"(= root {pat})", *c.facts, *dict.fromkeys(c.guards), *pred])
    return f"(rule ({query}) ((union root {rhs})) :ruleset {ruleset} :name {quote(rule.name)})"


@dataclass(frozen=True)
class Compiled:
    commands: tuple[tuple[str, str], ...]  # (rule name, egglog rule)
    unsupported: tuple[tuple[str, str], ...]  # (rule name, why)

    def text(self) -> str:
        return "\n".join(c for _, c in self.commands) + "\n"


def compile_rules(rules: Iterable[Rule], ruleset: str) -> Compiled:
    ok, bad = [], []
    for r in rules:
        try:
            ok.append((r.name, compile_rule(r, ruleset)))
        except Unsupported as e:
            bad.append((r.name, str(e)))
    return Compiled(tuple(ok), tuple(bad))
