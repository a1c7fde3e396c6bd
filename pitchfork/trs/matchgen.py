"""Patterns compiled to Python source: one straight-line function per left side, as Halide's IRMatch
compiles its rewrite rules to C++ matching code.

`generate_matcher(p)` returns `m(term, terms, types) -> list of (terms, types)`, the same function of its
arguments as `compiled.compile_pattern(p)` (which stays the definition and the fallback): every way p
matches the term, in the same order. The generated code differs only in how it gets there:

* every sub-term position is read once into a local (`t_0_1` is `t.args[0].args[1]`), and each node's
  op, constant value and flags are tested in place, with no call per pattern node;
* the wildcards and type variables bound so far are locals too, known at generation time: a first
  occurrence binds (`x = t_0`), a later one tests identity (`t_1 is x`) or type equality; the binding
  dictionaries are built once per match, at its end;
* a commutative op's two operand orders are two blocks, one after the other (the written order
  first), each holding the rest of the match: the matches come out in `pattern.match`'s order;
* a type expression other than a variable or a concrete type (`wide(T)`, `unsigned(W)`) is matched by
  the `TypeExpr` itself (`TypeExpr.match` on the types bound so far), its variables read back from it.

Only a root call with empty bindings (what the rewriter makes) runs the generated code; a call that
extends bindings goes to the closure matcher (made on its first such call). Terms are interned: identity
is equality. Each distinct pattern is generated once per process (`matchers_for`'s memo, so synth's
many rule sets of known rules generate only their new patterns), and a module of patterns generated
before is read from the disk cache (pitchfork/trs/cache.py), so a cold `pitchfork lift` neither generates
nor compiles. tests/pitchfork/trs/test_compiled.py checks the generated matchers against the
interpreter on random terms for every shipped rule set.
"""

from __future__ import annotations

import marshal
from types import CodeType
from typing import Any, Callable

from fpir.opspec import spec
from pitchfork.trs.cache import cached
from pitchfork.trs.pattern import (COMMUTATIVE, PApp, PConst, PLit, Pattern, PWild, TypeExpr,
                                   _constants_typed_as_verified)

Matcher = Callable[[Any, dict, dict], list]
#: (term bindings, type bindings) known at a point of the generated code: (name, local) pairs in binding order
Env = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
Cont = Callable[[Env, int], None]


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"_ctv": _constants_typed_as_verified}
        self.n = 0

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any, prefix: str = "K") -> str:
        name = self.fresh(prefix)
        self.ns[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    # -- type expressions --------------------------------------------------------------------

    def type_match(self, te: TypeExpr, texpr: str, env: Env, indent: int, cont: Cont) -> None:
        """Code that matches type `texpr` against te under env's type bindings, then cont."""
        terms, types = env
        bound = dict(types)
        if te.kind == "var":
            if te.name in bound:
                v = bound[te.name]
                self.emit(indent, f"if {v} is {texpr} or {v} == {texpr}:")
                cont(env, indent + 1)
            else:
                v = self.fresh("ty")
                self.emit(indent, f"{v} = {texpr}")
                cont((terms, types + ((te.name, v),)), indent)
            return
        if te.kind == "concrete":
            k = self.const(te.concrete)
            self.emit(indent, f"if {k} == {texpr}:")
            cont(env, indent + 1)
            return
        # wide/narrow/signed/unsigned: the TypeExpr's own match over the bindings so far
        k, m = self.const(te), self.fresh("m")
        known = ", ".join(f"{n!r}: {v}" for n, v in types)
        self.emit(indent, f"{m} = {k}.match({texpr}, {{{known}}})")
        self.emit(indent, f"if {m} is not None:")
        new = tuple((n, self.fresh("ty")) for n in sorted(te.vars()) if n not in bound)
        for n, v in new:  # (a successful match binds every variable of the expression)
            self.emit(indent + 1, f"{v} = {m}[{n!r}]")
        cont((terms, types + new), indent + 1)

    # -- patterns ----------------------------------------------------------------------------

    def node(self, p: Pattern, tv: str, env: Env, indent: int, cont: Cont) -> None:
        """Code that matches pattern p against the term in local tv under env, then cont."""
        if isinstance(p, PLit):
            self.emit(indent, f"if {tv}.op == 'const' and {tv}.attrs[0] == {p.value!r}:")
            cont(env, indent + 1)
            return
        if isinstance(p, (PWild, PConst)):
            if isinstance(p, PConst):
                self.emit(indent, f"if {tv}.op == 'const':")
                indent += 1
            terms, types = env
            bound = dict(terms)
            if p.name in bound:
                self.emit(indent, f"if {tv} is {bound[p.name]}:")
                cont(env, indent + 1)
                return

            def bind(env2: Env, ind: int) -> None:
                cont((env2[0] + ((p.name, tv),), env2[1]), ind)

            if p.type is None:
                bind(env, indent)
            else:
                self.type_match(p.type, f"{tv}.type", env, indent, bind)
            return
        assert isinstance(p, PApp)
        cond = f"{tv}.op == {p.op!r}"
        if p.flags:
            cond += f" and {self.const(frozenset(p.flags))} <= set({tv}.attrs)"
        self.emit(indent, f"if {cond}:")
        indent += 1
        subs = [f"{tv}_{i}" for i in range(len(p.args))]
        for i, s in enumerate(subs):
            self.emit(indent, f"{s} = {tv}.args[{i}]")
        orders = [p.args]
        if p.op in COMMUTATIVE and len(p.args) == 2 and p.args[0] != p.args[1]:
            orders.append((p.args[1], p.args[0]))
        hint = spec(p.op).arg_hint
        for args in orders:
            const_at = [i for i, a in enumerate(args) if isinstance(a, PConst) and a.type is None] \
                if hint is not None else []
            ind = indent
            if const_at:  # compiled._app: the verified-constant-type check, asked only when it can refuse
                anyc = " or ".join(f"{subs[i]}.op == 'const'" for i in const_at)
                self.emit(ind, f"if not ({anyc}) or _ctv({p.op!r}, {self.const(args)}, {tv}):")
                ind += 1

            def at_end(env2: Env, ind2: int) -> None:
                if p.type is None:
                    cont(env2, ind2)
                else:
                    self.type_match(p.type, f"{tv}.type", env2, ind2, cont)

            self.args(list(zip(args, subs)), env, ind, at_end)

    def args(self, pairs: list[tuple[Pattern, str]], env: Env, indent: int, cont: Cont) -> None:
        if not pairs:
            cont(env, indent)
            return
        (p, tv), rest = pairs[0], pairs[1:]
        self.node(p, tv, env, indent, lambda env2, ind: self.args(rest, env2, ind, cont))


def generate_matchers(patterns: list[PApp], fallbacks: list[Matcher], name: str = "rules") -> list[Matcher]:
    """The generated matchers of these root patterns, compiled as one module (the rows of one root op);
    `fallbacks[i]` (compiled.compile_pattern(patterns[i])) answers calls with non-empty bindings. The
    module (its code object and the constants it reads) comes from the disk cache when these very
    patterns were generated before (`cache.cached`, keyed by the patterns' repr: generating and
    compiling are all of the cost of making a matcher, and a cold `pitchfork lift` makes ~100)."""
    source_name = f"<matchers of {name}>"

    def make() -> tuple[bytes, dict[str, Any], list[str]]:
        code, ns, fbs = _generate(patterns, source_name)
        return marshal.dumps(code), {k: v for k, v in ns.items() if k not in fbs and k != "_ctv"}, fbs

    def valid(entry: object) -> bool:
        return (isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[0], bytes)
                and isinstance(entry[1], dict) and isinstance(entry[2], list) and len(entry[2]) == len(patterns))

    code_bytes, consts, fbs = cached("\n".join(map(repr, patterns)), source_name, "matchers", make, valid)
    try:
        code = marshal.loads(code_bytes)
    except (EOFError, ValueError, TypeError):  # a damaged entry: made again (and not stored)
        code_bytes, consts, fbs = make()
        code = marshal.loads(code_bytes)
    ns = dict(consts)
    ns["_ctv"] = _constants_typed_as_verified
    ns.update(zip(fbs, fallbacks))
    exec(code, ns)
    return [ns[f"match_{i}"] for i in range(len(patterns))]


