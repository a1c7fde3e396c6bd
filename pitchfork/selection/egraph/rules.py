"""Rule files compiled to egglog rules, polymorphically: one rule file stays the single source of a rule.

Used for rules/egraph/algebra.rules (the equivalences the e-graph saturates with). A rule becomes one
egglog `rule` whose type variables are egglog String variables: a term wildcard `x_T` binds `x` and
constrains `(= (tyof x) ty_T)`, each node's type field is its symbolic result type, constants take
their type from the context (the other operand, or the cast around them) as in the rule language.
Type functions of the predicate (`bits`, `tmin`, `tmax`, `is_signed`, `represents`) read small
tables declared once from fpir.types (`type_tables`); constant arithmetic becomes egglog i64 / Bool
expressions; a computed constant of the right side must fit its type (as pitchfork.trs.rules.build_rhs
refuses one that does not).

A wildcard whose type the op's type rule makes its parent node's (`x` in `(op_add ty_T x y)`, the
shifted value of a shift: `operands_of_result_type`) gets no `tyof` fact: every node of the e-graph is
well typed, so the fact would always hold, and each query atom costs egglog in every `(push)` /
`(pop)` (which clones the rules) and in every run.

The subset compiled here: ops whose result has their operands' type (+ - * / min max & | ^ << >>),
cast/reinterpret, constant wildcards and literals. Anything else raises Unsupported naming the rule.
(The lifting rules of rules/lift/ are applied by the greedy TRS on e-class representatives instead:
compiled per type instance they were thousands of egglog rules, far too slow for egglog to add.)
Soundness does not depend on this module: every rule is verified by Z3 at every type instance, the
compiled form keeps the rule's predicate, and the engine validates every extracted term.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Optional

from fpir.opspec import known_op, spec
from fpir.text import Raw, _int_value
from fpir.types import USER_TYPES, FPIRTypeError
from pitchfork.trs.pattern import _CWILD_RE, TypeExpr, parse_type_expr, split_wildcard
from pitchfork.trs.predicate import TYPE_FUNCS, PredicateError
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
    lines += [f"(function tt_{fn} (String) String :merge old)" for fn in TYPE_FUNCS]
    for t in USER_TYPES:
        n = quote(t.name)
        # u64's maximum is past i64: every constant the e-graph holds is below it, so I64_MAX answers alike
        for fn in TYPE_FUNCS:
            try:
                u = getattr(t, {"wide": "widen", "narrow": "narrow", "signed": "to_signed", "unsigned": "to_unsigned"}[fn])()
            except FPIRTypeError:
                continue
            if u.is_user_type:
                lines.append(f"(set (tt_{fn} {n}) {quote(u.name)})")
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
    """The egglog spelling of a type expression: a concrete name quoted, a type variable `ty_T`,
    wide/narrow/signed/unsigned through the tables of `type_tables`."""
    try:
        te = parse_type_expr(text)
    except FPIRTypeError as e:
        raise Unsupported(str(e)) from None
    return _te(te)


def _te(te: TypeExpr) -> str:
    if te.kind == "concrete":
        return quote(te.concrete.name)  # type: ignore[union-attr]
    if te.kind == "var":
        return "ty_" + te.name
    return f"(tt_{te.kind} {_te(te.inner)})"  # type: ignore[arg-type]


def _type_arg(node: Raw) -> str:
    """A type argument of a predicate function (`bits(wide(T))`)."""
    if node.kind == "name":
        return _ty(node.text)
    if node.kind == "call" and node.text in TYPE_FUNCS and len(node.args) == 1:
        return f"(tt_{node.text} {_type_arg(node.args[0])})"
    raise Unsupported("a type argument")


@lru_cache(maxsize=None)
def result_type_table(op: str) -> str:
    """egglog table `(rty_<op> arg types...)` -> result type, from the op's type rule (fpir/ops.py)
    over the user types: how the right side of a rule types a node of `op`."""
    s = spec(op)
    lines = [f"(function rty_{op} ({' '.join(['String'] * s.arity)}) String :merge old)"]
    for combo in itertools.product(USER_TYPES, repeat=s.arity):
        try:
            rt = s.type_rule(list(combo), None)
        except FPIRTypeError:
            continue
        lines.append(f"(set (rty_{op} {' '.join(quote(t.name) for t in combo)}) {quote(rt.name)})")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def operands_of_result_type(op: str) -> frozenset[int]:
    """The operand positions of `op` whose type its type rule (fpir/ops.py) makes the result's at every
    user type: all of add's, only the shifted value of shl/shr (the amount may differ in sign)."""
    s = spec(op)
    if s.explicit_type:  # a cast's result type is its parameter, not its operand's
        return frozenset()
    forced = set(range(s.arity))
    for combo in itertools.product(USER_TYPES, repeat=s.arity):
        try:
            rt = s.type_rule(list(combo), None)
        except FPIRTypeError:
            continue
        forced -= {i for i, t in enumerate(combo) if t != rt}
    return frozenset(forced)


