"""Text syntax of FPIR terms, in the paper's notation.

    saturating_cast<u8>(absd(widening_add(a_u8, c_u8) + widening_shl(b_u8, 1), d_u16) + e_u16)

* variables are `name_type` (`a_u8`, `k_i16`); the text is lane-agnostic;
* bare integers take their type from the context (the other operands of the op, through each op's
  `arg_hint`); `x(2)` (the paper's broadcast) is accepted and means the bare constant 2; a constant
  whose type cannot be inferred is written `u16(5)`;
* casts are `u8(...)` ... `i64(...)`; `reinterpret<t>(...)`, `saturating_cast<t>(...)`;
* every other op is a call by its name; infix `+ - * / % << >> & | ^ ~` and comparisons use C
  precedence (`&&`, `||`, `!` are accepted for u1 operands);
* a node carrying flags (fpir.ops.FlagSpec) is written as a call with the flags after dots:
  `add.nsw(a_i32, b_i32)` is `a_i32 + b_i32` with the no-signed-wrap fact; infix `+` never carries one.

Invariant: `parse(to_text(t)) is t` for every term (terms are interned). Errors carry line/column.
No pass here recurses on the depth of the expression: the LALR parser builds the raw tree bottom-up
as it reduces (lark's inline transformer), elaboration runs on an explicit stack of generators, and
printing is a post-order walk, so 10,000-node expressions (chains, nests, unary towers) are fine.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generator, Optional, Sequence, Union

from fpir.diskcache import lark_parser
from fpir.ops import make
from fpir.opspec import OPS, known_op, spec, split_flags
from fpir.term import Term, const, var
from fpir.trampoline import trampoline
from fpir.types import FPIRTypeError, ScalarType, i32, is_type_name, parse_type, u1

if TYPE_CHECKING:  # lark is imported where a parse needs it (`_parser`): `_fast_raw` parses most text without it
    from lark import Token, Tree


class FPIRSyntaxError(ValueError):
    def __init__(self, message: str, line: int = 0, column: int = 0, source: str = "<expr>") -> None:
        self.message, self.line, self.column, self.source = message, line, column, source
        super().__init__(f"{source}:{line}:{column}: {message}")


GRAMMAR = r"""
?start: expr
?expr: lor
?lor: land | lor "||" land -> lor
?land: bor | land "&&" bor -> land
?bor: bxor | bor "|" bxor -> bor
?bxor: band | bxor "^" band -> bxor
?band: eq | band "&" eq -> band
?eq: rel | eq EQOP rel -> binop
?rel: shift | rel RELOP shift -> binop
?shift: sum | shift SHIFTOP sum -> binop
?sum: prod | sum ADDOP prod -> binop
?prod: unary | prod MULOP unary -> binop
?unary: "-" unary -> neg
      | "~" unary -> bnot
      | "!" unary -> lnot
      | atom
?atom: INT -> int
     | NAME -> name
     | TEMPLATE "(" args ")" -> tcall
     | NAME "(" [args] ")" -> call
     | "(" expr ")"
args: expr ("," expr)*

TEMPLATE.3: /(saturating_cast|reinterpret|cast)\s*<[A-Za-z0-9_(), ]+>/
EQOP: "==" | "!="
RELOP: "<=" | ">=" | "<" | ">"
SHIFTOP.2: "<<" | ">>"
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
NAME: /[A-Za-z_$][A-Za-z0-9_.$]*/
INT: /0x[0-9a-fA-F]+|[0-9]+/
COMMENT: /#[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""


BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "<<": "shl", ">>": "shr",
          "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_VAR_RE = re.compile(r"^(.+)_([ui](?:1|8|16|32|64|128|256))$")


# ---------------------------------------------------------------------------------------------
# Raw syntax tree (before typing), with source positions


@dataclass(frozen=True)
class Raw:
    kind: str  # int | name | call | neg | bnot | lnot
    text: str
    args: tuple["Raw", ...]
    line: int
    column: int
    tparam_text: Optional[str] = None
    #: Some sub-tree is a name; computed once from the children (O(1) per node, no recursion).
    has_names: bool = field(init=False, compare=False, repr=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "has_names", self.kind == "name" or any(a.has_names for a in self.args))


def _pos(meta: Any) -> tuple[int, int]:
    return (getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0)


