"""Fallback proofs for rules whose bit-vector proof does not finish: multiplier identities.

Bit-blasting cannot prove that two differently built 32- or 64-bit multipliers agree, or even reason
about one 128-bit multiplier inside a large formula, within any reasonable time, so
`fpir.z3enc.equivalent` answers UNKNOWN (resource limit reached) for rules such as the two-word expansion of a
64-bit mul_shr. `synth.verify.verify_rule` tries these after a cheap direct query, in order:

1. `equivalent_uf`: the same bit-vector formula with every multiplication replaced by an
   uninterpreted function of the same width. This over-approximates (any model of the original is a
   model of the abstraction), so UNSAT proves the rule; it works when both sides use the same
   products and only rearrange their bits (the mul_shr expansions over hi/lo halves of one product).
2. `equivalent_int`: the terms over Z3's integers, where a partial-product expansion is a polynomial
   identity that nonlinear arithmetic proves in milliseconds. A lane of type t is an integer in
   [t.min, t.max] (u1: 0 or 1); each primitive computes the exact result and wraps it into its type
   with a Euclidean modulo; shifts and masks are only encoded where they are arithmetic (shifts by
   constants, `&` with a low-bit mask 2^k - 1 or with a sign mask `s >> (bits - 1)`, which is 0 or all
   ones: a select); FPIR and target ops expand through their
   definitions. Anything else raises `Unsupported` and the verdict stays UNKNOWN. Its meaning is
   cross-checked against the numpy interpreter in tests/pitchfork/selection/test_generic_lowering.py.

   With `product_bounds` (synth.verify tries it for rules whose predicate bounds an operand or whose
   left side shifts a product by a rule constant, one case per shift constant), each variable's
   interval is narrowed by the constant bounds the assumptions state and every product gets its
   interval (the corners of its operands' intervals) as a lemma:
   "a truncating narrow of a product with a bounded factor is the saturating narrow" becomes linear
   arithmetic (the 32-bit instances of multiply.rules' bounded rules: ~0.3 s per case instead of
   UNKNOWN after 956 s as bit-vectors).

Neither fallback can turn a rule VALID that is not: (1) is sound by over-approximation, (2) is an
exact encoding (the lemmas are theorems of interval arithmetic over intervals that hold under the
assumptions); a counterexample from (2) is a real one.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import z3

from fpir.ops import template
from fpir.opspec import spec
from fpir.term import Term
from fpir.types import ScalarType
from fpir.z3enc import DEFAULT_RLIMIT, Verdict, isolated_solver, to_z3, unknown_reason


class Unsupported(ValueError):
    """The term uses an op (or operand shape) this encoding does not model exactly."""


Val = tuple  # (Z3 integer expression, lower bound, upper bound)

# How wraps are encoded: "mod" always uses a modulo; "linear" avoids it when the value is at most one
# period out of range. Z3 proves some identities only one way, so equivalent_int tries both.
_MODE = ["mod"]
# Division by 2^k is "purified": e = q 2^k + r with fresh q, r and 0 <= r < 2^k (shared by every
# floor division and modulo of the same e and k), which keeps nonlinear arithmetic fast.
_DIVMOD: dict[tuple[int, int], tuple[z3.ArithRef, z3.ArithRef]] = {}
_SIDE: list[z3.BoolRef] = []
# With product bounds on (equivalent_int(..., product_bounds=True)), each product's interval, which
# the operands' intervals imply, is stated as a lemma (see _product_lemma).
_PRODUCT_LEMMAS = [False]


_PRESOLVE = ("simplify", "propagate-values", "solve-eqs", "smt")


def _divmod(e: z3.ArithRef, p: int) -> tuple[z3.ArithRef, z3.ArithRef]:
    key = (e.get_id(), p)
    hit = _DIVMOD.get(key)
    if hit is None:
        n = len(_DIVMOD)
        q, r = z3.Int(f"q!{n}"), z3.Int(f"r!{n}")
        _SIDE.extend([e == q * p + r, r >= 0, r < p])
        hit = _DIVMOD[key] = (q, r)
    return hit


def _wrap(v: Val, t: ScalarType) -> Val:
    """Reduce an exact value into t's range; piecewise linear when one period of wrap suffices."""
    e, lo, hi = v
    if t.bits == 1:
        return (z3.If(e != 0, z3.IntVal(1), z3.IntVal(0)), 0, 1)
    if _MODE[0] == "linear" and t.min <= lo and hi <= t.max:
        return v
    m = 1 << t.bits
    if _MODE[0] == "linear" and t.min - m <= lo and hi <= t.max + m:  # one period away: no modulo
        e = z3.If(e < t.min, e + m, z3.If(e > t.max, e - m, e))
    else:
        e = _divmod(e - t.min, m)[1] + t.min
    return (e, t.min, t.max)


