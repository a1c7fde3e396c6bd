"""Z3 bit-vector encoding of FPIR terms, and equivalence checking.

A term of type t becomes a bit-vector expression of width bits(t); a variable `x_u8` becomes the
bit-vector symbol `x` of width 8 (u1 is a 1-bit vector). Primitive ops use the op table's Z3
semantics; FPIR and target ops are encoded through their definitions, like the interpreter.

Lane-combining terms (an op with `arg_lanes`, e.g. `vector_reduce_add_x4` or `udot`) are encoded lane by
lane (`to_z3_lane`): lane 0 of the result, where the operand of a factor-f op is read at lanes 0..f-1
(nested: lane j of a factor-f operand reads lanes j*f .. j*f+f-1), and lane k of a variable `x` is its own
symbol (`x` for lane 0, `x@k` otherwise). Every result lane has the same structure over its own disjoint
group of independent inputs, so proving lane 0 proves them all. Constants (and `env` entries: rule
constants, and wildcards a rule requires to be uniform) are broadcasts, the same at every lane; so is a
variable leaf stated uniform (`var(..., uniform=True)`).

An op that reads an operand at lane 0 only (`OpSpec.lane0_args`, x86 vpsraw's count) breaks that
symmetry at lane 0, where "its own lane" and "lane 0" coincide: such terms are proved at lane 1
(`proof_lane`), where the two reads are different symbols. Every lane k >= 1 has the same structure
over its own symbols, and lane 0 is lane 1's formula with some of its independent symbols identified,
so proving lane 1 proves every lane.

Flags (fpir.ops.FlagSpec, e.g. `add.nsw`) do not change a node's value; `flag_facts(term)` gives the
Z3 facts they state (over the same symbols as `to_z3`), which the rule verifier assumes for the left
side and proves for the right side.

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

from fpir.flags import has_flags  # noqa: F401 - defined without Z3 (validate.py asks before it needs Z3); kept here for callers
from fpir.ops import template
from fpir.opspec import has_lane_ops, spec
from fpir.term import BROADCAST_NAME, Term
from fpir.types import ScalarType


# Z3 resource units per query. On the development machine Z3 spends about 2-3 million per second;
# unlike seconds, the count a query needs does not change with machine load.
DEFAULT_RLIMIT = 60_000_000


def isolated_solver(assertions: Sequence[z3.BoolRef], rlimit: int,
                    tactics: Sequence[str] = ()) -> tuple[z3.Solver, z3.Context]:
    """A solver in a fresh context holding copies of the assertions, bounded by `rlimit`; with
    `tactics`, a solver that runs those Z3 tactics in order (the last one solves).

    Evaluate expressions in its models through `expr.translate(ctx)`.
    """
    ctx = z3.Context()
    solver = z3.Then(*[z3.Tactic(t, ctx=ctx) for t in tactics]).solver() if tactics else z3.Solver(ctx=ctx)
    solver.set("rlimit", max(1, int(rlimit)))
    for a in assertions:
        solver.add(a.translate(ctx))
    return solver, ctx


def resource_count(solver: z3.Solver) -> int:
    """The Z3 resource units the solver's context has consumed (its `rlimit count` statistic; for a
    solver of `isolated_solver`, what its queries cost)."""
    for k, v in solver.statistics():
        if k == "rlimit count":
            return int(v)
    return 0


def unknown_reason(solver: z3.Solver) -> str:
    reason = solver.reason_unknown() or "unknown"
    return "resource limit reached" if reason in ("max. resource limit exceeded", "canceled") else reason


def symbol(t: Term) -> z3.BitVecRef:
    return z3.BitVec(t.name, t.type.bits)


def to_z3(term: Term, env: Optional[Mapping[str, z3.BitVecRef]] = None,
          facts: Optional[list[z3.BoolRef]] = None) -> z3.BitVecRef:
    """The term's value; the facts its flagged nodes state are appended to `facts` if given."""
    if has_lane_ops(term):
        if facts is not None and any(t.args and t.attrs for t in term.walk()):
            raise ValueError("flags inside a lane-combining term are not supported by the Z3 encoding")
        return to_z3_lane(term, proof_lane(term), _with_broadcasts(term, env))
    env = dict(env or {})
    memo: dict[int, z3.BitVecRef] = {}
    for t in term.walk():
        args = [memo[id(a)] for a in t.args]
        if facts is not None and t.args and t.attrs:
            s = spec(t.op)
            types = [a.type for a in t.args]
            facts.extend(s.flags[f].z3_holds(args, types, t.type) for f in t.attrs)
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


def flag_facts(term: Term, env: Optional[Mapping[str, z3.BitVecRef]] = None) -> list[z3.BoolRef]:
    """The facts stated by the flags of the term's nodes (`add.nsw(a, b)`: a + b does not overflow)."""
    facts: list[z3.BoolRef] = []
    to_z3(term, env, facts)
    return facts


def _with_broadcasts(term: Term, env: Optional[Mapping[str, z3.BitVecRef]]) -> dict[str, z3.BitVecRef]:
    out = dict(env or {})
    for v in term.variables():
        if v.name not in out and BROADCAST_NAME.match(v.name):
            out[v.name] = symbol(v)
    return out