class _ToRaw:
    """One method per grammar rule: (meta, transformed children) -> Raw. Driven by `_transform`."""

    def int(self, meta: Any, children: list[Token]) -> Raw:
        return Raw("int", str(children[0]), (), *_pos(meta))

    def name(self, meta: Any, children: list[Token]) -> Raw:
        return Raw("name", str(children[0]), (), *_pos(meta))

    def args(self, meta: Any, children: list[Raw]) -> tuple[Raw, ...]:
        return tuple(children)

    def call(self, meta: Any, children: list[Any]) -> Raw:
        name = str(children[0])
        args = children[1] if len(children) > 1 and children[1] is not None else ()
        return Raw("call", name, tuple(args), *_pos(meta))

    def tcall(self, meta: Any, children: list[Any]) -> Raw:
        m = re.match(r"(\w+)\s*<(.*)>$", str(children[0]), re.S)
        assert m
        return Raw("call", m.group(1), tuple(children[1]), *_pos(meta), tparam_text=m.group(2).strip())

    def binop(self, meta: Any, children: list[Any]) -> Raw:
        a, op, b = children
        return Raw("call", BINOPS[str(op)], (a, b), *_pos(meta))

    def _named(op: str):  # type: ignore[misc]
        def f(self: Any, meta: Any, children: list[Any]) -> Raw:
            return Raw("call", op, tuple(children), *_pos(meta))

        return f

    bor = _named("or")
    bxor = _named("xor")
    band = _named("and")
    lor = _named("lor")
    land = _named("land")

    def neg(self, meta: Any, children: list[Raw]) -> Raw:
        return Raw("neg", "-", (children[0],), *_pos(meta))

    def bnot(self, meta: Any, children: list[Raw]) -> Raw:
        return Raw("call", "not", (children[0],), *_pos(meta))

    def lnot(self, meta: Any, children: list[Raw]) -> Raw:
        return Raw("lnot", "!", (children[0],), *_pos(meta))


def _end_position(text: str) -> tuple[int, int]:
    """(line, column) just after the last non-blank character."""
    lines = text.rstrip().splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


@functools.cache
def _parser(positions: bool) -> Any:
    """The LALR parser, loaded on first use. Without `positions` the tree's nodes carry no line and
    column (tokens keep theirs): a third less parse time, so `parse` uses it and parses again with
    positions only to raise an error (a Raw's position is only ever read for an error message)."""
    return lark_parser(GRAMMAR, "fpir-text" if positions else "fpir-text-unpositioned", parser="lalr",
                       propagate_positions=positions, maybe_placeholders=False)


_TO_RAW = _ToRaw()


def _transform(tree: Tree) -> Raw:
    """The parse tree as Raw, post-order on an explicit stack (lark's recursive Transformer would hit
    Python's recursion limit on a 10,000-deep expression; the LALR parser itself does not recurse)."""
    from lark import Tree
    done: list[Any] = []  # transformed children, in order
    stack: list[tuple[Any, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, Tree):
            done.append(node)  # a Token
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))
            continue
        n = len(node.children)
        children = done[len(done) - n:] if n else []
        del done[len(done) - n:]
        done.append(getattr(_TO_RAW, str(node.data))(node.meta, children))
    return done[0]


#: binary operators after an operand, longest first within each group of lark's lexer order (`_fast_raw`)
_FAST_BINOPS = ("<<", ">>", "==", "!=", "<=", ">=", "||", "&&", "<", ">", "+", "-", "*", "/", "%", "|", "^", "&")
#: binding strength of each binary operator (the grammar's levels, `lor` lowest; all left-associative);
#: a prefix operator binds tighter than all of them
_FAST_PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<=": 7, ">=": 7, "<": 7, ">": 7,
              "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
#: the call name of the operators that are not `binop`s in the grammar (`_ToRaw.bor` ...)
_FAST_NAMED = {"||": "lor", "&&": "land", "|": "or", "^": "xor", "&": "and"}
_FAST_UNARY = {"-": ("neg", "-"), "~": ("call", "not"), "!": ("lnot", "!")}
#: the grammar's terminals (GRAMMAR: TEMPLATE, NAME, INT), matched where an operand starts
_FAST_TEMPLATE = re.compile(r"(saturating_cast|reinterpret|cast)\s*<[A-Za-z0-9_(), ]+>")
_FAST_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_.$]*")
_FAST_INT = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")
_FAST_WS = " \t\f\r\n"  # the grammar's %ignore WS (and nothing else is skipped; a comment declines)


