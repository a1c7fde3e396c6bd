"""A hand-written tokenizer and recursive-descent parser for Halide's statement text that builds the
`pitchfork.frontend.ir` loop nest in one pass: the fast path of `pitchfork.frontend.stmt`.

`stmt_grammar.lark` stays the definition of the language, and `stmt._Builder` the definition of what a
parse tree means: this parser follows the grammar's productions as lark's LALR parser derives them and,
where lark would make a tree node, asks the same builder for the node it would make of it (its
`*_of` methods: the checks and the node once the parts are built; scopes through `bind`/`unbind`), so
no parse tree is made. About twice as fast as lark's tree through the builder from the same tokens.

Invariant: `fast_stmt(text, builder)` (`fast_expr`) returns exactly what `builder.stmts` (`expr`) makes of
lark's tree for `text` without node positions, statement `line`s included, or None (it declines), or
raises the HalideParseError the builder raises on that tree (possibly with another position: the caller
then reports the error from a positioned lark parse, as for any error). It declines on anything it is not
sure lark would parse the same way (any syntax error, a word in a position where lark's contextual lexer
could classify it differently, a character no token starts with), and the caller then parses with lark,
so errors, their lines and columns, and the rare constructs this parser leaves to lark behave exactly as
before. tests/pitchfork/frontend/test_stmt_fast.py checks equality with lark + builder on every golden
and benchmark statement, on the error cases and on generated statements.

How lark's contextual lexer is mirrored: words (`[A-Za-z_][A-Za-z0-9_$]*(\\.[A-Za-z0-9_$]+)*`) are one
token kind here and are classified by the position the parser is in, as lark classifies them by the
terminals its parser state accepts: where a type may stand, a word that is a whole type (`uint8x16`) is
a TYPE (priority 2 in the grammar); where a number may stand, `inf`/`nan` (+ `f`/`h`) are FLOATs; a
keyword is a keyword only where the grammar accepts it; and a word where only a NAME fits is a NAME.

Statement lines: the builder gives a statement the line of the first token its tree keeps; every
statement this parser accepts keeps a token on its first token's line (a header has no newline before
its first kept token; `fork` and `atomic`, whose can, are left to lark), so that line is the first token's.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING

from pitchfork.frontend import ir
from pitchfork.frontend.htypes import INT32, Bool, HType

if TYPE_CHECKING:
    from pitchfork.frontend.stmt import _Builder

#: one alternative per token kind; lark's priorities decide the order where two kinds can start at one
#: character (HANDLE_TYPE over "("; FLOAT over INT; two-character operators over one-character ones).
#: The other kinds start with disjoint characters, so their order only decides how many alternatives
#: each token tries first: the most frequent first (operators, then words: a statement's tokens are
#: about 55% / 28% of them; 27% fewer instructions tokenizing sobel3x3's statement than nl-first).
_TOKEN = re.compile(
    r"[\t ]*(?:"  # spaces and tabs before a token are skipped (lark's %ignore); no token starts with one
    r"(?P<handle>\((?:struct |class )?[A-Za-z_][A-Za-z0-9_:]*(?: const)? ?\*+\))"
    r"|(?P<op>==|!=|<=|>=|\|\||&&|[-+*/%<>!=(){}\[\],])"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_$]+)*)"
    r"|(?P<float>(?:\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]?\d+)[fh]?(?![A-Za-z0-9_$.]))"
    r"|(?P<int>\d+)"
    r"|(?P<nl>(?:\r?\n[\t ]*)+)"
    r'|(?P<string>"(?:\\.|[^"\\])*")'
    r"|(?P<bad>[^\t ]))",  # anything else, so that finditer skips nothing but trailing blanks
    re.S,
)
_NEWLINE = re.compile("\n")
_TYPE_WORD = re.compile(r"(?:u?int|b?float)\d+(?:x\d+)?")
_FLOAT_WORD = re.compile(r"(?:inf|nan)[fh]?")
_FOR_KINDS = frozenset({"for", "parallel", "vectorized", "unrolled", "extern", "gpu_block", "gpu_thread", "gpu_lane"})
#: statement keywords: a word at the start of a statement that equals one is that keyword (lark retypes
#: a NAME equal to an acceptable keyword)
_STMT_KEYWORDS = frozenset({"let", "predicate", "allocate", "free", "if", "produce", "consume", "assert", "fork",
                            "acquire", "atomic", "hoisted_storage", "reinterpret"})
#: binary operators' precedence (|| 1, && 2, comparisons 3 (not associative), + - 4, * / % 5), as the
#: grammar's rules nest them
_PRECEDENCE: dict[str, int] = {
    "||": 1, "&&": 2, "==": 3, "!=": 3, "<=": 3, ">=": 3, "<": 3, ">": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5,
}
#: loop keywords as the IR names them (the rest are the same)
LOOP_KIND = {"for": "serial"}
#: logic operators: both operands are conditions
_LOGIC = frozenset({"&&", "||"})


class _Decline(Exception):
    """Not sure lark would parse this the same way: the caller parses with lark."""


def fast_stmt(text: str, builder: _Builder) -> ir.Stmt | None:
    """What `builder.stmts` makes of `stmt.parse_tree(text, positions=False)`, or None to let lark parse.
    `text` ends with a newline, as parse_tree receives it."""
    try:
        return _Parser(text, builder).start()
    except (_Decline, IndexError):  # IndexError: ran past the end of the token list
        return None


def fast_expr(text: str, builder: _Builder) -> ir.Expr | None:
    """What `builder.expr` makes of `stmt.parse_tree(text, "expr", positions=False)` (`text` stripped),
    or None to let lark parse."""
    try:
        p = _Parser(text, builder)
        e = p.expr()
        p.expect_end()
        return e
    except (_Decline, IndexError):
        return None


class _Parser:
    """Tokens as parallel lists (kind, text; their matches for offsets); `i` is the next token; `b` builds
    the nodes."""

    __slots__ = ("kinds", "vals", "matches", "newlines", "text", "i", "b", "words")

    def __init__(self, text: str, builder: _Builder) -> None:
        ms = list(_TOKEN.finditer(text))
        kinds: list[str] = [m.lastgroup for m in ms]  # type: ignore[misc]
        if "bad" in kinds:
            raise _Decline
        self.kinds = kinds
        self.vals = [m[m.lastindex] for m in ms]  # the one named group that matched: the token's text
        kinds.append("end")
        self.vals.append("")
        self.matches = ms
        self.newlines: list[int] | None = None  # every newline's offset, made when a line is first asked for
        self.text = text
        self.i = 0
        self.b = builder
        #: word -> `_word_kind(word)` for the words met in an operand position so far (a statement
        #: repeats its names hundreds of times: one lookup instead of two regex matches each)
        self.words: dict[str, int] = {}

    # ---- tokens ---------------------------------------------------------------------------------
    def offset(self, i: int) -> int:
        """Where token `i` starts in the text (the end for the end token)."""
        ms = self.matches
        return ms[i].start(ms[i].lastindex) if i < len(ms) else len(self.text)

    def line(self, i: int) -> int:
        """The 1-based line of token `i`."""
        newlines = self.newlines
        if newlines is None:
            newlines = self.newlines = [m.start() for m in _NEWLINE.finditer(self.text)]
        return bisect_left(newlines, self.offset(i)) + 1  # newlines before the token, plus one

    def is_op(self, v: str) -> bool:
        return self.kinds[self.i] == "op" and self.vals[self.i] == v

    def is_word(self, v: str) -> bool:
        return self.kinds[self.i] == "word" and self.vals[self.i] == v

    def is_type(self, i: int) -> bool:
        """Whether token `i` is a HANDLE_TYPE or, where a TYPE is acceptable, a TYPE."""
        kind = self.kinds[i]
        return kind == "handle" or (kind == "word" and _TYPE_WORD.fullmatch(self.vals[i]) is not None)

    def op(self, v: str) -> None:
        if self.kinds[self.i] != "op" or self.vals[self.i] != v:
            raise _Decline
        self.i += 1

    def keyword(self, v: str) -> None:
        if self.kinds[self.i] != "word" or self.vals[self.i] != v:
            raise _Decline
        self.i += 1

    def name(self) -> str:
        """A NAME where only a NAME fits (lark's contextual lexer then lexes any word as NAME)."""
        i = self.i
        if self.kinds[i] != "word":
            raise _Decline
        self.i = i + 1
        return self.vals[i]

    def nl(self) -> None:
        if self.kinds[self.i] != "nl":
            raise _Decline
        self.i += 1

    def int_val(self) -> int:
        i = self.i
        if self.kinds[i] != "int":
            raise _Decline
        self.i = i + 1
        return int(self.vals[i])

    def expect_end(self) -> None:
        if self.kinds[self.i] != "end":
            raise _Decline

    # ---- statements -----------------------------------------------------------------------------
    def start(self) -> ir.Stmt:
        if self.kinds[self.i] == "nl":
            self.i += 1
        return self.stmts("end")

    def block(self) -> ir.Stmt:
        self.op("{")
        self.nl()
        body = self.stmts("}")
        self.i += 1
        return body

    def stmts(self, until: str) -> ir.Stmt:
        """The statements up to the end ("end") or the closing brace ("}"), as `builder.stmts`: a `let`
        or `allocate` binds its name for the statements after it in the list."""
        undo: list = []
        spine: list[tuple[str, object, int]] = []
        kinds, vals = self.kinds, self.vals
        try:
            if until == "end":
                while kinds[self.i] != "end":
                    spine.append(self.stmt(undo))
            else:
                while kinds[self.i] != "op" or vals[self.i] != "}":
                    spine.append(self.stmt(undo))
        finally:
            self.b.unbind(undo)
        return self.b.assemble(spine)

    def stmt(self, undo: list) -> tuple[str, object, int]:
        """One statement list entry (`builder.assemble`'s); a `let`/`allocate` is bound into `undo`."""
        i = self.i
        kind, v = self.kinds[i], self.vals[i]
        line = self.line(i)
        if kind == "word":
            nxt = self.offset(i) + len(v)
            if v in _FOR_KINDS and nxt < len(self.text) and self.text[nxt] in " <(":
                return "stmt", self.for_stmt(line), line
            if v in _STMT_KEYWORDS:
                return self.keyword_stmt(v, line, undo)
            if self.kinds[i + 1] == "op" and self.vals[i + 1] == "[" and not _typed_word(v):
                store = self.try_store(line)
                if store is not None:
                    return "stmt", store, line
                self.i = i
        e = self.expr()
        self.nl()
        return "stmt", ir.Evaluate(e, line=line), line

    def try_store(self, line: int) -> ir.Store | None:
        """`NAME[index] = value` (None, position unchanged by the caller, if no `=` follows the `]`)."""
        name = self.name()
        self.op("[")
        index = self.expr()
        alignment = self.alignment() if self.is_word("aligned") else None
        self.op("]")
        if not self.is_op("="):
            return None
        self.i += 1
        index = self.b.index_of(None, index)
        value = self.expr()
        self.nl()
        return self.b.store_of(None, name, index, alignment, value, None, line)

    def alignment(self) -> tuple[int, int]:
        self.keyword("aligned")
        self.op("(")
        modulus = self.int_val()
        self.op(",")
        remainder = self.int_val()
        self.op(")")
        return modulus, remainder

    def for_stmt(self, line: int) -> ir.For:
        kind = self.vals[self.i]
        self.i += 1
        device = ""
        if self.is_op("<"):
            self.i += 1
            device = self.name()
            if not self.is_op(">"):
                raise _Decline
            self.i += 1
        self.op("(")
        name = self.name()
        self.op(",")
        lo = self.expr()
        self.op(",")
        extent = self.expr()
        self.op(")")
        undo: list = []
        self.b.bind(self.b.vars, name, INT32, undo)
        try:
            body = self.block()
        finally:
            self.b.unbind(undo)
        self.nl()
        return ir.For(name, lo, extent, LOOP_KIND.get(kind, kind), body, device, line=line)

    def keyword_stmt(self, v: str, line: int, undo: list) -> tuple[str, object, int]:
        b = self.b
        if v == "reinterpret":  # an expression statement that starts with a keyword
            e = self.expr()
            self.nl()
            return "stmt", ir.Evaluate(e, line=line), line
        self.i += 1
        if v == "let":
            name = self.name()
            self.op("=")
            value = self.expr()
            if self.is_word("in"):  # `let x = v in body`: an expression statement
                self.i += 1
                body = self.let_body(name, value)
                self.nl()
                return "stmt", ir.Evaluate(body, line=line), line
            self.nl()
            b.bind(b.vars, name, value.type, undo)
            return "let", (name, value), line
        if v == "allocate":
            head = self.allocate_rest()
            b.bind(b.bufs, head[0], head[1], undo)
            return "alloc", head, line
        s: ir.Stmt
        if v == "if":
            s = self.if_rest(line)
            self.nl()
        elif v == "produce" or v == "consume":
            name = self.name()
            s = ir.ProducerConsumer(name, v == "produce", self.block(), line=line)
            self.nl()
        elif v == "free":
            s = ir.Free(self.name(), line=line)
            self.nl()
        elif v == "assert":
            self.op("(")
            cond = self.expr()
            self.op(",")
            msg = self.expr()
            self.op(")")
            self.nl()
            cond = b.bool_of(None, cond)
            b.learn_buffer_type(cond)
            s = ir.AssertStmt(cond, msg, line=line)
        elif v == "predicate":
            self.op("(")
            pred = self.expr()
            self.op(")")
            self.nl()
            name = self.name()
            self.op("[")
            index = b.index_of(None, self.expr())
            alignment = self.alignment() if self.is_word("aligned") else None
            self.op("]")
            self.op("=")
            value = self.expr()
            self.nl()
            s = b.store_of(None, name, index, alignment, value, pred, line)
        elif v == "acquire":
            self.op("(")
            sema = self.expr()
            self.op(",")
            count = self.expr()
            self.op(")")
            s = ir.Acquire(sema, count, self.block(), line=line)
            self.nl()
        elif v == "hoisted_storage":
            name = self.name()
            s = ir.HoistedStorage(name, self.block(), line=line)
            self.nl()
        else:
            # fork / atomic: their keyword can sit on another line than their first kept token, and
            # stmt.parse_stmt parses texts with them with positions (never through here); not handled
            raise _Decline
        return "stmt", s, line

    def if_rest(self, line: int) -> ir.IfThenElse:
        self.op("(")
        cond = self.b.bool_of(None, self.expr())
        self.op(")")
        then = self.block()
        other: ir.Stmt | None = None
        if self.is_word("else"):
            self.i += 1
            if self.is_word("if"):
                self.i += 1
                other = self.if_rest(self.line(self.i))
            else:
                other = self.block()
        return ir.IfThenElse(cond, then, other, line=line)

    def allocate_rest(self) -> tuple[str, HType, tuple[ir.Expr, ...], str, ir.Expr | None, ir.Expr | None,
                                     str]:
        """`stmt._Builder._allocate_head`'s tuple for `NAME[TYPE * extent ...] [in MEMORY] [if cond]`."""
        name = self.name()
        self.op("[")
        i = self.i
        if not self.is_type(i):
            raise _Decline
        type_ = HType.parse(self.vals[i])
        self.i = i + 1
        extents = []
        while self.is_op("*"):
            self.i += 1
            extents.append(self.postfix())
        self.op("]")
        memory = ""
        cond = None
        if self.is_word("in"):
            self.i += 1
            memory = self.name()
        if self.is_word("if"):
            self.i += 1
            cond = self.expr()
        self.nl()
        if self.is_word("custom_new") or self.is_word("custom_delete"):
            raise _Decline  # a custom allocator (an atomic() update's mutex array): rare, left to lark
        return name, type_, tuple(extents), memory, cond, None, ""

    # ---- expressions ----------------------------------------------------------------------------
    def expr(self) -> ir.Expr:
        """`expr`: a let expression, a predicated load (`load if cond`) or an or-expression."""
        i = self.i
        if self.kinds[i] == "word" and self.vals[i] == "let":
            self.i = i + 1
            name = self.name()
            self.op("=")
            value = self.expr()
            self.keyword("in")
            return self.let_body(name, value)
        e = self.binary(1)
        if self.kinds[self.i] == "word" and self.vals[self.i] == "if":
            # only a bare `NAME[...]` (not parenthesized, not typed) is a `load` the grammar predicates
            if not (isinstance(e, ir.Load) and self.kinds[i] == "word"
                    and self.kinds[i + 1] == "op" and self.vals[i + 1] == "["):
                raise _Decline
            self.i += 1
            pred = self.b.bool_of(None, self.binary(1))
            return self.b.load_of(None, e.buffer, e.index, e.alignment, None, pred)
        return e

    def let_body(self, name: str, value: ir.Expr) -> ir.Let:
        """The body of `let name = value in body`, parsed with `name` bound."""
        undo: list = []
        self.b.bind(self.b.vars, name, value.type, undo)
        try:
            body = self.expr()
        finally:
            self.b.unbind(undo)
        return ir.Let(name, value, body, body.type)

    def binary(self, min_prec: int) -> ir.Expr:
        """Precedence climbing over `_PRECEDENCE`; left-associative, comparisons not associative."""
        lhs = self.unary()
        kinds, vals, b = self.kinds, self.vals, self.b
        while kinds[self.i] == "op":
            op = vals[self.i]
            prec = _PRECEDENCE.get(op, 0)
            if prec < min_prec:
                break
            self.i += 1
            rhs = self.binary(prec + 1)
            if prec == 3:  # a comparison
                lhs = ir.BinOp(op, lhs, rhs, _bool_lanes(b, op, lhs, rhs))
                if kinds[self.i] == "op" and _PRECEDENCE.get(vals[self.i]) == 3:
                    raise _Decline  # `a < b < c`: not in the grammar
            else:
                if op in _LOGIC:
                    lhs, rhs = b.bool_of(None, lhs), b.bool_of(None, rhs)
                lhs = ir.BinOp(op, lhs, rhs, b.same(None, op, lhs, rhs))
        return lhs

    def unary(self) -> ir.Expr:
        if self.kinds[self.i] == "op" and self.vals[self.i] == "!":
            self.i += 1
            a = self.b.bool_of(None, self.unary())
            return ir.Not(a, a.type)
        return self.postfix()

    def postfix(self) -> ir.Expr:
        i = self.i
        kind, v = self.kinds[i], self.vals[i]
        if kind == "word":
            wk = self.words.get(v)
            if wk is None:
                wk = self.words[v] = _word_kind(v)
            if wk == _CAST_WORD:  # TYPE "(" expr ")": a cast
                self.i = i + 1
                self.op("(")
                inner = self.expr()
                self.op(")")
                return self.b.cast_of(None, HType.parse(v), inner)
            if v == "reinterpret":
                self.i = i + 1
                self.op("<")
                j = self.i
                if not self.is_type(j):
                    raise _Decline
                self.i = j + 1
                self.op(">")
                self.op("(")
                inner = self.expr()
                self.op(")")
                return ir.Reinterpret(HType.parse(self.vals[j]), inner)
            if wk == _FLOAT_LITERAL_WORD:
                return self.number(None)
            self.i = i + 1
            return self.named(v, None)
        if kind == "handle":
            self.i = i + 1
            return self.typed_inner(HType.parse(v))
        if kind == "op":
            if v == "(":
                j = i + 1
                if (self.kinds[j] == "word" and _TYPE_WORD.fullmatch(self.vals[j])
                        and self.kinds[j + 1] == "op" and self.vals[j + 1] == ")"):
                    self.i = j + 2  # "(" TYPE ")": a type prefix
                    return self.typed_inner(HType.parse(self.vals[j]))
                self.i = j
                inner = self.expr()
                self.op(")")
                return inner
            if v == "-":
                return self.number(None)
            raise _Decline
        if kind == "int" or kind == "float":
            return self.number(None)
        if kind == "string":
            self.i = i + 1
            return ir.StringImm(unescape(v[1:-1]))
        raise _Decline

    def named(self, name: str, printed: HType | None) -> ir.Expr:
        """After a NAME (type-prefixed with `printed`, or bare if None): a call, a load, or a variable."""
        i = self.i
        if self.kinds[i] == "op":
            v = self.vals[i]
            if v == "(":
                self.i = i + 1
                args = []
                if not self.is_op(")"):
                    args.append(self.expr())
                    while self.is_op(","):
                        self.i += 1
                        args.append(self.expr())
                self.op(")")
                return self.b.call_of(None, name, args, printed)
            if v == "[":
                self.i = i + 1
                index = self.b.index_of(None, self.expr())
                alignment = self.alignment() if self.is_word("aligned") else None
                self.op("]")
                return self.b.load_of(None, name, index, alignment, printed, None)
        if printed is None:
            return ir.Variable(name, self.b.vars.get(name, INT32))
        return ir.Variable(name, printed)

    def typed_inner(self, printed: HType) -> ir.Expr:
        """What follows a type prefix: NAME, call, load or number (no TYPE is acceptable here, so a
        type-like word is a NAME; `inf`/`nan` are FLOATs, which outrank NAME)."""
        i = self.i
        kind, v = self.kinds[i], self.vals[i]
        if kind == "word" and not _FLOAT_WORD.fullmatch(v):
            self.i = i + 1
            return self.named(v, printed)
        return self.number(printed)

    def number(self, printed: HType | None) -> ir.Expr:
        i = self.i
        negative = self.kinds[i] == "op" and self.vals[i] == "-"
        if negative:
            i += 1
        kind = self.kinds[i]
        if not (kind == "int" or kind == "float" or (kind == "word" and _FLOAT_WORD.fullmatch(self.vals[i]))):
            raise _Decline
        self.i = i + 1
        return self.b.number_of(None, self.vals[i], negative, kind == "int", printed)


def _bool_lanes(b: _Builder, op: str, lhs: ir.Expr, rhs: ir.Expr) -> HType:
    """A comparison's type (its operands' types must agree, as the builder checks)."""
    b.same(None, op, lhs, rhs)
    return Bool(lhs.type.lanes)


#: `_word_kind`'s answers: a whole type (a cast where an operand starts), inf/nan (a FLOAT), any other word
_OTHER_WORD, _CAST_WORD, _FLOAT_LITERAL_WORD = 0, 1, 2


def _word_kind(v: str) -> int:
    """How `_Parser.postfix` reads a word that starts an operand: tested against `_TYPE_WORD` first,
    then `_FLOAT_WORD`, the order postfix tested them in (a function of the word alone)."""
    if _TYPE_WORD.fullmatch(v):
        return _CAST_WORD
    if _FLOAT_WORD.fullmatch(v):
        return _FLOAT_LITERAL_WORD
    return _OTHER_WORD


def _typed_word(v: str) -> bool:
    """A word lark lexes as TYPE or FLOAT where those are acceptable (statement start)."""
    return _TYPE_WORD.fullmatch(v) is not None or _FLOAT_WORD.fullmatch(v) is not None


def unescape(s: str) -> str:
    """A string literal's text with its backslash escapes resolved."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)
