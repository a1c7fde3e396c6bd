"""Scalar expressions of a loop nest (indices, loop bounds, lets, conditions) as plain LLVM scalars.

Vector expressions go through instruction selection; scalar ones are emitted here directly, with the
facts Halide's own code generator gives LLVM so that its loop passes can strength-reduce addressing:

* `add`/`sub`/`mul` on signed integers of 32 bits or more carry `nsw` (Halide's semantics: such
  arithmetic does not overflow, and Halide's LLVM backend says so the same way). This lets LLVM
  widen induction variables and fold `sext(i + c)` into 64-bit addressing. Only operations that
  come from the Halide expression itself get the flag (`nsw=False` turns it off, for values that
  are data rather than indices); FPIR ops are expanded into primitive ops *without* it, because
  their expansions may wrap on purpose.
* everything else keeps the exact FPIR semantics: simple ops map one to one, other ops (division,
  shifts, FPIR intrinsics) go through `pitchfork.codegen.expr.ExprEmitter` at one lane.

Invariant: the value of every term equals the FPIR interpreter's whenever no flagged operation
overflows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Optional

from llvmlite import ir

from fpir.term import Term, intern, var
from pitchfork.codegen.expr import ExprEmitter, vec_type
from pitchfork.codegen.ir_constants import scalar, undef

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class ScalarValues(Mapping[str, ir.Value]):
    """The code generator's scalars (name -> (value, type)) read as an `env` of values, without
    building a dictionary of the variables of each expression first (a walk of the term per scalar
    expression); it reads the dictionary it is given, so it is made where it is used."""

    __slots__ = ("scalars",)

    def __init__(self, scalars: Mapping[str, tuple[ir.Value, object]]) -> None:
        self.scalars = scalars

    def __getitem__(self, name: str) -> ir.Value:
        return self.scalars[name][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self.scalars)

    def __len__(self) -> int:
        return len(self.scalars)


class ScalarEmitter:
    """Emits scalar terms at the builder's position (`emit`, `emit_index`). `expansions`, if given, is
    where `_generic` keeps each FPIR node's expansion (`expand_fpir`, a function of the node alone for
    one rule set) for the next emitter sharing it: a loop nest's code generator passes one per compile,
    whose scalar emitters meet the same interned nodes again (the same shift or division in the bounds
    of several loops)."""

    def __init__(self, builder: ir.IRBuilder, env: Mapping[str, ir.Value], target: str, nsw: bool = True,
                 expansions: Optional[dict[Term, Term]] = None) -> None:
        self.b, self.env, self.target, self.nsw = builder, env, target, nsw
        self._memo: dict[Term, ir.Value] = {}
        self._expansions: dict[Term, Term] = {} if expansions is None else expansions

    def emit(self, t: Term) -> ir.Value:
        for n in t.walk():
            if n not in self._memo:
                self._memo[n] = self._node(n)
        return self._memo[t]

    def _node(self, t: Term) -> ir.Value:
        ty = t.type
        if t.op == "var":
            return self.env[t.name]
        if t.op == "const":
            return scalar(ty.bits, ty.wrap(t.value))
        a = [self._memo[x] for x in t.args]
        b = self.b
        if t.op in ("add", "sub", "mul"):
            flags = ["nsw"] if self.nsw and ty.signed and ty.bits >= 32 else []
            return getattr(b, t.op)(a[0], a[1], flags=flags)
        if t.op in ("and", "or", "xor"):  # llvmlite's names: and_, or_ (Python keywords), xor
            return {"and": b.and_, "or": b.or_, "xor": b.xor}[t.op](a[0], a[1])
        if t.op == "not":
            return b.not_(a[0])
        if t.op in ("min", "max"):
            if ty.bits == 1:
                return (b.and_ if t.op == "min" else b.or_)(a[0], a[1])
            cmp = b.icmp_signed if ty.signed else b.icmp_unsigned
            return b.select(cmp("<" if t.op == "min" else ">", a[0], a[1]), a[0], a[1])
        if t.op in _CMP:
            at = t.args[0].type
            return (b.icmp_signed if at.signed else b.icmp_unsigned)(_CMP[t.op], a[0], a[1])
        if t.op == "select":
            return b.select(a[0], a[1], a[2])
        if t.op == "cast" and ty.bits > 1 and t.args[0].type.bits > 1:
            src = t.args[0].type
            if src.bits == ty.bits:
                return a[0]
            if src.bits > ty.bits:
                return b.trunc(a[0], ir.IntType(ty.bits))
            return (b.sext if src.signed else b.zext)(a[0], ir.IntType(ty.bits))
        return self._generic(t, a)

    def emit_index(self, t: Term, bits: int = 64) -> ir.Value:
        """A signed 32-bit index as a `bits`-wide value for addressing (the target's pointer width).
        At 64 bits it is computed in 64 bits where it is an `add`/`sub`/`mul`/`min`/`max` tree (equal
        to the sign-extended 32-bit value because that arithmetic does not overflow), as Halide's own
        backend does on 64-bit targets (`promote_64`), so no sign extension sits between the loop
        counter and the address. At 32 bits (Hexagon) it stays the 32-bit `nsw` value, as Halide
        leaves it where pointers are 32 bits: 64-bit index arithmetic there is register pairs that
        LLVM cannot fold into post-incremented addresses."""
        i64 = ir.IntType(64)
        b = self.b
        if bits == 32:
            v0 = self.emit(t)
            if v0.type.width < 32:
                return (b.sext if t.type.signed else b.zext)(v0, ir.IntType(32))
            return v0 if v0.type.width == 32 else b.trunc(v0, ir.IntType(32))

        def go(n: Term) -> ir.Value:
            if n in memo:
                return memo[n]
            ty = n.type
            if n.op == "const":
                v: ir.Value = scalar(64, ty.wrap(n.value))
            elif self.nsw and ty.signed and ty.bits == 32 and n.op in ("add", "sub", "mul"):
                v = getattr(b, n.op)(go(n.args[0]), go(n.args[1]), flags=["nsw"])
            elif self.nsw and ty.signed and ty.bits == 32 and n.op in ("min", "max"):
                x, y = go(n.args[0]), go(n.args[1])
                v = b.select(b.icmp_signed("<" if n.op == "min" else ">", x, y), x, y)
            else:
                v = self.emit(n)
                if v.type.width < 64:
                    v = (b.sext if ty.signed else b.zext)(v, i64)
            memo[n] = v
            return v

        memo: dict[Term, ir.Value] = {}
        if not (t.type.signed and t.type.bits == 32):
            v = self.emit(t)
            return v if v.type.width == 64 else (b.sext if t.type.signed else b.zext)(v, i64)
        return go(t)

    @staticmethod
    def is_direct(t: Term) -> bool:
        """Whether `_node` emits `t` one to one (not through `_generic`)."""
        if t.op in ("var", "const", "add", "sub", "mul", "and", "or", "xor", "not", "min", "max", "select") \
                or t.op in _CMP:
            return True
        return t.op == "cast" and t.type.bits > 1 and t.args[0].type.bits > 1

    def _generic(self, t: Term, a: list[ir.Value]) -> ir.Value:
        """Any other op at one lane, with exact semantics (no flags)."""
        from pitchfork.selection.lower import expand_fpir

        env: dict[str, ir.Value] = {}
        args = []
        for k, (x, v) in enumerate(zip(t.args, a)):
            if x.op == "const":  # constants stay constants: the expansion specializes on them
                args.append(x)
                continue
            name = f"_s{k}"
            env[name] = self.b.insert_element(undef(vec_type(x.type, 1)), v, scalar(32, 0))
            args.append(var(name, x.type))
        node = intern(t.op, t.type, tuple(args), t.attrs)
        expanded = self._expansions.get(node)
        if expanded is None:
            expanded = self._expansions[node] = expand_fpir(node)
        out = ExprEmitter(self.b, 1, env, self.target).emit(expanded)
        return self.b.extract_element(out, scalar(32, 0))