def _generate(patterns: list[PApp], source_name: str) -> tuple[CodeType, dict[str, Any], list[str]]:
    """(the module's code, its constants, the names of the fallbacks in pattern order)."""
    g = _Gen()
    fbs = []
    for i, p in enumerate(patterns):
        fb = g.fresh("FB")
        fbs.append(fb)
        g.emit(0, f"def match_{i}(t, terms, types):  # {_short(p)}")
        g.emit(1, "if terms or types:")
        g.emit(2, f"return {fb}(t, terms, types)")
        g.emit(1, "out = []")

        def found(env: Env, indent: int) -> None:
            terms = ", ".join(f"{n!r}: {v}" for n, v in env[0])
            types = ", ".join(f"{n!r}: {v}" for n, v in env[1])
            g.emit(indent, f"out.append(({{{terms}}}, {{{types}}}))")

        g.node(p, "t", ((), ()), 1, found)
        g.emit(1, "return out")
        g.emit(0, "")
    return compile("\n".join(g.lines) + "\n", source_name, "exec"), g.ns, fbs


#: the generated matcher of every root pattern generated so far in this process (patterns are frozen
#: dataclasses: equal patterns match alike), so a rule set made of rules seen before (synth's rule sets
#: with one rule more, leave-one-out variants) generates and compiles only its new patterns
_MEMO: dict[PApp, Matcher] = {}
MEMO_LIMIT = 50_000


def matchers_for(patterns: list[PApp], fallback_of: Callable[[PApp], Matcher], name: str = "rules") -> list[Matcher]:
    """The generated matcher of each pattern, generating (as one module) only those not made before."""
    todo = [p for p in dict.fromkeys(patterns) if p not in _MEMO]
    if todo:
        if len(_MEMO) + len(todo) > MEMO_LIMIT:
            _MEMO.clear()
            todo = list(dict.fromkeys(patterns))
        _MEMO.update(zip(todo, generate_matchers(todo, [_Lazy(p, fallback_of) for p in todo], name)))
    return [_MEMO[p] for p in patterns]


class _Lazy:
    """A fallback matcher made on its first call (the rewriter never extends bindings: most never are)."""

    __slots__ = ("pattern", "make", "fn")

    def __init__(self, pattern: PApp, make: Callable[[PApp], Matcher]) -> None:
        self.pattern, self.make, self.fn = pattern, make, None

    def __call__(self, t: Any, terms: dict, types: dict) -> list:
        if self.fn is None:
            self.fn = self.make(self.pattern)
        return self.fn(t, terms, types)


def generate_matcher(p: PApp, fallback: Matcher) -> Matcher:
    """One pattern's generated matcher (`generate_matchers` of one)."""
    return generate_matchers([p], [fallback])[0]


def _short(p: PApp) -> str:
    from pitchfork.trs.pattern import pattern_text

    return " ".join(pattern_text(p).split())[:100]