def _const_value(t: Term) -> Optional[int]:
    return t.value if t.is_const else None


def _bool(c: z3.BoolRef) -> Val:
    return (z3.If(c, z3.IntVal(1), z3.IntVal(0)), 0, 1)


def _known(t: Term, v: Val) -> Optional[int]:
    """The operand's value when it is a constant, also one reached through an op's definition
    (a template variable bound to a constant has equal bounds)."""
    k = _const_value(t)
    return k if k is not None else (v[1] if v[1] == v[2] else None)


def _shift(t: Term, a: Val, amount: Val, left: bool) -> Val:
    k = _known(t.args[1], amount)
    if k is None:
        return _variable_shift(t, a, amount, left)
    if k < 0:
        left, k = not left, -k
    p = 1 << min(k, t.type.bits)
    e, lo, hi = a
    if left:
        return _wrap((e * p, lo * p, hi * p), t.type)
    return (_divmod(e, p)[0], lo // p, hi // p)  # floor division; amounts >= bits give 0 or -1


def _variable_shift(t: Term, a: Val, amount: Val, left: bool) -> Val:
    """A shift by a variable amount (a rule constant `c0`), as a case split over the amounts that
    give distinct results: -bits..bits (beyond, the result is that of +-bits)."""
    bits = t.type.bits
    b, blo, bhi = amount
    lo, hi = max(blo, -bits), min(bhi, bits)
    if lo > hi:  # every amount lies beyond one end: the result is that of the end (an empty If-chain otherwise)
        lo = hi = bits if blo > bits else -bits
    if hi - lo > 2 * 64 + 1:
        raise Unsupported(f"{t.op} by a variable amount of range {blo}..{bhi}")
    e, alo, ahi = a
    out: Optional[z3.ArithRef] = None
    out_lo, out_hi = min(alo, 0), max(ahi, 0)
    for k in range(hi, lo - 1, -1):  # the If-chain's last case covers every amount at or beyond the ends
        lk = k if left else -k  # the left shift it amounts to
        if lk >= 0:
            v = _wrap((e * (1 << min(lk, bits)), alo * (1 << min(lk, bits)), ahi * (1 << min(lk, bits))), t.type)
            out_lo, out_hi = min(out_lo, v[1]), max(out_hi, v[2])
        else:
            p = 1 << min(-lk, bits)
            v = (_divmod(e, p)[0], alo // p, ahi // p)
        cond = b >= k if k == hi else (b <= k if k == lo else b == k)
        out = v[0] if out is None else z3.If(cond, v[0], out)
    assert out is not None
    return (out, out_lo, out_hi)


def _sign_mask(t: Term) -> bool:
    """t is 0 or all ones in its type: a signed value shifted right by bits - 1 (the sign smeared over
    the word), possibly through casts or reinterprets that keep the width."""
    while t.op in ("reinterpret", "cast") and t.args[0].type.bits == t.type.bits:
        t = t.args[0]
    amount = t.args[1] if t.op == "shr" else None
    return amount is not None and t.type.signed and amount.is_const and amount.value == t.type.bits - 1


def _and(t: Term, a: Val, b: Val) -> Val:
    for i, other in ((1, a), (0, b)):
        k = _known(t.args[i], (a, b)[i])
        if k is None:
            continue
        if k == -1 or k == (1 << t.type.bits) - 1:
            return other
        if k > 0 and k & (k + 1) == 0:  # a low mask 2^j - 1: the value modulo 2^j
            e, lo, hi = other
            if _MODE[0] == "linear" and 0 <= lo and hi <= k:
                return other
            return (_divmod(e, k + 1)[1], 0, k)
    for i, other in ((1, a), (0, b)):
        if _sign_mask(t.args[i]):  # m & v with m in {0, all ones}: v where m is not 0
            e, lo, hi = other
            return (z3.If((a, b)[i][0] != 0, e, z3.IntVal(0)), min(lo, 0), max(hi, 0))
    raise Unsupported("& other than with a low-bit mask or a sign mask")


def _node(t: Term, args: list[Val]) -> Val:
    op, rt = t.op, t.type
    if op in ("add", "sub", "mul"):
        (a, al, ah), (b, bl, bh) = args
        if op == "add":
            return _wrap((a + b, al + bl, ah + bh), rt)
        if op == "sub":
            return _wrap((a - b, al - bh, ah - bl), rt)
        corners = [al * bl, al * bh, ah * bl, ah * bh]
        if _PRODUCT_LEMMAS[0]:
            _product_lemma(a * b, min(corners), max(corners))
        return _wrap((a * b, min(corners), max(corners)), rt)
    if op in ("cast", "reinterpret"):
        return _wrap(args[0], rt)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        a, b = args[0][0], args[1][0]
        return _bool({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op])
    if op == "select":
        (c, _, _), (a, al, ah), (b, bl, bh) = args
        return (z3.If(c != 0, a, b), min(al, bl), max(ah, bh))
    if op in ("min", "max"):
        (a, al, ah), (b, bl, bh) = args
        if op == "min":
            return (z3.If(a <= b, a, b), min(al, bl), min(ah, bh))
        return (z3.If(a <= b, b, a), max(al, bl), max(ah, bh))
    if op == "not":
        a, lo, hi = args[0]
        if rt.bits == 1:
            return (1 - a, 0, 1)
        return (-a - 1, -hi - 1, -lo - 1) if rt.signed else (rt.max - a, rt.max - hi, rt.max - lo)
    if op == "abs":
        a, lo, hi = args[0]
        return (z3.If(a < 0, -a, a), 0, max(abs(lo), abs(hi)))
    if op == "shl":
        return _shift(t, args[0], args[1], True)
    if op == "shr":
        return _shift(t, args[0], args[1], False)
    if op == "and":
        return _and(t, args[0], args[1])
    raise Unsupported(f"op {op}")


def _product_lemma(product: z3.ArithRef, lo: int, hi: int) -> None:
    """State lo <= a * b <= hi, the interval the operands' intervals give the product (its four
    corners). The lemma is a theorem of interval arithmetic, and every Val's interval bounds its
    expression under the query's assumptions (variables: their type range narrowed by the bounds the
    assumptions state, _assumed_bounds), so adding it changes no verdict; it spares nonlinear
    arithmetic the search for the product's range, which a bounded factor makes the whole proof."""
    _SIDE.extend([product >= lo, product <= hi])


def _assumed_bounds(assume: Sequence[z3.BoolRef]) -> dict[str, tuple[Optional[int], Optional[int]]]:
    """Constant bounds the top-level conjuncts of `assume` state on integer symbols (`x <= 32768`,
    `x >= -32767`, `k1 == 15`, after simplification: a fixed rule constant makes `upper_bounded(x, 1 << c0)`
    one, and the right side's copy of it an equation).
    Only conjuncts are read, so every bound returned holds wherever the assumptions do."""
    out: dict[str, tuple[Optional[int], Optional[int]]] = {}

    def bound(name: str, lo: Optional[int], hi: Optional[int]) -> None:
        olo, ohi = out.get(name, (None, None))
        lo = olo if lo is None else (lo if olo is None else max(lo, olo))
        hi = ohi if hi is None else (hi if ohi is None else min(hi, ohi))
        out[name] = (lo, hi)

    stack = list(assume)
    while stack:
        a = z3.simplify(stack.pop())
        if z3.is_and(a):
            stack.extend(a.children())
            continue
        negated = z3.is_not(a)
        atom = a.children()[0] if negated else a
        if not (z3.is_le(atom) or z3.is_ge(atom) or z3.is_lt(atom) or z3.is_gt(atom) or z3.is_eq(atom)):
            continue
        x, k = atom.children()
        flip = False
        if z3.is_int_value(x) and not z3.is_int_value(k):
            x, k, flip = k, x, True
        if not (z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED and z3.is_int_value(k)):
            continue
        v = k.as_long()
        if z3.is_eq(atom):  # a right-side constant tied to a fixed rule constant (k1 == c0)
            if not negated:
                bound(x.decl().name(), v, v)
            continue
        # the atom as x <= hi or x >= lo; `flip` when the constant was on the left, `negated` for Not
        le = z3.is_le(atom) or z3.is_lt(atom)
        strict = z3.is_lt(atom) or z3.is_gt(atom)
        if flip:
            le = not le
        if negated:  # not (x <= v) is x >= v + 1; not (x < v) is x >= v
            le, strict = not le, not strict
        if le:
            bound(x.decl().name(), None, v - 1 if strict else v)
        else:
            bound(x.decl().name(), v + 1 if strict else v, None)
    return out


def to_int(term: Term, env: Mapping[str, Val]) -> Val:
    memo: dict[int, Val] = {}
    for t in term.walk():
        if t.op == "var":
            memo[id(t)] = env[t.name]
        elif t.op == "const":
            memo[id(t)] = (z3.IntVal(t.value), t.value, t.value)
        else:
            args = [memo[id(a)] for a in t.args]
            s = spec(t.op)
            if s.kind == "primitive":
                memo[id(t)] = _node(t, args)
            else:
                body, names = template(t.op, tuple(a.type for a in t.args), t.type)
                memo[id(t)] = to_int(body, dict(zip(names, args)))
    return memo[id(term)]


def equivalent_int(a: Term, b: Term, rlimit: int = DEFAULT_RLIMIT, assume: Sequence[z3.BoolRef] = (),
                   fixed: Optional[Mapping[str, int]] = None, product_bounds: bool = False) -> Verdict:
    """Prove assume => a == b over the integers; UNKNOWN if an op is not modelled or Z3 gives up.
    `assume` is over integer symbols named like the terms' variables (the rule's predicate in
    pitchfork.trs.predicate.IntDomain); `fixed` gives some variables (rule constants) a value.
    `product_bounds`: narrow each variable's interval by the constant bounds `assume` states and give
    every product its interval as a lemma (_product_lemma), for rules whose predicate bounds a factor
    (a truncating narrow of a product that provably fits)."""
    if a.type != b.type:
        return Verdict("INVALID", reason=f"types differ: {a.type} vs {b.type}")
    verdict = Verdict("UNKNOWN", reason="integer arithmetic")
    for mode in ("linear", "mod"):
        _MODE[0] = mode
        try:
            verdict = _equivalent_int(a, b, max(1000, rlimit // 2), assume, fixed or {}, product_bounds)
        finally:
            _MODE[0] = "mod"
        if verdict.status != "UNKNOWN" or "encoding" in verdict.reason:
            break
    return verdict


def _equivalent_int(a: Term, b: Term, rlimit: int, assume: Sequence[z3.BoolRef] = (),
                    fixed: Mapping[str, int] = {}, product_bounds: bool = False) -> Verdict:
    _DIVMOD.clear()
    _SIDE.clear()
    variables = {v.name: v for v in a.variables() + b.variables()}
    env = {n: (z3.IntVal(fixed[n]), fixed[n], fixed[n]) if n in fixed else (z3.Int(n), v.type.min, v.type.max)
           for n, v in variables.items()}
    if product_bounds:
        for n, (lo, hi) in _assumed_bounds(assume).items():
            if n in env and n not in fixed:
                e, tlo, thi = env[n]
                env[n] = (e, tlo if lo is None else max(tlo, lo), thi if hi is None else min(thi, hi))
    _PRODUCT_LEMMAS[0] = product_bounds
    try:
        za, zb = to_int(a, env)[0], to_int(b, env)[0]
    except Unsupported as e:
        return Verdict("UNKNOWN", reason=f"integer encoding: {e}")
    finally:
        _PRODUCT_LEMMAS[0] = False
    ranges = [c for n, v in variables.items() for c in (env[n][0] >= v.type.min, env[n][0] <= v.type.max)]
    query = [*ranges, *assume, *_SIDE, za != zb]
    # Substituting the definitions first (a rule constant k == c0 * c1, the fixed cases of a split)
    # leaves a polynomial identity the solver proves in a few thousand steps instead of a
    # nonlinear search of half a million; the plain solver gets the rest of the budget.
    s, ctx = isolated_solver(query, rlimit // 4, _PRESOLVE)
    r = s.check()
    if r == z3.unknown:
        s, ctx = isolated_solver(query, rlimit)
        r = s.check()
    if r == z3.unsat:
        return Verdict("VALID", reason="integer arithmetic")
    if r == z3.unknown:
        return Verdict("UNKNOWN", reason=f"integer arithmetic: {unknown_reason(s)}")
    m = s.model()
    cex = {n: m.eval(env[n][0].translate(ctx), model_completion=True).as_long() for n in variables}
    return Verdict("INVALID", cex, lhs_value=m.eval(za.translate(ctx), model_completion=True).as_long(),
                   rhs_value=m.eval(zb.translate(ctx), model_completion=True).as_long())


def _abstract_mul(e: z3.ExprRef, funcs: dict[int, z3.FuncDeclRef], pairs: dict[int, tuple]) -> z3.ExprRef:
    """e with every bit-vector multiplication replaced by the uninterpreted `mul<width>`."""
    seen: set[int] = set()
    order: list[z3.ExprRef] = []
    stack: list[tuple[z3.ExprRef, bool]] = [(e, False)]
    while stack:  # post-order: inner products before the products containing them
        x, done = stack.pop()
        if done:
            order.append(x)
            continue
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        stack.append((x, True))
        if z3.is_app(x):
            stack.extend((c, False) for c in x.children())
    for x in order:
        if x.get_id() in pairs or not (z3.is_app(x) and x.decl().kind() == z3.Z3_OP_BMUL):
            continue
        w = x.size()
        f = funcs.get(w)
        if f is None:
            f = funcs[w] = z3.Function(f"mul{w}", z3.BitVecSort(w), z3.BitVecSort(w), z3.BitVecSort(w))
        subs = [p for p in pairs.values()]
        kids = [z3.substitute(c, *subs) if subs else c for c in x.children()]
        out = kids[0]
        for k in kids[1:]:
            out = f(out, k)
        pairs[x.get_id()] = (x, out)
    subs = list(pairs.values())
    return z3.substitute(e, *subs) if subs else e


def equivalent_uf(a: Term, b: Term, assume: Sequence[z3.BoolRef] = (), rlimit: int = DEFAULT_RLIMIT) -> Verdict:
    """Prove a == b with multiplication uninterpreted (sound: UNSAT here implies UNSAT with bvmul)."""
    if a.type.bits != b.type.bits:
        return Verdict("INVALID", reason=f"types differ: {a.type} vs {b.type}")
    funcs: dict[int, z3.FuncDeclRef] = {}
    pairs: dict[int, tuple] = {}
    za = _abstract_mul(to_z3(a), funcs, pairs)
    zb = _abstract_mul(to_z3(b), funcs, pairs)
    if not pairs:  # nothing to abstract: the query would repeat the bit-vector one
        return Verdict("UNKNOWN", reason="no multiplication to abstract")
    s, _ = isolated_solver([*[_abstract_mul(x, funcs, pairs) for x in assume], za != zb], rlimit)
    r = s.check()
    if r == z3.unsat:
        return Verdict("VALID", reason="multiplication uninterpreted")
    # sat may be spurious (the abstraction allows any product): never report it as INVALID
    return Verdict("UNKNOWN", reason="uninterpreted multiplication: " + (
        "not provable this way" if r == z3.sat else unknown_reason(s)))


def multiplies(t: Term) -> bool:
    """Some node of t multiplies two operands (a primitive or FPIR product, or a target instruction
    whose meaning does: its declared cost alone cannot say, so its name is asked). The search and the
    rediscovery judges try the fallbacks only between two such terms (bit-blasting two differently
    built multipliers is what runs out; anything else is left to the bit-vector verdict)."""
    return any(x.args and ("mul" in x.op or "mpy" in x.op or "dot" in x.op or "madd" in x.op) for x in t.walk())


def fallback(a: Term, b: Term, assume: Sequence[z3.BoolRef], rlimit: int,
             int_assume: Optional[Sequence[z3.BoolRef]] = None) -> Optional[Verdict]:
    """A decisive verdict from the fallbacks, or None. `int_assume` is `assume` over integers (the
    rule's predicate and constant definitions, synth.verify._int_assumptions), which lets the integer
    proof run under a predicate: a 32-bit product of rule constants (`c0 * c1` fits T) is a 160-bit
    multiplier for bit-blasting but one nonlinear term for integer arithmetic. A counterexample found
    under such assumptions is not reported (the direct bit-vector query decides), only a proof."""
    v = equivalent_uf(a, b, assume, rlimit)
    if v.status == "VALID":
        return v
    if all(z3.is_true(z3.simplify(x)) for x in assume):
        v = equivalent_int(a, b, rlimit)
        if v.status != "UNKNOWN":
            return v
    elif int_assume is not None:
        v = equivalent_int(a, b, rlimit, int_assume)
        if v.status == "VALID":
            return v
    return None