def _fast_raw(text: str) -> Optional[Raw]:
    """The Raw tree lark's LALR parser gives for `text` without positions (every line and column 0), from
    an operator-precedence parse on explicit stacks (no recursion: 10,000-deep text is fine), or None
    wherever that is not certain: any syntax error, a comment, a character outside the grammar. Then
    `parse_raw` asks lark, whose answer (tree or located error) is the reference; so lark is imported
    only for text this parser declines (a cold `pitchfork lift` of a valid expression never imports it).

    Same tree as lark's, by construction from the grammar: the lexer tries the terminals in lark's order
    (TEMPLATE before NAME where an operand starts; after an operand the longest operator first, as
    lark's lexer orders SHIFTOP, then two-character operators, then one-character ones), so tokens
    split as lark's contextual lexer splits them; every binary level is left-associative and the
    prefix operators bind tightest; parentheses leave no node; a call's arguments are the operands
    pushed since its `(`. tests/fpir/test_fpir_text.py checks it against lark on random text."""
    n = len(text)
    i = 0
    operands: list[Raw] = []
    # ("bin", op) | ("un", op) | ("paren",) | ("call", name, template parameter text or None, operand mark)
    ops: list[tuple[Any, ...]] = []

    def reduce_top() -> None:
        top = ops.pop()
        if top[0] == "un":
            kind, name = _FAST_UNARY[top[1]]
            operands.append(Raw(kind, name, (operands.pop(),), 0, 0))
            return
        b = operands.pop()
        a = operands.pop()
        op = top[1]
        operands.append(Raw("call", _FAST_NAMED[op] if op in _FAST_NAMED else BINOPS[op], (a, b), 0, 0))

    expect_operand = True
    while True:
        while i < n and text[i] in _FAST_WS:
            i += 1
        if expect_operand:
            if i >= n:
                return None
            c = text[i]
            if c in _FAST_UNARY:
                ops.append(("un", c))
                i += 1
                continue
            if c == "(":
                ops.append(("paren",))
                i += 1
                continue
            m = _FAST_TEMPLATE.match(text, i)
            if m is not None:  # must be a call with arguments: TEMPLATE "(" args ")"
                tm = re.match(r"(\w+)\s*<(.*)>$", m.group(), re.S)
                assert tm
                i = m.end()
                while i < n and text[i] in _FAST_WS:
                    i += 1
                if i >= n or text[i] != "(":
                    return None
                ops.append(("call", tm.group(1), tm.group(2).strip(), len(operands)))
                i += 1
                continue
            m = _FAST_NAME.match(text, i)
            if m is not None:
                i = m.end()
                j = i
                while j < n and text[j] in _FAST_WS:
                    j += 1
                if j < n and text[j] == "(":  # NAME "(" [args] ")"
                    k = j + 1
                    while k < n and text[k] in _FAST_WS:
                        k += 1
                    if k < n and text[k] == ")":
                        operands.append(Raw("call", m.group(), (), 0, 0))
                        i = k + 1
                        expect_operand = False
                        continue
                    ops.append(("call", m.group(), None, len(operands)))
                    i = j + 1
                    continue
                operands.append(Raw("name", m.group(), (), 0, 0))
                expect_operand = False
                continue
            m = _FAST_INT.match(text, i)
            if m is not None:
                operands.append(Raw("int", m.group(), (), 0, 0))
                i = m.end()
                expect_operand = False
                continue
            return None
        if i >= n:
            break
        c = text[i]
        if c == ")" or c == ",":
            while ops and ops[-1][0] in ("bin", "un"):
                reduce_top()
            if not ops:
                return None
            top = ops[-1]
            if c == ",":
                if top[0] != "call":
                    return None
                i += 1
                expect_operand = True
                continue
            ops.pop()
            if top[0] == "call":
                args = tuple(operands[top[3]:])
                del operands[top[3]:]
                operands.append(Raw("call", top[1], args, 0, 0, tparam_text=top[2]))
            i += 1
            continue
        for op in _FAST_BINOPS:
            if text.startswith(op, i):
                break
        else:
            return None
        prec = _FAST_PREC[op]
        while ops and (ops[-1][0] == "un" or (ops[-1][0] == "bin" and _FAST_PREC[ops[-1][1]] >= prec)):
            reduce_top()
        ops.append(("bin", op))
        i += len(op)
        expect_operand = True
    while ops and ops[-1][0] in ("bin", "un"):
        reduce_top()
    if ops or len(operands) != 1:
        return None
    return operands[0]


