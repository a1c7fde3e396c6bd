"""Parse Halide's statement text into the `pitchfork.frontend.ir` loop-nest AST, inferring types.

The grammar (`stmt_grammar.lark`, LALR) covers what Halide 21's IRPrinter writes for lowered,
vectorized statements. Types are reconstructed from the printer's own rules:

* a literal is `int32` unless prefixed (`(uint16)2`, `(int64)-7`); `0.5f` is float32, `1.25` float64;
* a variable, call or load whose name the printer had not seen bound (by a `let`, loop or
  `allocate`) and whose type is not `int32` is printed with a type prefix (`(uint8)p`,
  `(uint16x32)absd(...)`), so an unprefixed unbound name is `int32`, and a bound one has the type of
  its binding;
* a load has its buffer's element type and its index's lane count; buffer element types come from the
  `buffers` argument, from `allocate` statements, or from Halide's own `assert(b.type == (uint32)N,
  ...)` checks (N is the packed `halide_type_t`);
* casts, broadcasts (`x16(e)`), ramps, selects, shuffles and arithmetic derive their type from their
  operands, and operand types must agree as in Halide's IR (a mismatch is a `HalideTypeError`).

Anything the grammar does not know, or whose type cannot be determined, raises `HalideParseError`
with the line, the column and the offending text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from pitchfork.frontend import ir
from pitchfork.frontend.htypes import INT32, Bool, HType
from pitchfork.frontend.stmt_fast import LOOP_KIND, fast_expr, fast_stmt, unescape

_GRAMMAR_PATH = Path(__file__).with_name("stmt_grammar.lark")
#: INT32's range (`INT32.min`, `INT32.max`), for the literals printed without a type
_INT32_MIN, _INT32_MAX = INT32.min, INT32.max
_BROADCAST_RE = re.compile(r"x(\d+)")
_SHUFFLE_CALLS = {
    "interleave_vectors": "interleave",
    "concat_vectors": "concat",
    "slice_vectors": "slice",
    "extract_element": "extract_element",
    "shuffle": "shuffle",
}
#: statements whose keyword the tree drops and whose first kept token can be on a later line
#: (`fork {` / `atomic {` then the block): their line needs the positioned parse
_KEYWORD_BLOCK = re.compile(r"^[ \t]*(fork|atomic)\b", re.M)


class HalideParseError(ValueError):
    """The statement text has a construct the parser does not know, or is malformed."""

    def __init__(self, message: str, line: int, column: int, source_line: str = "") -> None:
        self.message, self.line, self.column, self.source_line = message, line, column, source_line
        text = f"line {line}, column {column}: {message}"
        if source_line:
            text += f"\n    {source_line}\n    {' ' * max(column - 1, 0)}^"
        super().__init__(text)


class HalideTypeError(HalideParseError):
    """Operand types disagree, or a type cannot be determined."""


@cache
def _parser(positions: bool = True) -> Lark:
    """The LALR parser; `positions=False` leaves tree nodes without `meta` positions (tokens keep
    theirs), which halves the parse time: `parse_stmt`/`parse_expr` build from such a tree where the
    one-pass parser (stmt_fast.py) declines, and parse again with positions only to report an error."""
    return Lark(
        _GRAMMAR_PATH.read_text(),
        parser="lalr",
        start=["start", "expr"],
        propagate_positions=positions,
        maybe_placeholders=False,
    )


def parse_tree(text: str, start: str = "start", *, positions: bool = True) -> Tree:
    """The raw lark parse tree (for debugging the grammar)."""
    if start == "start" and not text.endswith("\n"):
        text += "\n"
    try:
        return _parser(positions).parse(text, start=start)
    except UnexpectedInput as e:
        raise _syntax_error(e, text) from None


def parse_stmt(
    text: str,
    *,
    buffers: Mapping[str, HType] | None = None,
    variables: Mapping[str, HType] | None = None,
) -> ir.Stmt:
    """Parse a whole statement (or a fragment of one: a sequence of statements at any indentation).

    `buffers` gives element types of buffers that are loaded or stored; `variables` the types of
    names bound outside the text (needed when parsing a fragment cut out of a larger statement)."""
    if _KEYWORD_BLOCK.search(text) is None:  # else every statement starts on its first token's line
        try:
            # one pass (stmt_fast.py); where it declines, lark's tree without positions. A fresh builder
            # each time: a declined pass may have recorded buffer types from its stores.
            whole = text if text.endswith("\n") else text + "\n"
            direct = fast_stmt(whole, _Builder(text, buffers, variables))
            if direct is not None:
                return direct
            tree = parse_tree(whole, "start", positions=False)
            return _Builder(text, buffers, variables).stmts(tree.children)
        except HalideParseError:
            pass  # again with node positions, for the error's exact line and column
    return _Builder(text, buffers, variables).stmts(parse_tree(text, "start").children)


def parse_expr(
    text: str,
    *,
    buffers: Mapping[str, HType] | None = None,
    variables: Mapping[str, HType] | None = None,
) -> ir.Expr:
    """Parse one expression, e.g. a store's right-hand side."""
    try:
        direct = fast_expr(text.strip(), _Builder(text, buffers, variables))  # None: declined
        if direct is not None:
            return direct
        return _Builder(text, buffers, variables).expr(parse_tree(text.strip(), "expr", positions=False))
    except HalideParseError:
        pass  # again with node positions, for the error's exact line and column
    return _Builder(text, buffers, variables).expr(parse_tree(text.strip(), "expr"))


