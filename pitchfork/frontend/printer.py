"""Print `pitchfork.frontend.ir` nodes back in Halide's statement syntax.

Follows Halide 21's IRPrinter closely enough that `parse_stmt(to_text(s)) == s` for every parsed
statement: an infix operand is parenthesized unless it is at the top of an argument, index or value;
a variable, call or load gets a `(type)` prefix unless its type is int32 or its name is bound by an
enclosing let, loop or allocation (which is exactly what the parser assumes when it infers types).
"""

from __future__ import annotations

import math

from pitchfork.frontend import ir
from pitchfork.frontend._capture_worker import EXACT_PRECISION
from pitchfork.frontend.htypes import INT32

_SPACED = {"+": " + ", "-": " - ", "%": " % ", "*": "*", "/": "/"}


def _float_text(v: float) -> str:
    """A float constant as Halide 21's IRPrinter writes it in the capture log (std::cerr's precision
    EXACT_PRECISION: exact digits, pitchfork/frontend/float_literals.py): fixed notation, scientific
    below 1e-6 (Halide's test: log10 of the magnitude < -6)."""
    if v != 0 and math.isfinite(v) and math.log10(abs(v)) < -6:
        return f"{v:.{EXACT_PRECISION}e}"
    return f"{v:.{EXACT_PRECISION}f}"


def to_text(node: ir.Node, known: frozenset[str] = frozenset()) -> str:
    """Halide-style text of a statement (one line per statement, one space per nesting level) or an
    expression. `known` are names to treat as bound outside `node`."""
    p = _Printer(set(known))
    if isinstance(node, ir.Expr):
        return p.expr(node, top=True)
    assert isinstance(node, ir.Stmt)
    p.stmt(node, 0)
    return "".join(p.out)