def parse_raw(text: str, source: str = "<expr>", *, positions: bool = True) -> Raw:
    """The Raw tree of `text`; `positions=False` leaves every node's line and column 0 (see `_parser`),
    and then tries `_fast_raw` (the same tree, without lark) first."""
    if not positions:
        fast = _fast_raw(text)
        if fast is not None:
            return fast
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    try:
        return _transform(_parser(positions).parse(text))
    except FPIRSyntaxError as e:
        raise FPIRSyntaxError(e.message, e.line, e.column, source) from None
    except UnexpectedEOF as e:
        raise FPIRSyntaxError("unexpected end of input", *_end_position(text), source) from None
    except UnexpectedCharacters as e:
        raise FPIRSyntaxError(f"unexpected character {text[e.pos_in_stream]!r}", e.line, e.column, source) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":  # lark places $END on the last token; point just past the input instead
            raise FPIRSyntaxError("unexpected end of input", *_end_position(text), source) from None
        raise FPIRSyntaxError(f"unexpected {str(tok)!r}", e.line, e.column, source) from None
    except UnexpectedInput as e:
        raise FPIRSyntaxError(str(e).splitlines()[0], e.line, e.column, source) from None


# ---------------------------------------------------------------------------------------------
# Typing (elaboration)


def _int_value(node: Raw) -> Optional[int]:
    if node.kind == "int":
        return int(node.text, 0)
    if node.kind == "neg" and node.args[0].kind == "int":
        return -int(node.args[0].text, 0)
    return None


class _Elaborator:
    def __init__(self, source: str, env: Optional[dict[str, ScalarType]]) -> None:
        self.source = source
        self.env = env or {}

    def error(self, node: Raw, msg: str) -> FPIRSyntaxError:
        return FPIRSyntaxError(msg, node.line, node.column, self.source)

    def is_constant_expr(self, node: Raw) -> bool:
        """True for sub-expressions whose type comes from the context (bare constants)."""
        return not node.has_names

    def constant(self, node: Raw, expected: Optional[ScalarType]) -> Optional[Term]:
        v = _int_value(node)
        if v is None:
            return None
        t = expected or i32
        if not t.contains(v):
            raise self.error(node, f"constant {v} does not fit in {t}")
        return const(v, t)

    def type_param(self, node: Raw) -> Optional[ScalarType]:
        if node.tparam_text is None:
            return None
        try:
            return parse_type(node.tparam_text)
        except FPIRTypeError as e:
            raise self.error(node, str(e)) from None

    def elab(self, node: Raw, expected: Optional[ScalarType]) -> Term:
        """The typed term for `node`. `_elab` is recursive in form but run by `trampoline`: each
        sub-expression is a `yield (child, expected type)`, so depth costs heap, not stack frames."""
        return trampoline(self._elab, node, expected)

    def _elab(self, node: Raw, expected: Optional[ScalarType]) -> Generator[tuple[Raw, Optional[ScalarType]], Term, Term]:
        c = self.constant(node, expected)
        if c is not None:
            return c
        if node.kind == "name":
            return self.name(node)
        if node.kind == "neg":
            x = yield (node.args[0], expected)
            return self.apply(node, "sub", [const(0, x.type), x])
        if node.kind == "lnot":
            x = yield (node.args[0], u1)
            if x.type != u1:
                raise self.error(node, f"'!' needs a u1 operand, got {x.type}")
            return self.apply(node, "not", [x])
        return (yield from self.call(node, expected))

    def name(self, node: Raw) -> Term:
        if node.text in self.env:
            return var(node.text, self.env[node.text])
        m = _VAR_RE.match(node.text)
        if not m or not is_type_name(m.group(2)):
            raise self.error(node, f"unknown name {node.text!r} (variables are written name_type, e.g. a_u8)")
        return var(m.group(1), parse_type(m.group(2)))

    def call(self, node: Raw, expected: Optional[ScalarType]) -> Generator[tuple[Raw, Optional[ScalarType]], Term, Term]:
        name, args = node.text, node.args
        if name in ("lor", "land"):
            terms = []
            for a in args:
                terms.append((yield (a, u1)))
            if any(t.type != u1 for t in terms):
                raise self.error(node, f"'{'||' if name == 'lor' else '&&'}' needs u1 operands")
            return self.apply(node, "or" if name == "lor" else "and", terms)
        if name == "x" and len(args) == 1 and node.tparam_text is None:
            return (yield (args[0], expected))  # the paper's broadcast notation x(c)
        ttype = self.type_param(node)
        if ttype is None and is_type_name(name):
            ttype, name = parse_type(name), "cast"
        name, flags = split_flags(name)
        if not known_op(name):
            raise self.error(node, f"unknown operation {name!r}")
        s = spec(name)
        if s.explicit_type and ttype is None:
            raise self.error(node, f"{name} needs a type: {name}<t>(...)")
        if not s.explicit_type and ttype is not None:
            raise self.error(node, f"{name} takes no type parameter")
        if len(args) != s.arity:
            raise self.error(node, f"{name} takes {s.arity} argument(s), got {len(args)}")
        hint = s.arg_hint
        inner_expected = ttype if s.explicit_type else expected
        terms: list[Optional[Term]] = [None] * len(args)
        for i, a in enumerate(args):
            if not self.is_constant_expr(a):
                h = hint(i, [None] * len(args), inner_expected) if hint else None
                terms[i] = yield (a, h)
        known = [t.type if t is not None else None for t in terms]
        for i, a in enumerate(args):
            if terms[i] is None:
                h = hint(i, known, inner_expected) if hint else None
                if h is None and hint:  # e.g. rounding_shr(u8(255), 8): use the constants typed so far
                    h = hint(i, [t.type if t is not None else None for t in terms], inner_expected)
                terms[i] = yield (a, h)
        return self.apply(node, name, terms, ttype, flags)  # type: ignore[arg-type]

    def apply(self, node: Raw, op: str, terms: list[Term], ttype: Optional[ScalarType] = None,
              flags: Sequence[str] = ()) -> Term:
        terms = retype_shift_constant(op, terms, other_width_only=True)
        try:
            return make(op, *terms, type=ttype, flags=flags)
        except FPIRTypeError as e:
            raise self.error(node, str(e)) from None


