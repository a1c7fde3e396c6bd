"""A hand-written tokenizer and recursive-descent parser for Halide's statement text: the fast path of
`pitchfork.frontend.stmt`.

`stmt_grammar.lark` stays the definition of the language; this module builds the very parse tree lark's
LALR parser builds for it without node positions (`stmt.parse_tree(text, positions=False)`: the same
`lark.Tree` shapes, the same kept `lark.Token`s with their types, lines and columns), about an order of
magnitude faster, so `stmt._Builder` turns it into the same loop-nest IR with the same statement lines.

Invariant: `fast_tree(text, start)` returns either exactly the tree lark returns for `text`, or None
(it declines). It declines on anything it is not sure lark would parse the same way (any syntax error,
a word in a position where lark's contextual lexer could classify it differently, a character no token
starts with), and the caller then parses with lark, so errors, their lines and columns, and the rare
constructs this parser leaves to lark behave exactly as before. tests/pitchfork/frontend/test_stmt_fast.py
checks tree equality against lark on every benchmark's captured statements and on the error cases.

How lark's contextual lexer is mirrored: words (`[A-Za-z_][A-Za-z0-9_$]*(\\.[A-Za-z0-9_$]+)*`) are one
token kind here and are classified by the position the parser is in, as lark classifies them by the
terminals its parser state accepts: where a type may stand, a word that is a whole type (`uint8x16`) is
a TYPE (priority 2 in the grammar); where a number may stand, `inf`/`nan` (+ `f`/`h`) are FLOATs; a
keyword is a keyword only where the grammar accepts it; and a word where only a NAME fits is a NAME.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Any

from lark import Token, Tree

#: one alternative per token kind; lark's priorities decide the order (HANDLE_TYPE over "(";
#: FLOAT over INT; two-character operators over one-character ones)
_TOKEN = re.compile(
    r"[\t ]*(?:"  # spaces and tabs before a token are skipped (lark's %ignore); no token starts with one
    r"(?P<nl>(?:\r?\n[\t ]*)+)"
    r"|(?P<handle>\((?:struct |class )?[A-Za-z_][A-Za-z0-9_:]*(?: const)? ?\*+\))"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_$]+)*)"
    r"|(?P<float>(?:\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]?\d+)[fh]?(?![A-Za-z0-9_$.]))"
    r"|(?P<int>\d+)"
    r'|(?P<string>"(?:\\.|[^"\\])*")'
    r"|(?P<op>==|!=|<=|>=|\|\||&&|[-+*/%<>!=(){}\[\],])"
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
#: binary operators: precedence (|| 1, && 2, comparisons 3 (not associative), + - 4, * / % 5), the
#: tree the grammar builds and the kept operator token's type (None: an anonymous, dropped token)
_BINARY: dict[str, tuple[int, str, str | None]] = {
    "||": (1, "or_op", None), "&&": (2, "and_op", None),
    "==": (3, "cmp_op", "CMP_OP"), "!=": (3, "cmp_op", "CMP_OP"), "<=": (3, "cmp_op", "CMP_OP"),
    ">=": (3, "cmp_op", "CMP_OP"), "<": (3, "cmp_op", "LT"), ">": (3, "cmp_op", "GT"),
    "+": (4, "arith", "PLUS"), "-": (4, "arith", "MINUS"),
    "*": (5, "arith", "STAR"), "/": (5, "arith", "DIV_OP"), "%": (5, "arith", "DIV_OP"),
}
_NEW_TOKEN = Token._future_new  # Token(...) without the deprecated-keyword check of Token.__new__


class _Decline(Exception):
    """Not sure lark would parse this the same way: the caller parses with lark."""


def fast_tree(text: str, start: str = "start") -> Tree | None:
    """The tree `stmt.parse_tree(text, start, positions=False)` returns, or None to let lark parse.
    `text` as parse_tree receives it (for "start": ending with a newline; for "expr": stripped)."""
    try:
        p = _Parser(text)
        if start == "start":
            return p.start()
        if start == "expr":
            e = p.expr()
            p.expect_end()
            return e
    except (_Decline, IndexError):  # IndexError: ran past the end of the token list
        pass
    return None


class _Parser:
    """Tokens as parallel lists (kind, text, offset, line); `i` is the next token."""

    __slots__ = ("kinds", "vals", "pos", "newlines", "text", "i")

    def __init__(self, text: str) -> None:
        ms = list(_TOKEN.finditer(text))
        kinds: list[str] = [m.lastgroup for m in ms]  # type: ignore[misc]
        if "bad" in kinds:
            raise _Decline
        self.kinds = kinds
        self.vals = [m.group(k) for m, k in zip(ms, kinds)]
        self.pos = [m.start(k) for m, k in zip(ms, kinds)]
        kinds.append("end")
        self.vals.append("")
        self.pos.append(len(text))
        self.newlines: list[int] | None = None  # offsets of every newline, made when a token needs its line
        self.text = text
        self.i = 0

    # ---- tokens ---------------------------------------------------------------------------------
    def tok(self, type_: str, i: int) -> Token:
        """The kept token `i` as lark makes it (type, text, offset, line, column)."""
        p = self.pos[i]
        newlines = self.newlines
        if newlines is None:
            newlines = self.newlines = [m.start() for m in _NEWLINE.finditer(self.text)]
        line = bisect_left(newlines, p)  # newlines before the token: its line is one more
        start = newlines[line - 1] + 1 if line else 0
        return _NEW_TOKEN(type_, self.vals[i], p, line + 1, p - start + 1)

    def is_op(self, v: str) -> bool:
        return self.kinds[self.i] == "op" and self.vals[self.i] == v

    def is_word(self, v: str) -> bool:
        return self.kinds[self.i] == "word" and self.vals[self.i] == v

    def op(self, v: str) -> None:
        if self.kinds[self.i] != "op" or self.vals[self.i] != v:
            raise _Decline
        self.i += 1

    def keyword(self, v: str) -> None:
        if self.kinds[self.i] != "word" or self.vals[self.i] != v:
            raise _Decline
        self.i += 1

    def name(self) -> Token:
        """A NAME where only a NAME fits (lark's contextual lexer then lexes any word as NAME)."""
        i = self.i
        if self.kinds[i] != "word":
            raise _Decline
        self.i = i + 1
        return self.tok("NAME", i)

    def nl(self) -> None:
        if self.kinds[self.i] != "nl":
            raise _Decline
        self.i += 1

    def int_tok(self) -> Token:
        i = self.i
        if self.kinds[i] != "int":
            raise _Decline
        self.i = i + 1
        return self.tok("INT", i)

    def expect_end(self) -> None:
        if self.kinds[self.i] != "end":
            raise _Decline

    # ---- statements -----------------------------------------------------------------------------
    def start(self) -> Tree:
        if self.kinds[self.i] == "nl":
            self.i += 1
        stmts = []
        while self.kinds[self.i] != "end":
            stmts.append(self.stmt())
        return Tree("start", stmts)

    def block(self) -> Tree:
        self.op("{")
        self.nl()
        stmts = []
        while not self.is_op("}"):
            stmts.append(self.stmt())
        self.i += 1
        return Tree("block", stmts)

    def stmt(self) -> Tree:
        i = self.i
        kind, v = self.kinds[i], self.vals[i]
        if kind == "word":
            nxt = self.pos[i] + len(v)
            if v in _FOR_KINDS and nxt < len(self.text) and self.text[nxt] in " <(":
                return self.for_stmt()
            if v in _STMT_KEYWORDS:
                return self.keyword_stmt(v)
            if self.kinds[i + 1] == "op" and self.vals[i + 1] == "[" and not _typed_word(v):
                store = self.try_store()
                if store is not None:
                    return store
                self.i = i
        e = self.expr()
        self.nl()
        return Tree("eval_stmt", [e])

    def try_store(self) -> Tree | None:
        """`NAME[index] = value` (None, position unchanged by the caller, if no `=` follows the `]`)."""
        name = self.name()
        self.op("[")
        index = self.expr()
        children: list[Any] = [name, index]
        if self.is_word("aligned"):
            children.append(self.alignment())
        self.op("]")
        if not self.is_op("="):
            return None
        self.i += 1
        children.append(self.expr())
        self.nl()
        return Tree("store_stmt", children)

    def alignment(self) -> Tree:
        self.keyword("aligned")
        self.op("(")
        modulus = self.int_tok()
        self.op(",")
        remainder = self.int_tok()
        self.op(")")
        return Tree("alignment", [modulus, remainder])

    def for_stmt(self) -> Tree:
        children: list[Any] = [self.tok("FOR_KIND", self.i)]
        self.i += 1
        if self.is_op("<"):
            lt = self.tok("LT", self.i)
            self.i += 1
            name = self.name()
            if not self.is_op(">"):
                raise _Decline
            children.append(Tree("device_api", [lt, name, self.tok("GT", self.i)]))
            self.i += 1
        self.op("(")
        children.append(self.name())
        self.op(",")
        children.append(self.expr())
        self.op(",")
        children.append(self.expr())
        self.op(")")
        children.append(self.block())
        self.nl()
        return Tree("for_stmt", children)

    def keyword_stmt(self, v: str) -> Tree:
        if v == "reinterpret":  # an expression statement that starts with a keyword
            e = self.expr()
            self.nl()
            return Tree("eval_stmt", [e])
        self.i += 1
        if v == "let":
            name = self.name()
            self.op("=")
            value = self.expr()
            if self.is_word("in"):  # `let x = v in body`: an expression statement
                self.i += 1
                body = self.expr()
                self.nl()
                return Tree("eval_stmt", [Tree("let_expr", [name, value, body])])
            self.nl()
            return Tree("let_stmt", [name, value])
        if v == "if":
            t = self.if_rest("if_stmt")
            self.nl()
            return t
        if v == "produce" or v == "consume":
            name = self.name()
            body = self.block()
            self.nl()
            return Tree("producer" if v == "produce" else "consumer", [name, body])
        if v == "allocate":
            return self.allocate_rest()
        if v == "free":
            name = self.name()
            self.nl()
            return Tree("free_stmt", [name])
        if v == "assert":
            self.op("(")
            cond = self.expr()
            self.op(",")
            msg = self.expr()
            self.op(")")
            self.nl()
            return Tree("assert_stmt", [cond, msg])
        if v == "predicate":
            self.op("(")
            pred = self.expr()
            self.op(")")
            self.nl()
            children: list[Any] = [pred, self.name()]
            self.op("[")
            children.append(self.expr())
            if self.is_word("aligned"):
                children.append(self.alignment())
            self.op("]")
            self.op("=")
            children.append(self.expr())
            self.nl()
            return Tree("pred_store", children)
        if v == "acquire":
            self.op("(")
            a = self.expr()
            self.op(",")
            b = self.expr()
            self.op(")")
            body = self.block()
            self.nl()
            return Tree("acquire_stmt", [a, b, body])
        if v == "hoisted_storage":
            name = self.name()
            body = self.block()
            self.nl()
            return Tree("hoisted_stmt", [name, body])
        # fork / atomic: their keyword can sit on another line than their first kept token, and
        # stmt.parse_stmt parses texts with them with positions (never through here); not handled
        raise _Decline

    def if_rest(self, data: str) -> Tree:
        self.op("(")
        cond = self.expr()
        self.op(")")
        children: list[Any] = [cond, self.block()]
        if self.is_word("else"):
            self.i += 1
            if self.is_word("if"):
                self.i += 1
                children.append(self.if_rest("else_if"))
            else:
                children.append(self.block())
        return Tree(data, children)

    def allocate_rest(self) -> Tree:
        children: list[Any] = [self.name()]
        self.op("[")
        i = self.i
        if self.kinds[i] == "handle":
            children.append(self.tok("HANDLE_TYPE", i))
        elif self.kinds[i] == "word" and _TYPE_WORD.fullmatch(self.vals[i]):
            children.append(self.tok("TYPE", i))
        else:
            raise _Decline
        self.i = i + 1
        while self.is_op("*"):
            children.append(self.tok("STAR", self.i))
            self.i += 1
            children.append(self.postfix())
        self.op("]")
        if self.is_word("in"):
            self.i += 1
            children.append(Tree("memory_type", [self.name()]))
        if self.is_word("if"):
            self.i += 1
            children.append(Tree("alloc_cond", [self.expr()]))
        self.nl()
        if self.is_word("custom_new") or self.is_word("custom_delete"):
            raise _Decline  # a custom allocator (an atomic() update's mutex array): rare, left to lark
        return Tree("allocate_stmt", children)

    # ---- expressions ----------------------------------------------------------------------------
    def expr(self) -> Any:
        """`expr`: a let expression, a predicated load (`load if cond`) or an or-expression."""
        i = self.i
        if self.kinds[i] == "word" and self.vals[i] == "let":
            self.i = i + 1
            name = self.name()
            self.op("=")
            value = self.expr()
            self.keyword("in")
            return Tree("let_expr", [name, value, self.expr()])
        e = self.binary(1)
        if self.kinds[self.i] == "word" and self.vals[self.i] == "if":
            # only a bare `NAME[...]` (not parenthesized, not typed) is a `load` the grammar predicates
            if not (isinstance(e, Tree) and e.data == "load" and self.kinds[i] == "word"
                    and self.kinds[i + 1] == "op" and self.vals[i + 1] == "["):
                raise _Decline
            self.i += 1
            return Tree("pred_load", [e, self.binary(1)])
        return e

    def binary(self, min_prec: int) -> Any:
        """Precedence climbing over `_BINARY`; left-associative, comparisons not associative."""
        lhs = self.unary()
        kinds, vals = self.kinds, self.vals
        while kinds[self.i] == "op":
            row = _BINARY.get(vals[self.i])
            if row is None or row[0] < min_prec:
                break
            prec, data, tok_type = row
            op_i = self.i
            self.i += 1
            rhs = self.binary(prec + 1)
            if tok_type is None:
                lhs = Tree(data, [lhs, rhs])
            else:
                lhs = Tree(data, [lhs, self.tok(tok_type, op_i), rhs])
            if prec == 3 and kinds[self.i] == "op" and _BINARY.get(vals[self.i], (0,))[0] == 3:
                raise _Decline  # `a < b < c`: not in the grammar
        return lhs

    def unary(self) -> Any:
        if self.kinds[self.i] == "op" and self.vals[self.i] == "!":
            self.i += 1
            return Tree("not_op", [self.unary()])
        return self.postfix()

    def postfix(self) -> Any:
        i = self.i
        kind, v = self.kinds[i], self.vals[i]
        if kind == "word":
            if _TYPE_WORD.fullmatch(v):  # TYPE "(" expr ")": a cast
                self.i = i + 1
                self.op("(")
                inner = self.expr()
                self.op(")")
                return Tree("cast", [self.tok("TYPE", i), inner])
            if v == "reinterpret":
                self.i = i + 1
                if not self.is_op("<"):
                    raise _Decline
                lt = self.tok("LT", self.i)
                self.i += 1
                j = self.i
                if self.kinds[j] == "handle":
                    target = self.tok("HANDLE_TYPE", j)
                elif self.kinds[j] == "word" and _TYPE_WORD.fullmatch(self.vals[j]):
                    target = self.tok("TYPE", j)
                else:
                    raise _Decline
                self.i = j + 1
                if not self.is_op(">"):
                    raise _Decline
                gt = self.tok("GT", self.i)
                self.i += 1
                self.op("(")
                inner = self.expr()
                self.op(")")
                return Tree("reinterpret", [lt, target, gt, inner])
            if _FLOAT_WORD.fullmatch(v):
                return self.number()
            self.i = i + 1
            return self.named(self.tok("NAME", i), bare=True)
        if kind == "handle":
            self.i = i + 1
            return Tree("typed_atom", [self.tok("HANDLE_TYPE", i), self.typed_inner()])
        if kind == "op":
            if v == "(":
                j = i + 1
                if (self.kinds[j] == "word" and _TYPE_WORD.fullmatch(self.vals[j])
                        and self.kinds[j + 1] == "op" and self.vals[j + 1] == ")"):
                    self.i = j + 2  # "(" TYPE ")": a type prefix
                    prefix = Tree("type_prefix", [self.tok("TYPE", j)])
                    return Tree("typed_atom", [prefix, self.typed_inner()])
                self.i = j
                inner = self.expr()
                self.op(")")
                return inner
            if v == "-":
                return self.number()
            raise _Decline
        if kind == "int" or kind == "float":
            return self.number()
        if kind == "string":
            self.i = i + 1
            return Tree("string", [self.tok("STRING", i)])
        raise _Decline

    def named(self, name: Token, bare: bool) -> Any:
        """After a NAME: a call, a load, or (bare) a variable / (typed) the NAME itself."""
        i = self.i
        if self.kinds[i] == "op":
            v = self.vals[i]
            if v == "(":
                self.i = i + 1
                children: list[Any] = [name]
                if not self.is_op(")"):
                    children.append(self.expr())
                    while self.is_op(","):
                        self.i += 1
                        children.append(self.expr())
                self.op(")")
                return Tree("call", children)
            if v == "[":
                self.i = i + 1
                children = [name, self.expr()]
                if self.is_word("aligned"):
                    children.append(self.alignment())
                self.op("]")
                return Tree("load", children)
        return Tree("var", [name]) if bare else name

    def typed_inner(self) -> Any:
        """What follows a type prefix: NAME, call, load or number (no TYPE is acceptable here, so a
        type-like word is a NAME; `inf`/`nan` are FLOATs, which outrank NAME)."""
        i = self.i
        kind, v = self.kinds[i], self.vals[i]
        if kind == "word" and not _FLOAT_WORD.fullmatch(v):
            self.i = i + 1
            return self.named(self.tok("NAME", i), bare=False)
        return self.number()

    def number(self) -> Tree:
        i = self.i
        children: list[Token] = []
        negative = self.kinds[i] == "op" and self.vals[i] == "-"
        if negative:
            children.append(self.tok("MINUS", i))
            i += 1
        kind = self.kinds[i]
        if kind == "int":
            children.append(self.tok("INT", i))
            data = "neg_int_lit" if negative else "int_lit"
        elif kind == "float" or (kind == "word" and _FLOAT_WORD.fullmatch(self.vals[i])):
            children.append(self.tok("FLOAT", i))
            data = "neg_float_lit" if negative else "float_lit"
        else:
            raise _Decline
        self.i = i + 1
        return Tree(data, children)


def _typed_word(v: str) -> bool:
    """A word lark lexes as TYPE or FLOAT where those are acceptable (statement start)."""
    return _TYPE_WORD.fullmatch(v) is not None or _FLOAT_WORD.fullmatch(v) is not None