def _syntax_error(e: UnexpectedInput, text: str) -> HalideParseError:
    lines = text.splitlines()
    line = getattr(e, "line", None)
    column = getattr(e, "column", None)
    at_end = isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END")
    if at_end or not isinstance(line, int) or line < 1:  # point just past the last line's text
        line = max(len(lines), 1)
        column = len(lines[-1]) + 1 if lines else 1
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    column = column if isinstance(column, int) and column > 0 else 1
    if isinstance(e, UnexpectedCharacters):
        what = src[column - 1 :].split(" ", 1)[0] or e.char
        message = f"unknown construct {what!r} (unexpected character {e.char!r})"
    elif isinstance(e, UnexpectedToken) and e.token.type == "$END":
        message = "unexpected end of text (unclosed block or expression?)"
    elif isinstance(e, UnexpectedToken):
        tok = e.token
        shown = "newline" if tok.type == "_NL" else repr(str(tok))
        expected = ", ".join(sorted(e.expected)[:8])
        message = f"unexpected {shown} in this position (expected one of: {expected})"
    elif isinstance(e, UnexpectedEOF):
        message = "unexpected end of text (unclosed block or expression?)"
    else:  # pragma: no cover - lark has no other UnexpectedInput kinds
        message = str(e)
    return HalideParseError(message, line, column, src)