class _Compiler:
    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.facts: list[str] = []  # type constraints of term wildcards
        self.guards: list[str] = []  # what constant expressions need to mean what Python means
        self.bound: set[str] = set()
        self.tables: set[str] = set()  # ops whose result-type table the rule reads

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
        if node.kind == "call" and node.text in ("cast", "reinterpret", "saturating_cast"):
            return _ty(node.tparam_text or "")
        if node.kind == "call" and node.text in SAME_TYPE_OPS:
            for a in node.args:
                t = self.natural_type(a)
                if t is not None:
                    return t
            return None
        if node.kind == "call" and known_op(node.text):
            return self.generic_type(node)
        raise Unsupported(f"operation {node.text!r}")

    def generic_type(self, node: Raw) -> str:
        """Result type of an op outside SAME_TYPE_OPS, through its `rty_<op>` table; constant
        arguments take the type of the first other argument (the hint the ops this compiler meets use)."""
        s = spec(node.text)
        if s.explicit_type:
            return _ty(node.tparam_text or "")
        ts = [self.natural_type(a) for a in node.args]
        known = next((t for t in ts if t is not None), None)
        if known is None:
            raise Unsupported("an operation on constants only")
        self.tables.add(node.text)
        return f"(rty_{node.text} {' '.join(t or known for t in ts)})"

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
        if node.text in ("cast", "reinterpret", "saturating_cast"):
            rt = _ty(node.tparam_text or "")
            arg = node.args[0]
            at = self.natural_type(arg)
            return f"({ctor(node.text)} {rt} {sub(arg, at)})"
        if node.text not in SAME_TYPE_OPS:
            if not known_op(node.text) or spec(node.text).explicit_type:
                raise Unsupported(f"operation {node.text!r}")
            rt = self.generic_type(node)
            ts = [self.natural_type(a) for a in node.args]
            known = next(t for t in ts if t is not None)
            return f"({ctor(node.text)} {rt} {' '.join(sub(a, t or known) for a, t in zip(node.args, ts))})"
        t = next((x for x in map(self.natural_type, node.args) if x is not None), None) or expected
        if t is None:
            raise Unsupported("an operation on constants only")
        if sub == self.pattern:
            forced = operands_of_result_type(node.text)
            for i, a in enumerate(node.args):
                if i in forced and a.kind == "name" and not self.is_const(a):
                    base, texpr = split_wildcard(a.text)
                    if texpr is not None and base not in self.bound and _ty(str(texpr)) == t:
                        # the op's type rule gives this operand the node's type, which the node's type
                        # field states: `(= (tyof x) t)` would hold in every well-typed e-graph, and each
                        # query atom costs egglog in every (push) and every run (see the module docstring)
                        self.bound.add(base)
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
            return Sym(f"(tt_{name} {_type_arg(args[0])})", "i64")
        if name in ("is_signed", "is_unsigned"):
            s = f"(tt_is_signed {_type_arg(args[0])})"
            return Sym(s if name == "is_signed" else f"(not {s})", "bool")
        if name == "represents":
            return Sym(f"(tt_represents {_type_arg(args[0])} {_type_arg(args[1])})", "bool")
        if name in ("eq", "ne") and all(not self.is_const(a) for a in args):
            raise Unsupported("type equality")
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
        if op in ("div", "mod"):
            # egglog's i64 / and % truncate where Python's floor: they agree on exact quotients and on
            # whether a remainder is zero, the only uses the rule files make of them (c1 % c0 == 0)
            self.guards.append(f"(!= {y} 0)")
            return Sym(f"({'/' if op == 'div' else '%'} {x} {y})", "i64")
        if op in ("shl", "shr"):
            self.guards += [f"(>= {y} 0)", f"(< {y} 62)"]
            return Sym(f"({'<<' if op == 'shl' else '>>'} {x} {y})", "i64")
        if op in _CMP:
            return Sym(f"({_CMP[op]} {x} {y})", "bool")
        if op == "ne":
            return Sym(f"(not (bool-= {x} {y}))", "bool")
        raise Unsupported(f"{op} in a predicate")


