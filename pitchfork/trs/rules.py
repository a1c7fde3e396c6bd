"""Rule files: parsing, canonical text, and instantiation of right-hand sides.

One rule per line (a line starting with whitespace continues the previous one; `#` starts a comment):

    name: before -> after
    name: before -> after if predicate

`before` is a pattern (see pattern.py), `after` an expression over the same wildcards, in which
constant sub-expressions (`log2(c0)`, `1 << c0`, `c0 - 1`) are computed when the rule fires and take
their type from the context like bare constants do. A rule's printed one-line text is its identity.
Malformed files raise RuleFileError naming file, line and column.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

from fpir.opspec import OPS
from fpir.term import Term, const
from fpir.text import FPIRSyntaxError, Raw, _Elaborator, parse_raw
from fpir.types import FPIRTypeError, ScalarType
from pitchfork.trs.cache import parse_rules_cached
from pitchfork.trs.pattern import (
    Bindings,
    PApp,
    Pattern,
    _CWILD_RE,
    compile_pattern,
    parse_type_expr,
    pattern_wildcards,
    split_wildcard,
)
if TYPE_CHECKING:
    from pitchfork.trs.compiled import CompiledRules
from pitchfork.trs.predicate import PredicateError, PyDomain, Streams, check_syntax, evaluate, is_const_expr
from pitchfork.trs.rhs import compile_rhs


class RuleFileError(ValueError):
    def __init__(self, source: str, line: int, column: int, message: str) -> None:
        self.source, self.line, self.column, self.message = source, line, column, message
        super().__init__(f"{source}:{line}:{column}: {message}")


class NoRewrite(Exception):
    """The rule matched but cannot fire here (a computed constant does not fit its type...)."""


@dataclass(frozen=True)
class Rule:
    name: str
    lhs: str
    rhs: str
    predicate: Optional[str]
    source: str = "<string>"
    line: int = 0
    alternatives: tuple[Raw, ...] = field(default=(), compare=False, repr=False)
    patterns: tuple[Pattern, ...] = field(default=(), compare=False, repr=False)
    rhs_raw: Optional[Raw] = field(default=None, compare=False, repr=False)
    pred_raw: Optional[Raw] = field(default=None, compare=False, repr=False)

    def text(self) -> str:
        pred = f" if {self.predicate}" if self.predicate else ""
        return f"{self.name}: {self.lhs} -> {self.rhs}{pred}"

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def root_ops(self) -> set[str]:
        return {p.op for p in self.patterns if isinstance(p, PApp)}


def expand_alternates(node: Raw) -> list[Raw]:
    """Raw trees without `either`, one per combination of alternatives."""
    if node.kind == "call" and node.text == "either":
        return [r for a in node.args for r in expand_alternates(a)]
    if not node.args:
        return [node]
    combos = itertools.product(*[expand_alternates(a) for a in node.args])
    return [Raw(node.kind, node.text, tuple(c), node.line, node.column, node.tparam_text) for c in combos]


_NAME_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*:")


def _shift(e: FPIRSyntaxError, source: str, line: int, col0: int) -> RuleFileError:
    return RuleFileError(source, line + e.line - 1, (col0 + e.column) if e.line <= 1 else e.column, e.message)


def parse_rule(text: str, source: str = "<string>", line: int = 1) -> Rule:
    m = _NAME_RE.match(text)
    if not m:
        raise RuleFileError(source, line, 1, "expected 'name: before -> after [if predicate]'")
    name = m.group(1)
    rest_start = m.end()
    arrow = text.find("->", rest_start)
    if arrow < 0:
        raise RuleFileError(source, line, len(text) + 1, "missing '->'")
    pm = re.search(r"\sif\s", text[arrow:])
    pred_start = arrow + pm.start() + 1 if pm else -1
    lhs_text = text[rest_start:arrow]
    rhs_text = text[arrow + 2:pred_start] if pm else text[arrow + 2:]
    pred_text = text[pred_start + 2:] if pm else None

    def raw(part: str, offset: int) -> Raw:
        try:
            return parse_raw(part, source)
        except FPIRSyntaxError as e:
            raise _shift(e, source, line, offset) from None

    lhs_raw = raw(lhs_text, rest_start)
    rhs_raw = raw(rhs_text, arrow + 2)
    pred_raw = raw(pred_text, pred_start + 2) if pred_text is not None else None
    for part, offset in ((lhs_raw, rest_start), (rhs_raw, arrow + 2), (pred_raw, pred_start + 2)):
        if part is not None and _depth(part) > MAX_RULE_DEPTH:
            raise RuleFileError(source, line, offset + len(text[offset:]) - len(text[offset:].lstrip()) + 1,
                                f"rule {name}: nested more than {MAX_RULE_DEPTH} deep")
    alts = tuple(expand_alternates(lhs_raw))
    try:
        patterns = tuple(p for a in alts for p in compile_pattern(a))
    except FPIRTypeError as e:
        raise RuleFileError(source, line, rest_start + 1, f"in rule {name}: {e}") from None
    for p in patterns:
        if not isinstance(p, PApp):
            raise RuleFileError(source, line, rest_start + 1, f"rule {name}: the left side must be an operation")
    if pred_raw is not None:
        try:
            check_syntax(pred_raw)
        except PredicateError as e:
            n = e.node
            raise _shift(FPIRSyntaxError(f"rule {name}: {e.message}", n.line if n else 1, n.column if n else 1, source),
                         source, line, pred_start + 2) from None
    _check_type_variables(name, text, rest_start, arrow, source, line)
    wilds = set().union(*[pattern_wildcards(p) for p in patterns])
    for used in sorted(_names(rhs_raw) | (_names(pred_raw) if pred_raw else set())):
        try:
            base = used if _CWILD_RE.match(used) else split_wildcard(used)[0]
        except FPIRTypeError as e:
            raise RuleFileError(source, line, max(text.find(used, arrow), arrow) + 1, f"rule {name}: {e}") from None
        if base not in wilds:
            raise RuleFileError(source, line, rest_start + 1, f"rule {name}: {used!r} is not bound by the left side")
    return Rule(name, " ".join(lhs_text.split()), " ".join(rhs_text.split()),
                " ".join(pred_text.split()) if pred_text else None, source, line, alts, patterns, rhs_raw, pred_raw)


_TVAR = re.compile(r"(?<![A-Za-z0-9_])([A-Z][A-Za-z0-9]*)(?![A-Za-z0-9(])")
_WILD_TVAR = re.compile(r"_([A-Z][A-Za-z0-9]*)(?![A-Za-z0-9])")


def _type_variables(text: str) -> list[tuple[str, int]]:
    """(name, offset) of every type variable in rule text: `x_T` suffixes and bare `T`, `W` (in
    `cast<W>`, `bits(T)`, `wide(T)`)."""
    found = [(m.group(1), m.start(1)) for m in _WILD_TVAR.finditer(text)]
    found += [(m.group(1), m.start(1)) for m in _TVAR.finditer(text)]
    return sorted(found, key=lambda nm: nm[1])


def _check_type_variables(name: str, text: str, lhs_start: int, arrow: int, source: str, line: int) -> None:
    """A type variable on the right side or in the predicate must occur on the left side: nothing
    else gives it a value, so a predicate on it would be decided by whatever the verifier tries."""
    bound = {v for v, _ in _type_variables(text[lhs_start:arrow])}
    for v, off in _type_variables(text[arrow:]):
        if v not in bound:
            raise RuleFileError(source, line, arrow + off + 1,
                                f"rule {name}: type variable {v} is not bound by the left side")


#: Rules are patterns of a few operations; the pattern compiler, the matcher and the predicate
#: evaluator recurse on them, so a rule nested deeper than this is refused when the file is read.
MAX_RULE_DEPTH = 64


def _depth(node: Raw) -> int:
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((a, d + 1) for a in n.args)
    return deepest


def _names(node: Raw) -> set[str]:
    out: set[str] = set()
    if node.kind == "name" and node.text not in ("true", "false"):
        out.add(node.text)
    for a in node.args:
        out |= _names(a)
    if node.kind == "call" and node.text in ("bits", "tmin", "tmax", "is_signed", "is_unsigned", "fits", "sum_fits",
                                              "wide", "narrow", "signed", "unsigned", "eq", "ne", "represents"):
        # type arguments are not wildcards
        out = {n for n in out if not re.match(r"^[A-Z][A-Za-z0-9]*$", n) and not re.match(r"^[ui]\d+$", n)}
    return out


def parse_rules(text: str, source: str = "<string>") -> list[Rule]:
    rules: list[Rule] = []
    # A rule and its continuation lines, joined with single spaces; `segments` maps each piece of the
    # joined text back to (offset in joined text, line number, column of the piece in its line), so
    # that an error inside a continuation line reports that line and column.
    pending: Optional[tuple[int, str]] = None
    segments: list[tuple[int, int, int]] = []

    def flush() -> None:
        if pending is None:
            return
        try:
            rules.append(parse_rule(pending[1], source, pending[0]))
        except RuleFileError as e:
            if e.line != pending[0] or len(segments) < 2:
                raise
            offset, line, col0 = max((sg for sg in segments if sg[0] < e.column), default=segments[0])
            raise RuleFileError(source, line, col0 + e.column - offset, e.message) from None

    for i, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0].rstrip()
        if not body.strip():
            continue
        if line[0].isspace() and pending is not None:
            piece = body.strip()
            segments.append((len(pending[1]) + 1, i, len(body) - len(body.lstrip())))
            pending = (pending[0], pending[1] + " " + piece)
            continue
        flush()
        pending = (i, body)
        segments = [(0, i, 0)]
    flush()
    seen: dict[str, Rule] = {}
    for r in rules:
        if r.name in seen:
            raise RuleFileError(source, r.line, 1, f"rule name {r.name!r} already used on line {seen[r.name].line}")
        seen[r.name] = r
    return rules


def load_rule_file(path: str | Path) -> list[Rule]:
    """Parse a rule file (through the disk cache of pitchfork/trs/cache.py: a file parsed before loads
    without lark); a file that cannot be read (missing, a directory, not UTF-8) raises
    pitchfork.errors.InputFileError naming it."""
    from pitchfork.errors import read_text

    p = Path(path)
    return parse_rules_cached(read_text(p, "rule file"), str(p), parse_rules)


@dataclass
class RuleSet:
    """Rules indexed by the op at the root of their left side."""

    rules: list[Rule]
    index: dict[str, list[tuple[Rule, Pattern]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names: dict[str, Rule] = {}
        for r in self.rules:
            if r.name in names:
                other = names[r.name]
                raise RuleFileError(r.source, r.line, 1, f"rule name {r.name!r} also used at {other.location}")
            names[r.name] = r
            for p in r.patterns:
                assert isinstance(p, PApp)
                self.index.setdefault(p.op, []).append((r, p))

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> "RuleSet":
        rules: list[Rule] = []
        for p in paths:
            rules.extend(load_rule_file(p))
        return cls(rules)

    def __len__(self) -> int:
        return len(self.rules)

    def compiled(self) -> "CompiledRules":
        """The rules compiled for matching (pitchfork/trs/compiled.py), built on first use."""
        c = self.__dict__.get("_compiled")
        if c is None:
            from pitchfork.trs.compiled import CompiledRules

            c = self.__dict__["_compiled"] = CompiledRules(self.index)
        return c

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_compiled", None)  # closures: rebuilt where the rule set is unpickled
        return state

    def by_name(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# Right-hand sides


#: is_const_expr of each raw node of a right side (a pure function of the node, asked at every node of
#: every rewrite): id -> (node, value); the node is kept so its id is not reused
_CONST_EXPR: dict[int, tuple[Raw, bool]] = {}


def _const_expr(node: Raw) -> bool:
    hit = _CONST_EXPR.get(id(node))
    if hit is None:
        hit = _CONST_EXPR[id(node)] = (node, is_const_expr(node))
    return hit[1]


@functools.lru_cache(maxsize=4096)
def _wildcard_base(text: str) -> str:
    return split_wildcard(text)[0]


class RhsBuilder(_Elaborator):
    """Builds the right-hand side term of a rule under match bindings."""

    def __init__(self, b: Bindings, bounds: Callable[[Term], tuple[int, int]]) -> None:
        super().__init__("<rule>", None)
        self.b = b
        consts = {k: v.value for k, v in b.terms.items() if _CWILD_RE.match(k)}
        self.domain = PyDomain(consts, b.terms, b.types, bounds)

    def is_constant_expr(self, node: Raw) -> bool:
        return _const_expr(node)

    def constant(self, node: Raw, expected: Optional[ScalarType]) -> Optional[Term]:
        if not _const_expr(node):
            return None
        if expected is None:
            raise NoRewrite(f"no type for constant expression at column {node.column}")
        try:
            v = evaluate(node, self.domain)
        except PredicateError as e:
            raise NoRewrite(str(e)) from None
        if not expected.contains(int(v)):
            raise NoRewrite(f"constant {v} does not fit {expected}")
        return const(int(v), expected)

    def name(self, node: Raw) -> Term:
        return self.b.terms[_wildcard_base(node.text)]

    def type_param(self, node: Raw) -> Optional[ScalarType]:
        if node.tparam_text is None:
            return None
        t = parse_type_expr(node.tparam_text).eval(self.b.types)
        if t is None:
            raise NoRewrite(f"type {node.tparam_text} undefined")
        return t


def build_rhs(rule: Rule, b: Bindings, bounds: Callable[[Term], tuple[int, int]],
              expected: Optional[ScalarType] = None) -> Term:
    """The right side under bindings b; `expected` (the matched term's type) types bare constants at
    the root exactly as the verifier does. Built by the rule's compiled builder (pitchfork/trs/rhs.py:
    the same term as the elaborator's, `build_rhs_interpreted`, NoRewrite where that fails)."""
    assert rule.rhs_raw is not None
    hit = _BUILDERS.get(id(rule.rhs_raw))
    if hit is None:
        hit = _BUILDERS[id(rule.rhs_raw)] = (rule.rhs_raw, compile_rhs(rule.rhs_raw, NoRewrite))
    return hit[1](b, bounds, expected)


def build_rhs_interpreted(rule: Rule, b: Bindings, bounds: Callable[[Term], tuple[int, int]],
                          expected: Optional[ScalarType] = None) -> Term:
    """build_rhs by the elaborator (RhsBuilder): the definition the compiled builders are tested against."""
    assert rule.rhs_raw is not None
    try:
        return RhsBuilder(b, bounds).elab(rule.rhs_raw, expected)
    except FPIRSyntaxError as e:
        raise NoRewrite(e.message) from None


#: the compiled builder of each right side (pitchfork/trs/rhs.py), made at its first use: id -> (node,
#: builder); the node is kept so its id is not reused
_BUILDERS: dict[int, tuple[Raw, Callable[..., Term]]] = {}


def check_predicate(rule: Rule, b: Bindings, bounds: Callable[[Term], tuple[int, int]],
                    streams: Optional[Streams] = None) -> bool:
    if rule.pred_raw is None:
        return True
    consts = {k: v.value for k, v in b.terms.items() if _CWILD_RE.match(k)}
    try:
        return bool(evaluate(rule.pred_raw, PyDomain(consts, b.terms, b.types, bounds, streams)))
    except (PredicateError, KeyError):
        return False