class _Printer:
    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.out: list[str] = []

    # ---- expressions ------------------------------------------------------------------------
    def _prefix(self, name: str, t: object) -> str:
        return "" if name in self.known or t == INT32 else f"({t})" if not str(t).startswith("(") else str(t)

    def _bound(self, name: str, body: ir.Node, top: bool) -> str:
        had = name in self.known
        self.known.add(name)
        try:
            return self.expr(body, top) if isinstance(body, ir.Expr) else ""
        finally:
            if not had:
                self.known.discard(name)

    def args(self, xs: tuple[ir.Expr, ...] | list[ir.Expr]) -> str:
        return ", ".join(self.expr(x, top=True) for x in xs)

    def expr(self, e: ir.Expr, top: bool = False) -> str:
        match e:
            case ir.IntImm(value=v, type=t):
                return str(v) if t == INT32 else f"({t}){v}"
            case ir.FloatImm(value=v, type=t):
                suffix = {32: "f", 16: "h"}.get(t.bits, "")
                return _float_text(v) + suffix
            case ir.StringImm(value=v):
                return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
            case ir.Variable(name=n, type=t):
                return self._prefix(n, t) + n
            case ir.Cast(type=t, value=v):
                return f"{t}({self.expr(v, True)})"
            case ir.Reinterpret(type=t, value=v):
                ts = str(t)
                return f"reinterpret<{ts}>({self.expr(v, True)})"
            case ir.BinOp(op=op, a=a, b=b) if op in ("min", "max"):
                return f"{op}({self.expr(a, True)}, {self.expr(b, True)})"
            case ir.BinOp(op=op, a=a, b=b):
                s = f"{self.expr(a)}{_SPACED.get(op, f' {op} ')}{self.expr(b)}"
                return s if top else f"({s})"
            case ir.Not(a=a):
                return f"!{self.expr(a)}"
            case ir.Select(cond=c, true_value=t, false_value=f):
                return f"select({self.args([c, t, f])})"
            case ir.Load(buffer=b, index=i, type=t, alignment=al, predicate=p):
                s = self._prefix(b, t) + f"{b}[{self.expr(i, True)}{_aligned(al)}]"
                if p is None:
                    return s
                s += f" if {self.expr(p)}"
                return s if top else f"({s})"
            case ir.Ramp(base=b, stride=s, count=n):
                return f"ramp({self.expr(b, True)}, {self.expr(s, True)}, {n})"
            case ir.Broadcast(value=v, count=n):
                return f"x{n}({self.expr(v, True)})"
            case ir.Call(name=n, args=a, type=t):
                return ("" if t == INT32 else _paren_type(t)) + f"{n}({self.args(a)})"
            case ir.Let(name=n, value=v, body=b):
                s = f"let {n} = {self.expr(v)} in {self._bound(n, b, False)}"
                return s if top else f"({s})"
            case ir.Shuffle():
                return self.shuffle(e)
            case ir.VectorReduce(op=op, value=v, type=t):
                return f"{_paren_type(t)}vector_reduce_{op}({self.expr(v, True)})"
        raise TypeError(f"cannot print {type(e).__name__}")

    def shuffle(self, e: ir.Shuffle) -> str:
        vs = self.args(e.vectors)
        if e.kind in ("interleave", "concat"):
            return f"{e.kind}_vectors({vs})"
        if e.kind == "slice":
            begin = e.indices[0]
            stride = e.indices[1] - e.indices[0] if len(e.indices) > 1 else 1
            return f"slice_vectors({vs}, {begin}, {stride}, {len(e.indices)})"
        if e.kind == "extract_element":
            return f"extract_element({vs}, {e.indices[0]})"
        return f"shuffle({vs}, {', '.join(map(str, e.indices))})"

    # ---- statements -------------------------------------------------------------------------
    def line(self, indent: int, text: str) -> None:
        self.out.append(" " * indent + text + "\n")

    def body(self, name: str | None, s: ir.Stmt, indent: int) -> None:
        had = name is None or name in self.known
        if name is not None:
            self.known.add(name)
        try:
            self.stmt(s, indent)
        finally:
            if not had:
                self.known.discard(name)  # type: ignore[arg-type]

    def stmt(self, s: ir.Stmt, ind: int) -> None:
        match s:
            case ir.Block(stmts=ss):
                for x in ss:
                    self.stmt(x, ind)
            case ir.LetStmt(name=n, value=v, body=b):
                self.line(ind, f"let {n} = {self.expr(v, True)}")
                self.body(n, b, ind)
            case ir.For(name=n, min=lo, extent=ext, kind=k, body=b, device_api=d):
                kw = "for" if k == "serial" else k
                dev = f"<{d}>" if d else ""
                self.line(ind, f"{kw}{dev} ({n}, {self.expr(lo, True)}, {self.expr(ext, True)}) {{")
                self.body(n, b, ind + 1)
                self.line(ind, "}")
            case ir.Store(buffer=b, index=i, value=v, alignment=al, predicate=p):
                if p is not None:
                    self.line(ind, f"predicate ({self.expr(p, True)})")
                    ind += 1
                self.line(ind, f"{b}[{self.expr(i, True)}{_aligned(al)}] = {self.expr(v, True)}")
            case ir.Allocate(name=n, type=t, extents=es, body=b, memory_type=m, condition=c, new_expr=ne,
                             free_function=ff):
                sizes = "".join(f" * {self.expr(x)}" for x in es)
                mem = f" in {m}" if m else ""
                cond = f" if {self.expr(c)}" if c is not None else ""
                self.line(ind, f"allocate {n}[{t}{sizes}]{mem}{cond}")
                if ne is not None:
                    self.line(ind, f" custom_new {{ {self.expr(ne)} }}")
                if ff:
                    self.line(ind, f" custom_delete {{ {ff}({n}); }}")
                self.body(n, b, ind)
            case ir.Free(name=n):
                self.line(ind, f"free {n}")
            case ir.IfThenElse():
                self._if(s, ind, "if")
            case ir.ProducerConsumer(name=n, is_producer=prod, body=b):
                self.line(ind, f"{'produce' if prod else 'consume'} {n} {{")
                self.stmt(b, ind + 1)
                self.line(ind, "}")
            case ir.AssertStmt(condition=c, message=m):
                self.line(ind, f"assert({self.expr(c, True)}, {self.expr(m, True)})")
            case ir.Evaluate(value=v):
                self.line(ind, self.expr(v, True))
            case ir.Fork(first=a, rest=b):
                self.line(ind, "fork {")
                self.stmt(a, ind + 1)
                while isinstance(b, ir.Fork):  # nested forks print as one, as Halide prints them
                    self.line(ind, "} {")
                    self.stmt(b.first, ind + 1)
                    b = b.rest
                self.line(ind, "} {")
                self.stmt(b, ind + 1)
                self.line(ind, "}")
            case ir.Acquire(semaphore=sem, count=c, body=b):
                self.line(ind, f"acquire ({self.expr(sem, True)}, {self.expr(c, True)}) {{")
                self.stmt(b, ind + 1)
                self.line(ind, "}")
            case ir.Atomic(producer_name=pn, body=b, mutex_name=m):
                names = f"{pn}, {m}" if m else pn
                self.line(ind, f"atomic ({names}) {{" if names else "atomic {")
                self.stmt(b, ind + 1)
                self.line(ind, "}")
            case ir.HoistedStorage(name=n, body=b):
                self.line(ind, f"hoisted_storage {n} {{")
                self.stmt(b, ind + 1)
                self.line(ind, "}")
            case _:
                raise TypeError(f"cannot print {type(s).__name__}")

    def _if(self, s: ir.IfThenElse, ind: int, opener: str) -> None:
        head = f"if ({self.expr(s.cond, True)}) {{"
        if opener == "if":
            self.line(ind, head)
        else:
            self.out[-1] = self.out[-1].rstrip("\n") + f" else {head}\n"
        self.stmt(s.then_case, ind + 1)
        self.line(ind, "}")
        if isinstance(s.else_case, ir.IfThenElse):
            self._if(s.else_case, ind, "else")
        elif s.else_case is not None:
            self.out[-1] = self.out[-1].rstrip("\n") + " else {\n"
            self.stmt(s.else_case, ind + 1)
            self.line(ind, "}")


def _aligned(al: tuple[int, int] | None) -> str:
    return f" aligned({al[0]}, {al[1]})" if al is not None else ""


def _paren_type(t: object) -> str:
    s = str(t)
    return s if s.startswith("(") else f"({s})"