# Shift ops and the operand that is their amount. A constant amount may be written at any integer type
# (`x_i32 >> u32(15)`, `>> i64(15)`: Halide's simplifier and users spell it so). `retype_shift_constant`
# gives it the type the op takes (`>> 15`'s) when the value fits there with the same meaning (a negative
# amount, which shifts the other way, keeps a signed type of that width); a value that does not fit keeps
# its type and the op's type rule reports it. The parser applies it to amounts of another width (which
# no term can hold, so parse(to_text(t)) is still t); lifting applies it to every amount
# (pitchfork.selection.lift.normalize_shift_constants), so the rules see one form.
SHIFT_AMOUNT = {"shl": 1, "shr": 1, "widening_shl": 1, "widening_shr": 1, "rounding_shr": 1, "rounding_shl": 1,
                "saturating_shl": 1, "mul_shr": 2, "rounding_mul_shr": 2}


def retype_shift_constant(op: str, terms: Sequence[Term], other_width_only: bool = False) -> list[Term]:
    terms = list(terms)
    i = SHIFT_AMOUNT.get(op)
    if i is None or len(terms) <= i or not terms[i].is_const or terms[0].is_const:
        return terms
    amount, value_t = terms[i], terms[0].type
    if value_t.is_bool or amount.type.is_bool or (other_width_only and amount.type.bits == value_t.bits):
        return terms
    if op in ("mul_shr", "rounding_mul_shr"):
        want = value_t.to_unsigned()
    else:
        want = value_t if amount.value >= 0 or value_t.signed else value_t.to_signed()
    if amount.type == want or not want.contains(amount.value):
        return terms
    return [*terms[:i], const(amount.value, want), *terms[i + 1:]]


def parse(text: str, env: Optional[dict[str, ScalarType]] = None, source: str = "<expr>",
          expected: Optional[ScalarType] = None) -> Term:
    """Parse and type-check one expression. `env` may give types to untyped variable names.

    Parsed without node positions first (they are only for error messages); any error is raised
    from a second, positioned parse and elaboration, so its line and column are exact."""
    try:
        return _Elaborator(source, env).elab(parse_raw(text, source, positions=False), expected)
    except Exception:  # noqa: BLE001 - raised again, with positions, just below
        pass
    return _Elaborator(source, env).elab(parse_raw(text, source), expected)
