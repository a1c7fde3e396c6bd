"""Z3 bit-vector encoding of FPIR terms, and equivalence checking.

A term of type t becomes a bit-vector expression of width bits(t); a variable `x_u8` becomes the
bit-vector symbol `x` of width 8 (u1 is a 1-bit vector). Primitive ops use the op table's Z3
semantics; FPIR and target ops are encoded through their definitions, like the interpreter.

`equivalent(a, b, assume=...)` answers with a `Verdict`: VALID, INVALID with a counterexample
(concrete integer inputs, interpreted in each variable's signedness) or UNKNOWN with the reason.

Verdicts never depend on wall-clock time or on what was solved before: every query runs in a fresh
Z3 context (`isolated_solver`, so Z3's id-ordered rewriting sees the same formula whatever the
process did earlier) under a resource limit (`rlimit`, Z3's deterministic count of solver steps)
instead of a timeout. The same query therefore gets the same answer on an idle or a loaded machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import z3

from fpir.ops import spec, template
from fpir.term import Term
from fpir.types import ScalarType


# Z3 resource units per query. On the development machine Z3 spends about 2-3 million per second;
# unlike seconds, the count a query needs does not change with machine load.
DEFAULT_RLIMIT = 60_000_000


def isolated_solver(assertions: Sequence[z3.BoolRef], rlimit: int) -> tuple[z3.Solver, z3.Context]:
    """A solver in a fresh context holding copies of the assertions, bounded by `rlimit`.

    Evaluate expressions in its models through `expr.translate(ctx)`.
    """
    ctx = z3.Context()
    solver = z3.Solver(ctx=ctx)
    solver.set("rlimit", max(1, int(rlimit)))
    for a in assertions:
        solver.add(a.translate(ctx))
    return solver, ctx


def unknown_reason(solver: z3.Solver) -> str:
    reason = solver.reason_unknown() or "unknown"
    return "resource limit reached" if reason in ("max. resource limit exceeded", "canceled") else reason


def symbol(t: Term) -> z3.BitVecRef:
    return z3.BitVec(t.name, t.type.bits)


def to_z3(term: Term, env: Optional[Mapping[str, z3.BitVecRef]] = None) -> z3.BitVecRef:
    env = dict(env or {})
    memo: dict[int, z3.BitVecRef] = {}
    for t in term.walk():
        args = [memo[id(a)] for a in t.args]
        if t.op == "var":
            memo[id(t)] = env[t.name] if t.name in env else symbol(t)
        elif t.op == "const":
            memo[id(t)] = z3.BitVecVal(t.value % (1 << t.type.bits), t.type.bits)
        else:
            s = spec(t.op)
            if s.z3_impl is not None:
                memo[id(t)] = s.z3_impl(args, [a.type for a in t.args], t.type)
            else:
                body, names = template(t.op, tuple(a.type for a in t.args), t.type)
                memo[id(t)] = to_z3(body, dict(zip(names, args)))
    return memo[id(term)]


def signed_value(v: int, t: ScalarType) -> int:
    return t.wrap(v)


@dataclass(frozen=True)
class Verdict:
    status: str  # "VALID" | "INVALID" | "UNKNOWN"
    counterexample: Mapping[str, int] = field(default_factory=dict)
    reason: str = ""
    lhs_value: Optional[int] = None
    rhs_value: Optional[int] = None

    @property
    def valid(self) -> bool:
        return self.status == "VALID"

    def __str__(self) -> str:
        if self.status == "VALID":
            return "VALID"
        if self.status == "INVALID" and self.reason:
            return f"INVALID ({self.reason})"
        if self.status == "INVALID":
            cex = ", ".join(f"{k} = {v}" for k, v in sorted(self.counterexample.items()))
            return f"INVALID ({cex}; before = {self.lhs_value}, after = {self.rhs_value})"
        return f"UNKNOWN ({self.reason})"


def equivalent(a: Term, b: Term, assume: Sequence[z3.BoolRef] = (), rlimit: int = DEFAULT_RLIMIT,
               env: Optional[Mapping[str, z3.BitVecRef]] = None) -> Verdict:
    """Prove a == b for all inputs satisfying `assume` (bit-exact), within `rlimit` Z3 resource units."""
    if a.type.bits != b.type.bits:
        return Verdict("INVALID", reason=f"types differ: {a.type} vs {b.type}")
    za, zb = to_z3(a, env), to_z3(b, env)
    solver, ctx = isolated_solver([*assume, za != zb], rlimit)
    r = solver.check()
    if r == z3.unsat:
        return Verdict("VALID")
    if r == z3.unknown:
        return Verdict("UNKNOWN", reason=unknown_reason(solver))
    m = solver.model()
    cex: dict[str, int] = {}
    for v in {t.name: t for t in a.variables() + b.variables()}.values():
        sym = env[v.name] if env and v.name in env else symbol(v)
        val = m.eval(sym.translate(ctx), model_completion=True).as_long()
        cex[v.name] = signed_value(val, v.type)
    va = m.eval(za.translate(ctx), model_completion=True).as_long()
    vb = m.eval(zb.translate(ctx), model_completion=True).as_long()
    return Verdict("INVALID", cex, lhs_value=signed_value(va, a.type), rhs_value=signed_value(vb, b.type))