def proof_lane(*terms: Term) -> int:
    """The result lane whose proof proves every lane: 1 if an op reads an operand at lane 0 only, else 0."""
    return 1 if any(t.args and spec(t.op).reads_lane0 for term in terms for t in term.walk()) else 0


def lane_symbol(t: Term, lane: int) -> z3.BitVecRef:
    if t.is_uniform_leaf:  # the same value in every lane
        lane = 0
    return z3.BitVec(t.name if lane == 0 else f"{t.name}@{lane}", t.type.bits)


def to_z3_lane(term: Term, lane: int = 0, env: Optional[Mapping[str, z3.BitVecRef]] = None,
               memo: Optional[dict[tuple[int, int], z3.BitVecRef]] = None,
               used: Optional[dict[str, tuple[Term, int]]] = None) -> z3.BitVecRef:
    """The Z3 value of lane `lane` of the term; `used` collects the (variable, lane) symbols read."""
    env = env or {}
    memo = {} if memo is None else memo
    key = (id(term), lane)
    hit = memo.get(key)
    if hit is not None:
        return hit
    t = term
    if t.op == "var":
        if t.name in env:
            r = env[t.name]
        else:
            r = lane_symbol(t, lane)
            if used is not None:
                used[str(r)] = (t, lane)
    elif t.op == "const":
        r = z3.BitVecVal(t.value % (1 << t.type.bits), t.type.bits)
    else:
        s = spec(t.op)
        if s.reduce is not None:
            combine, f = s.reduce
            parts = [to_z3_lane(t.args[0], lane * f + k, env, memo, used) for k in range(f)]
            r = parts[0]
            for p in parts[1:]:
                r = _apply(combine, [r, p], t.type)
        elif s.combines_lanes:
            # A target instruction combining lanes: its definition over the actual operands.
            from fpir.ops import expansion

            r = to_z3_lane(expansion(t), lane, env, memo, used)
        else:
            args = [to_z3_lane(a, 0 if i in s.lane0_args else lane, env, memo, used) for i, a in enumerate(t.args)]
            if s.z3_impl is not None:
                r = s.z3_impl(args, [a.type for a in t.args], t.type)
            else:
                body, names = template(t.op, tuple(a.type for a in t.args), t.type)
                r = to_z3(body, dict(zip(names, args)))
    memo[key] = r
    return r


def _apply(op: str, args: list[z3.BitVecRef], t: ScalarType) -> z3.BitVecRef:
    s = spec(op)
    if s.z3_impl is not None:
        return s.z3_impl(args, [t] * len(args), t)
    body, names = template(op, (t,) * len(args), t)
    return to_z3(body, dict(zip(names, args)))


def signed_value(v: int, t: ScalarType) -> int:
    return t.wrap(v)


@dataclass(frozen=True)
class Verdict:
    status: str  # "VALID" | "INVALID" | "UNKNOWN"
    counterexample: Mapping[str, int] = field(default_factory=dict)
    reason: str = ""
    lhs_value: Optional[int] = None
    rhs_value: Optional[int] = None
    #: Z3 resource units the query consumed (its fresh context's `rlimit count`; 0 when no solver ran):
    #: deterministic, so a caller can charge it against a budget (synth/meter.py)
    resource: int = 0

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
    lanes = has_lane_ops(a) or has_lane_ops(b)
    used: dict[str, tuple[Term, int]] = {}
    if lanes:
        env = _with_broadcasts(b, _with_broadcasts(a, env))
        names = {v.name for v in a.variables() + b.variables()} - set(env)
        from z3.z3util import get_vars

        if any(str(v) in names for c in assume for v in get_vars(c)):
            # An assumption about a lane-wise input would constrain lane 0 only.
            return Verdict("UNKNOWN", reason="assumptions about inputs of a lane-combining op are not supported")
        memo: dict[tuple[int, int], z3.BitVecRef] = {}
        k = proof_lane(a, b)
        za, zb = to_z3_lane(a, k, env, memo, used), to_z3_lane(b, k, env, memo, used)
    else:
        za, zb = to_z3(a, env), to_z3(b, env)
    solver, ctx = isolated_solver([*assume, za != zb], rlimit)
    r = solver.check()
    spent = resource_count(solver)
    if r == z3.unsat:
        return Verdict("VALID", resource=spent)
    if r == z3.unknown:
        return Verdict("UNKNOWN", reason=unknown_reason(solver), resource=spent)
    m = solver.model()
    cex: dict[str, int] = {}
    for name, (v, _lane) in used.items():
        val = m.eval(z3.BitVec(name, v.type.bits).translate(ctx), model_completion=True).as_long()
        cex[name] = signed_value(val, v.type)
    for v in ({} if lanes else {t.name: t for t in a.variables() + b.variables()}).values():
        sym = env[v.name] if env and v.name in env else symbol(v)
        val = m.eval(sym.translate(ctx), model_completion=True).as_long()
        cex[v.name] = signed_value(val, v.type)
    va = m.eval(za.translate(ctx), model_completion=True).as_long()
    vb = m.eval(zb.translate(ctx), model_completion=True).as_long()
    return Verdict("INVALID", cex, lhs_value=signed_value(va, a.type), rhs_value=signed_value(vb, b.type),
                   resource=spent)