def compile_rule(rule: Rule, ruleset: str, tables: Optional[set[str]] = None) -> str:
    """The egglog rule for `rule` (raises Unsupported outside the subset); the ops whose result-type
    tables it needs are added to `tables`."""
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
            pred = [_fact(c.value(x)) for x in _conjuncts(rule.pred_raw)]
        except PredicateError as e:
            raise Unsupported(str(e)) from None
    if tables is not None:
        tables |= c.tables
    rhs, lookups = _hoist_lookups(rhs)
    made, rhs = _typed_action(rhs)
    # a conjunct that repeats a guard (a folded constant's range check) is written once
    query = " ".join(dict.fromkeys([f"(= root {pat})", *c.facts, *c.guards, *pred, *lookups]))
    return f"(rule ({query}) ({' '.join(made)} (union root {rhs})) :ruleset {ruleset} :name {quote(rule.name)})"


def _conjuncts(node: Raw) -> list[Raw]:
    """The operands of a predicate's top-level `&&`s, in order (the predicate is their conjunction)."""
    if node.kind == "call" and node.text == "land" and len(node.args) == 2:
        return _conjuncts(node.args[0]) + _conjuncts(node.args[1])
    return [node]


#: egglog's i64 comparisons as query facts (a fact holds or the match fails), by their Bool-valued names
_CHECK = {"bool-<": "<", "bool-<=": "<=", "bool->": ">", "bool->=": ">=", "bool-=": "="}


def _fact(v: Any) -> str:
    """A predicate conjunct as a query fact: a comparison as egglog's own check `(>= a b)`, anything
    else as `(= v true)`. Each conjunct is a fact of its own rather than one `(= (and ...) true)`: the
    same matches (egglog evaluates every operand of `and`, so a conjunct that cannot be evaluated fails
    the match either way), fewer query atoms (each costs egglog in every `(push)` and every run), and a
    conjunct equal to a guard is written once."""
    text = _txt(v)
    x = _sexpr(text) if text.startswith("(") else text
    if isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and x[0] in _CHECK:
        return f"({_CHECK[x[0]]} {_unparse(x[1])} {_unparse(x[2])})"
    return f"(= {text} true)"


def _typed_action(action: str) -> tuple[list[str], str]:
    """Each op node the right side makes bound by a `let` and given its `tyof` (its type field), as
    declare.py's encoding does for the nodes it adds: (actions, the root's expression)."""
    made: list[str] = []

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return x
        y = [walk(a) for a in x]
        if y and isinstance(y[0], str) and y[0].startswith("op_"):
            name = f"rv{len(made) // 2}"
            made.extend([f"(let {name} {_unparse(y)})", f"(set (tyof {name}) {_unparse(y[1])})"])
            return name
        return y

    return made, _unparse(walk(_sexpr(action)))


def _sexpr(text: str) -> Any:
    """Parse one s-expression into nested lists of atoms (strings keep their quotes)."""
    tokens: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "()":
            tokens.append(ch)
            i += 1
        elif ch.isspace():
            i += 1
        elif ch == '"':
            j = text.index('"', i + 1)
            tokens.append(text[i:j + 1])
            i = j + 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "()":
                j += 1
            tokens.append(text[i:j])
            i = j
    stack: list[list] = [[]]
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    return stack[0][0]


def _unparse(x: Any) -> str:
    return x if isinstance(x, str) else "(" + " ".join(_unparse(y) for y in x) + ")"


def _hoist_lookups(action: str) -> tuple[str, list[str]]:
    """egglog forbids table lookups (`tt_wide`, `rty_<op>`) in actions: each one becomes a variable
    bound by a query fact."""
    facts: list[str] = []
    seen: dict[str, str] = {}

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return x
        y = [walk(a) for a in x]
        if y and isinstance(y[0], str) and (y[0].startswith("tt_") or y[0].startswith("rty_")):
            key = _unparse(y)
            if key not in seen:
                seen[key] = f"lk{len(seen)}"
                facts.append(f"(= {seen[key]} {key})")
            return seen[key]
        return y

    return _unparse(walk(_sexpr(action))), facts


@dataclass(frozen=True)
class Compiled:
    commands: tuple[tuple[str, str], ...]  # (rule name, egglog rule)
    unsupported: tuple[tuple[str, str], ...]  # (rule name, why)
    tables: tuple[str, ...] = ()  # ops whose result-type tables the rules read

    def text(self) -> str:
        return "".join(result_type_table(op) for op in self.tables) + "\n".join(c for _, c in self.commands) + "\n"


def compile_rules(rules: Iterable[Rule], ruleset: str) -> Compiled:
    ok, bad = [], []
    tables: set[str] = set()
    for r in rules:
        try:
            ok.append((r.name, compile_rule(r, ruleset, tables)))
        except Unsupported as e:
            bad.append((r.name, str(e)))
    return Compiled(tuple(ok), tuple(bad), tuple(sorted(tables)))