class _Builder:
    """Turns the parse tree into `ir` nodes, tracking the types of bound names and buffers. Its public
    methods (`*_of`: the checks and the node once the parts are built; `bind`/`unbind`, `assemble`,
    `same`, `learn_buffer_type`) are also what the one-pass parser (stmt_fast.py) builds with, so both
    paths make the same nodes by the same rules; a node given no tree (`t=None`) reports an error at
    line 0, and the caller re-parses with positions."""

    def __init__(
        self, text: str, buffers: Mapping[str, HType] | None, variables: Mapping[str, HType] | None
    ) -> None:
        self.lines = text.splitlines()
        self.vars: dict[str, HType] = dict(variables or {})
        self.bufs: dict[str, HType] = {k: v.elem for k, v in (buffers or {}).items()}

    # ---- errors and scopes ------------------------------------------------------------------
    def _pos(self, node: Tree | Token | None) -> tuple[int, int]:
        if node is None:  # an error found by the one-pass parser (stmt_fast.py): re-parsed with positions
            return 0, 0
        if isinstance(node, Token):
            return node.line or 0, node.column or 0
        meta = node.meta
        if not meta.empty:
            return getattr(meta, "line", 0), getattr(meta, "column", 0)
        # A tree parsed without positions: its first token's line (a statement's keyword, which the
        # tree does not keep, is on that line too). Columns can differ from the positioned tree's, so
        # errors are reported from a positioned parse (parse_stmt / parse_expr).
        stack: list[Tree | Token] = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, Token):
                return n.line or 0, n.column or 0
            stack.extend(reversed(n.children))
        return 0, 0

    def error(
        self, node: Tree | Token | None, message: str, kind: type[HalideParseError] = HalideParseError
    ) -> HalideParseError:
        line, col = self._pos(node)
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return kind(message, line, col, src)

    def bind(self, table: dict[str, HType], name: str, t: HType, undo: list) -> None:
        undo.append((table, name, table.get(name)))
        table[name] = t

    @staticmethod
    def unbind(undo: list) -> None:
        for table, name, old in reversed(undo):
            if old is None:
                table.pop(name, None)
            else:
                table[name] = old

    # ---- statements -------------------------------------------------------------------------
    def stmts(self, items: Iterable[Tree]) -> ir.Stmt:
        """A statement list; `let` and `allocate` scope over the rest of the list."""
        undo: list = []
        spine: list[tuple[str, object, int]] = []
        try:
            for t in items:
                if t.data == "let_stmt":
                    name, value = str(t.children[0]), self.expr(t.children[1])
                    self.bind(self.vars, name, value.type, undo)
                    spine.append(("let", (name, value), self._pos(t)[0]))
                elif t.data == "allocate_stmt":
                    alloc = self._allocate_head(t)
                    self.bind(self.bufs, alloc[0], alloc[1], undo)
                    spine.append(("alloc", alloc, self._pos(t)[0]))
                else:
                    spine.append(("stmt", self.stmt(t), 0))
        finally:
            self.unbind(undo)
        return self.assemble(spine)

    @staticmethod
    def assemble(spine: list[tuple[str, object, int]]) -> ir.Stmt:
        """A statement list from its entries in order: ("stmt", statement, _), or ("let", (name, value),
        line) / ("alloc", `_allocate_head`'s tuple, line), which scope over the entries after them."""
        tail: list[ir.Stmt] = []
        for kind, payload, line in reversed(spine):
            if kind == "stmt":
                tail.append(payload)  # type: ignore[arg-type]
                continue
            body = _block(tail[::-1])
            if kind == "let":
                name, value = payload  # type: ignore[misc]
                tail = [ir.LetStmt(name, value, body, line=line)]
            else:
                name, t_, extents, memory, cond, new_expr, free_fn = payload  # type: ignore[misc]
                tail = [ir.Allocate(name, t_, extents, body, memory, cond, new_expr, free_fn, line=line)]
        return _block(tail[::-1])

    def block(self, t: Tree) -> ir.Stmt:
        return self.stmts(t.children)

    def _allocate_head(self, t: Tree) -> tuple[str, HType, tuple[ir.Expr, ...], str, ir.Expr | None,
                                               ir.Expr | None, str]:
        name, type_tok, *rest = t.children
        extents: list[ir.Expr] = []
        memory, cond, new_expr, free_fn = "", None, None, ""
        for c in rest:
            if isinstance(c, Token) and c.type == "STAR":
                continue
            if isinstance(c, Tree) and c.data == "memory_type":
                memory = str(c.children[0])
            elif isinstance(c, Tree) and c.data == "alloc_cond":
                cond = self.expr(c.children[0])
            elif isinstance(c, Tree) and c.data == "alloc_new":
                new_expr = self.expr(c.children[0])
            elif isinstance(c, Tree) and c.data == "alloc_delete":
                free_fn, freed = str(c.children[0]), str(c.children[1])
                if freed != str(name):
                    raise self.error(c, f"custom_delete of {name} frees {freed}")
            else:
                extents.append(self.expr(c))
        return str(name), HType.parse(str(type_tok)), tuple(extents), memory, cond, new_expr, free_fn

    def stmt(self, t: Tree) -> ir.Stmt:
        line = self._pos(t)[0]
        c = t.children
        match t.data:
            case "for_stmt":
                kind_tok, *rest = c
                device = ""
                if isinstance(rest[0], Tree) and rest[0].data == "device_api":
                    device = str(rest.pop(0).children[1])
                name, lo, ext, body = rest
                lo_e, ext_e = self.expr(lo), self.expr(ext)
                undo: list = []
                self.bind(self.vars, str(name), INT32, undo)
                try:
                    body_s = self.block(body)
                finally:
                    self.unbind(undo)
                kind = LOOP_KIND.get(str(kind_tok), str(kind_tok))
                return ir.For(str(name), lo_e, ext_e, kind, body_s, device, line=line)
            case "store_stmt":
                return self._store(t, None, c, line)
            case "pred_store":
                return self._store(t, self.expr(c[0]), c[1:], line)
            case "free_stmt":
                return ir.Free(str(c[0]), line=line)
            case "if_stmt" | "else_if":
                cond = self._bool(c[0])
                then = self.block(c[1])
                other = None
                if len(c) > 2:
                    other = self.block(c[2]) if c[2].data == "block" else self.stmt(c[2])
                return ir.IfThenElse(cond, then, other, line=line)
            case "producer" | "consumer":
                return ir.ProducerConsumer(str(c[0]), t.data == "producer", self.block(c[1]), line=line)
            case "assert_stmt":
                cond, msg = self._bool(c[0]), self.expr(c[1])
                self.learn_buffer_type(cond)
                return ir.AssertStmt(cond, msg, line=line)
            case "eval_stmt":
                return ir.Evaluate(self.expr(c[0]), line=line)
            case "fork_stmt":  # `fork {a} {b} {c}` is Fork(a, Fork(b, c)), as Halide builds it
                blocks = [self.block(x) for x in c]
                out = ir.Fork(blocks[-2], blocks[-1], line=line)
                for first in reversed(blocks[:-2]):
                    out = ir.Fork(first, out, line=line)
                return out
            case "acquire_stmt":
                return ir.Acquire(self.expr(c[0]), self.expr(c[1]), self.block(c[2]), line=line)
            case "atomic_stmt":
                names = [str(x) for x in c[:-1]]  # (producer[, mutex]) or none
                return ir.Atomic(names[0] if names else "", self.block(c[-1]),
                                 names[1] if len(names) > 1 else "", line=line)
            case "hoisted_stmt":
                return ir.HoistedStorage(str(c[0]), self.block(c[1]), line=line)
            case "let_stmt" | "allocate_stmt":  # only reached through stmts()
                return self.stmts([t])
        raise self.error(t, f"unknown statement {t.data!r}")

    def _store(self, t: Tree, predicate: ir.Expr | None, c: list, line: int) -> ir.Store:
        index = self._index(c[1])
        alignment = _alignment(c[2]) if len(c) == 4 else None
        return self.store_of(t, str(c[0]), index, alignment, self.expr(c[-1]), predicate, line)

    def store_of(self, t: Tree | None, name: str, index: ir.Expr, alignment: tuple[int, int] | None,
                 value: ir.Expr, predicate: ir.Expr | None, line: int) -> ir.Store:
        """The store of `value` to `name[index]` (index already checked by `index_of`), checked and
        recorded: an unknown buffer takes the value's element type."""
        if value.type.lanes != index.type.lanes:
            raise self.error(t, f"store of {value.type} through a {index.lanes}-lane index", HalideTypeError)
        known = self.bufs.get(name)
        if known is None:
            self.bufs[name] = value.type.elem
        elif known != value.type.elem:
            raise self.error(t, f"store of {value.type} into buffer {name!r} of {known}", HalideTypeError)
        if predicate is not None and predicate.type != Bool(index.lanes):
            raise self.error(t, f"store predicate of type {predicate.type}", HalideTypeError)
        return ir.Store(name, index, value, alignment, predicate, line=line)

    def learn_buffer_type(self, cond: ir.Expr) -> None:
        """Halide checks `assert(b.type == (uint32)N, ...)` for every buffer argument."""
        if (
            isinstance(cond, ir.BinOp)
            and cond.op == "=="
            and isinstance(cond.a, ir.Variable)
            and cond.a.name.endswith(".type")
            and isinstance(cond.b, ir.IntImm)
        ):
            name = cond.a.name[: -len(".type")]
            if name not in self.bufs:
                try:
                    self.bufs[name] = HType.from_halide_type_code(cond.b.value)
                except ValueError:
                    pass

    # ---- expressions ------------------------------------------------------------------------
    def _bool(self, t: Tree) -> ir.Expr:
        return self.bool_of(t, self.expr(t))

    def bool_of(self, t: Tree | None, e: ir.Expr) -> ir.Expr:
        """`e`, checked to be a condition."""
        if not e.type.is_bool:
            raise self.error(t, f"condition of type {e.type}, expected a boolean", HalideTypeError)
        return e

    def _index(self, t: Tree) -> ir.Expr:
        return self.index_of(t, self.expr(t))

    def index_of(self, t: Tree | None, e: ir.Expr) -> ir.Expr:
        """`e`, checked to be an int32 index."""
        elem = e.type.elem
        if elem is not INT32 and elem != INT32:  # (INT32 is `with_lanes`'s int32: identity first)
            raise self.error(t, f"index of type {e.type}, expected int32", HalideTypeError)
        return e

    def expr(self, t: Tree | Token) -> ir.Expr:
        if isinstance(t, Token):  # pragma: no cover - every expression token is wrapped in a rule
            raise self.error(t, f"unexpected token {str(t)!r}")
        c = t.children
        match t.data:
            case "arith":
                a, b = self.expr(c[0]), self.expr(c[2])
                return ir.BinOp(str(c[1]), a, b, self.same(t, str(c[1]), a, b))
            case "cmp_op":
                a, b = self.expr(c[0]), self.expr(c[2])
                self.same(t, str(c[1]), a, b)
                return ir.BinOp(str(c[1]), a, b, Bool(a.lanes))
            case "and_op" | "or_op":
                op = "&&" if t.data == "and_op" else "||"
                a, b = self._bool(c[0]), self._bool(c[1])
                return ir.BinOp(op, a, b, self.same(t, op, a, b))
            case "not_op":
                a = self._bool(c[0])
                return ir.Not(a, a.type)
            case "cast":
                return self.cast_of(t, HType.parse(str(c[0])), self.expr(c[1]))
            case "reinterpret":
                return ir.Reinterpret(HType.parse(str(c[1])), self.expr(c[3]))
            case "typed_atom":
                return self._typed(t)
            case "var":
                name = str(c[0])
                return ir.Variable(name, self.vars.get(name, INT32))
            case "call":
                return self._call(t, None)
            case "load":
                return self._load(t, None, None)
            case "pred_load":
                pred = self._bool(c[1])
                return self._load(c[0], None, pred)
            case "let_expr":
                name, value = str(c[0]), self.expr(c[1])
                undo: list = []
                self.bind(self.vars, name, value.type, undo)
                try:
                    body = self.expr(c[2])
                finally:
                    self.unbind(undo)
                return ir.Let(name, value, body, body.type)
            case "string":
                return ir.StringImm(unescape(str(c[0])[1:-1]))
            case "int_lit" | "neg_int_lit" | "float_lit" | "neg_float_lit":
                return self._number(t, None)
        raise self.error(t, f"unknown expression {t.data!r}")

    def cast_of(self, t: Tree | None, target: HType, value: ir.Expr) -> ir.Cast:
        """`value` converted to `target`, which must have its lane count."""
        if target.lanes != value.type.lanes:
            raise self.error(t, f"cast of {value.type} to {target}", HalideTypeError)
        return ir.Cast(target, value)

    def same(self, t: Tree | None, op: str, a: ir.Expr, b: ir.Expr) -> HType:
        ta = a.type
        if ta is not b.type and ta != b.type:  # (one object per type, mostly: identity first, no __eq__ call)
            raise self.error(t, f"operands of {op!r} have types {a.type} and {b.type}", HalideTypeError)
        return ta

    def _typed(self, t: Tree) -> ir.Expr:
        prefix, inner = t.children
        printed = HType.parse(str(prefix.children[0]) if isinstance(prefix, Tree) else str(prefix))
        if isinstance(inner, Token):  # a variable the printer had no binding for
            return ir.Variable(str(inner), printed)
        if inner.data == "call":
            return self._call(inner, printed)
        if inner.data == "load":
            return self._load(inner, printed, None)
        return self._number(inner, printed)

    def _number(self, t: Tree, printed: HType | None) -> ir.Expr:
        text, negative, is_int = str(t.children[-1]), t.data.startswith("neg_"), t.data.endswith("int_lit")
        return self.number_of(t, text, negative, is_int, printed)

    def number_of(self, t: Tree | None, text: str, negative: bool, is_int: bool,
                  printed: HType | None) -> ir.Expr:
        """The literal `text` (an INT token if `is_int`, else a FLOAT), negated if `negative`, of the
        type it was printed with, if any."""
        if is_int and printed is None:  # (most literals: int32, its range as constants, not two properties)
            value = -int(text) if negative else int(text)
            if not _INT32_MIN <= value <= _INT32_MAX:
                raise self.error(t, f"literal {value} does not fit {INT32}", HalideTypeError)
            return ir.IntImm(value, INT32)
        if is_int and printed is not None and printed.is_integer:
            ty = printed
            value = -int(text) if negative else int(text)
            if not ty.min <= value <= ty.max:
                raise self.error(t, f"literal {value} does not fit {ty}", HalideTypeError)
            return ir.IntImm(value, ty)
        if printed is not None and not printed.is_float:
            raise self.error(t, f"float literal {text} printed as {printed}", HalideTypeError)
        ty = printed or {"f": HType("float", 32), "h": HType("float", 16)}.get(text[-1], HType("float", 64))
        value_f = float(text.rstrip("fh")) if text[0].isdigit() else float(text[:3])
        return ir.FloatImm(-value_f if negative else value_f, ty)

    def _load(self, t: Tree, printed: HType | None, predicate: ir.Expr | None) -> ir.Load:
        name_tok, index_t, *rest = t.children
        index = self._index(index_t)
        alignment = _alignment(rest[0]) if rest else None
        return self.load_of(t, str(name_tok), index, alignment, printed, predicate)

    def load_of(self, t: Tree | None, name: str, index: ir.Expr, alignment: tuple[int, int] | None,
                printed: HType | None, predicate: ir.Expr | None) -> ir.Load:
        """The load of `name[index]` (index already checked by `index_of`), of the element type it was
        printed with, or its buffer's."""
        if printed is not None:
            elem = printed.elem
        elif name in self.bufs:
            elem = self.bufs[name]
        elif name in self.vars:
            raise self.error(
                t,
                f"element type of buffer {name!r} unknown (pass buffers={{{name!r}: ...}})",
                HalideTypeError,
            )
        else:
            elem = INT32  # the printer omits int32 for names it has not seen bound
        if predicate is not None and predicate.type != Bool(index.lanes):
            raise self.error(t, f"load predicate of type {predicate.type}", HalideTypeError)
        return ir.Load(name, index, elem.with_lanes(index.type.lanes), alignment, predicate)

    def _call(self, t: Tree, printed: HType | None) -> ir.Expr:
        name_tok, *arg_trees = t.children
        return self.call_of(t, str(name_tok), [self.expr(a) for a in arg_trees], printed)

    def call_of(self, t: Tree | None, name: str, args: list[ir.Expr], printed: HType | None) -> ir.Expr:
        """What a call-shaped `name(args)` is: a Halide node printed like a call (unless type-prefixed),
        a vector reduction, or a call of the printed type (int32 if none)."""
        if printed is None:
            special = self._special_call(t, name, args)
            if special is not None:
                return special
        elif name.startswith("vector_reduce_"):
            if len(args) != 1 or args[0].lanes % printed.lanes:
                raise self.error(t, f"{name} of {len(args)} args to {printed}", HalideTypeError)
            return ir.VectorReduce(name[len("vector_reduce_") :], args[0], printed)
        return ir.Call(name, tuple(args), printed or INT32)

    def _special_call(self, t: Tree | None, name: str, args: list[ir.Expr]) -> ir.Expr | None:
        """Halide nodes that print like calls: ramp, broadcast, select, min/max, shuffles."""
        n = len(args)
        m = _BROADCAST_RE.fullmatch(name)
        if m and n == 1:
            count = int(m.group(1))
            return ir.Broadcast(args[0], count, args[0].type.with_lanes(args[0].lanes * count))
        if name == "ramp":
            if n != 3:
                raise self.error(t, "ramp expects (base, stride, constant lanes)")
            count = self._const_arg(t, name, args, 2)
            base, stride = args[0], args[1]
            self.same(t, name, base, stride)
            return ir.Ramp(base, stride, count, base.type.with_lanes(base.lanes * count))
        if name == "select" and n == 3:
            if not args[0].type.is_bool or args[0].lanes not in (1, args[1].lanes):
                raise self.error(t, f"select condition of type {args[0].type}", HalideTypeError)
            return ir.Select(args[0], args[1], args[2], self.same(t, name, args[1], args[2]))
        if name in ("min", "max") and n == 2:
            return ir.BinOp(name, args[0], args[1], self.same(t, name, args[0], args[1]))
        if name in _SHUFFLE_CALLS:
            return self._shuffle(t, _SHUFFLE_CALLS[name], args)
        return None

    def _const_arg(self, t: Tree | None, name: str, args: list[ir.Expr], i: int) -> int:
        a = args[i]
        if not isinstance(a, ir.IntImm):
            raise self.error(t, f"argument {i} of {name} must be a constant")
        return a.value

    def _shuffle(self, t: Tree | None, kind: str, args: list[ir.Expr]) -> ir.Shuffle:
        if kind in ("interleave", "concat"):
            vectors = args
            for v in vectors[1:]:
                if v.type.elem != vectors[0].type.elem:
                    raise self.error(t, f"{kind} of {vectors[0].type} and {v.type}", HalideTypeError)
            total = sum(v.lanes for v in vectors)
            if kind == "concat":
                indices = tuple(range(total))
            else:
                lanes = vectors[0].lanes
                indices = tuple(j * lanes + i for i in range(lanes) for j in range(len(vectors)))
        elif kind == "slice":
            # Halide prints any strided Shuffle as a slice, also one over several vectors (lanes taken from
            # their concatenation): slice_vectors(v0, v1, ..., begin, stride, lanes)
            if len(args) < 4:
                raise self.error(t, "slice_vectors expects (vector..., begin, stride, lanes)")
            vectors = args[:-3]
            begin, stride, size = (self._const_arg(t, "slice_vectors", args, i)
                                   for i in range(len(args) - 3, len(args)))
            indices = tuple(begin + stride * i for i in range(size))
            for v in vectors[1:]:
                if v.type.elem != vectors[0].type.elem:
                    raise self.error(t, f"slice_vectors of {vectors[0].type} and {v.type}", HalideTypeError)
            if len(vectors) > 1:
                kind = "shuffle"  # the passes and codegen read a slice as one vector's; a general shuffle is that
        elif kind == "extract_element":
            if len(args) != 2:
                raise self.error(t, "extract_element expects (vector, lane)")
            vectors, indices = args[:1], (self._const_arg(t, "extract_element", args, 1),)
        else:
            k = len(args)
            while k > 1 and isinstance(args[k - 1], ir.IntImm) and args[k - 1].type == INT32:
                k -= 1
            vectors, indices = args[:k], tuple(a.value for a in args[k:])  # type: ignore[attr-defined]
        total = sum(v.lanes for v in vectors)
        if not vectors or any(not 0 <= i < total for i in indices):
            raise self.error(t, f"{kind} shuffle indices out of range", HalideTypeError)
        return ir.Shuffle(kind, tuple(vectors), indices, vectors[0].type.with_lanes(len(indices)))


def _alignment(t: Tree) -> tuple[int, int]:
    modulus, remainder = t.children
    return int(str(modulus)), int(str(remainder))


def _block(stmts: list[ir.Stmt]) -> ir.Stmt:
    if len(stmts) == 1:
        return stmts[0]
    return ir.Block(tuple(stmts), line=getattr(stmts[0], "line", 0) if stmts else 0)
