"""Generalizing a synthesized pair (left term, right term) into a rule (paper section 4.3).

Every attempt is a rule text that `synth.verify.verify_rule` must prove VALID at every type instance
it can match before it is accepted; the most general VALID attempt wins, and a pair whose every
attempt fails is rejected (nothing unverified is ever returned).

1. Constants: every constant of the left side becomes a typed constant wildcard (`c0_u8`); a
   right-side constant equal to one becomes that wildcard (`c0`), or a relation to it: `log2(c0)`
   (with `is_pow2(c0)`), `1 << c0` (the `c1 == 2**c0` relation), `c0 - 1`, `c0 + 1`, `0 - c0`. Tried first with
   no predicate on the constants; if that fails, each constant's range of validity is found by binary
   search over its type (values on each side of the observed one) and written as a predicate; if that
   fails too, constants are pinned to their observed values (`c0 == 6`).
2. Types: every concrete type becomes a type variable; the type of the first variable is `T` and every
   other type is stated relative to it (`A == signed(wide(T))`), constant bounds that equal a type's
   `bits`, `bits - 1`, `tmax` or `tmin` are written that way. Tried polymorphic in width and sign,
   then with T's signedness fixed; else the monomorphic rule stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping, Optional

from fpir.opspec import spec
from fpir.term import Term
from fpir.types import ScalarType
from pitchfork.trs.rules import RuleFileError, parse_rule
from synth.verify import verify_rule

_PREC = {
    "or": 3,
    "xor": 4,
    "and": 5,
    "eq": 6,
    "ne": 6,
    "lt": 7,
    "le": 7,
    "gt": 7,
    "ge": 7,
    "shl": 8,
    "shr": 8,
    "add": 9,
    "sub": 9,
    "mul": 10,
    "div": 10,
    "mod": 10,
}
ATOM = 12
VERIFY_RLIMIT = 40_000_000  # Z3 resource units per query (synth.verify), not milliseconds
MAX_SEARCH_BITS = 32
#: a range search's probes: at most this many queries per constant, each under this rlimit (counts,
#: not clocks). A probe that fails or runs out only narrows the range; the rule with the ranges found
#: is verified again at VERIFY_RLIMIT before it is accepted
MAX_RANGE_QUERIES = 40
RANGE_RLIMIT = 10_000_000


@dataclass(frozen=True)
class Generalized:
    text: str  # "lhs -> rhs [if pred]" without a name
    level: str  # "polymorphic" | "signed-fixed" | "monomorphic"
    constants: str  # "symbolic" | "ranged" | "pinned" | "none"
    instances: int
    verdict: str


# ---------------------------------------------------------------------------------------------
# Printing rule sides


def side_text(t: Term, const_text: Callable[[Term, Optional[ScalarType]], str],
              alternates: Optional[Mapping[Term, Term]] = None) -> str:
    """Rule-side text: casts and typed ops as `op<t>(...)`, constants through `const_text(term,
    hinted type)`, infix operators where FPIR text has them. A sub-term with an entry in
    `alternates` is written `either(sub-term, its alternate)` (synth/alternates.py)."""
    return _fmt(t, const_text, alternates or {})[0]


def _fmt(t: Term, ct: Callable[[Term, Optional[ScalarType]], str],
         alts: Mapping[Term, Term] = MappingProxyType({})) -> tuple[str, int]:
    if t in alts:
        return f"either({_fmt(t, ct)[0]}, {_fmt(alts[t], ct)[0]})", ATOM
    if t.is_var:
        return f"{t.name}_{t.type.name}", ATOM
    if t.is_const:
        return ct(t, None), ATOM
    s = spec(t.op)
    known = [None if a.is_const else a.type for a in t.args]
    parts: list[tuple[str, int]] = []
    for i, a in enumerate(t.args):
        if a.is_const:
            hint = s.arg_hint(i, known, t.type if s.explicit_type else None) if s.arg_hint else None
            text = ct(a, hint)
            parts.append((text, ATOM if re.fullmatch(r"[A-Za-z0-9_]+", text) else 0))
        else:
            parts.append(_fmt(a, ct, alts))
    if t.op in _PREC:
        prec = _PREC[t.op]
        (lt, lp), (rt, rp) = parts
        return f"{lt if lp >= prec else f'({lt})'} {s.symbol} {rt if rp > prec else f'({rt})'}", prec
    if t.op == "not":
        return f"~({parts[0][0]})", ATOM
    inner = ", ".join(p[0] for p in parts)
    if s.explicit_type:
        return f"{t.op}<{t.type.name}>({inner})", ATOM
    return f"{t.op}({inner})", ATOM


# ---------------------------------------------------------------------------------------------
# Constants


def _lhs_constants(lhs: Term) -> list[Term]:
    out: list[Term] = []

    def visit(t: Term) -> None:
        if t.is_const and t not in out:
            out.append(t)
        for a in t.args:
            visit(a)

    visit(lhs)
    return out


def _rhs_const(value: int, consts: list[Term]) -> tuple[str, list[str]]:
    """Text for a right-side constant and the predicates the relation needs."""
    for i, c in enumerate(consts):
        if c.value == value:
            return f"c{i}", []
    for i, c in enumerate(consts):
        v = c.value
        if v > 0 and v & (v - 1) == 0 and v.bit_length() - 1 == value:
            return f"log2(c{i})", [f"is_pow2(c{i})"]
        if 0 <= v < 64 and value == 1 << v:
            return f"1 << c{i}", []
        if value == v - 1:
            return f"c{i} - 1", []
        if value == v + 1:
            return f"c{i} + 1", []
        if value == -v and v != 0:
            return f"0 - c{i}", []
    return str(value), []


def _texts(lhs: Term, rhs: Term, alternates: Optional[Mapping[Term, Term]] = None
           ) -> tuple[str, str, list[str], list[Term]]:
    consts = _lhs_constants(lhs)
    names = {c: f"c{i}_{c.type.name}" for i, c in enumerate(consts)}
    preds: list[str] = []

    def lct(t: Term, hint: Optional[ScalarType]) -> str:
        return names[t]

    def rct(t: Term, hint: Optional[ScalarType]) -> str:
        text, ps = _rhs_const(t.value, consts)
        m = re.fullmatch(r"c(\d+)", text)
        if m and consts[int(m.group(1))].type != t.type:
            # The constant is re-typed on the right: state the range where it fits (the rule cannot
            # fire outside it anyway; the predicate makes that explicit and lets types generalize it).
            lo, hi = max(t.type.min, consts[int(m.group(1))].type.min), min(
                t.type.max, consts[int(m.group(1))].type.max
            )
            ps = ps + [f"{text} >= {lo}", f"{text} <= {hi}"]
        preds.extend(p for p in ps if p not in preds)
        if hint != t.type:
            return (
                f"cast<{t.type.name}>({text})" if hint is not None or not text.lstrip("-").isdigit() else text
            )
        return text

    lt = side_text(lhs, lct, alternates)
    rt = side_text(rhs, rct)
    return lt, rt, preds, consts


def _verify(text: str, rlimit: int = VERIFY_RLIMIT) -> tuple[bool, int, str]:
    try:
        rule = parse_rule("g: " + text)
    except RuleFileError as e:
        return False, 0, f"parse: {e.message}"
    res = verify_rule(rule, rlimit)
    return res.status == "VALID", len(res.instances), res.summary()


def _join(lhs: str, rhs: str, preds: list[str]) -> str:
    return f"{lhs} -> {rhs}" + (f" if {' && '.join(preds)}" if preds else "")


def _range(
    lhs: str, rhs: str, preds: list[str], i: int, c: Term, pinned: list[str]
) -> Optional[tuple[int, int]]:
    """The widest [lo, hi] around c's value for which the rule verifies (others pinned), by
    exponential then binary search on each side (assumes validity is an interval, which the final
    check confirms): the whole side first, then steps 1, 2, 4, ... away from the value until one
    fails, then bisection between the last good and the first bad bound. A constant valid on a
    whole side costs one query for it, one valid at its value alone two, instead of a bisection over
    its type (each query a Z3 proof, some of products). At most MAX_RANGE_QUERIES queries
    (RANGE_RLIMIT each): past that the range found so far is kept."""
    t, v = c.type, c.value
    if t.bits > MAX_SEARCH_BITS:
        return None
    name = f"c{i}"
    queries = 0

    def ok(lo: int, hi: int) -> bool:
        nonlocal queries
        queries += 1
        if queries > MAX_RANGE_QUERIES:
            return False  # out of queries: the range stays as verified so far
        text = _join(lhs, rhs, preds + pinned + [f"{name} >= {lo}", f"{name} <= {hi}"])
        return _verify(text, RANGE_RLIMIT)[0]

    if not ok(v, v):
        return None
    lo_good, lo_bad = v, t.min - 1  # ok(lo_good, v) holds; find the smallest lo
    step = 1
    if v > t.min and ok(t.min, v):  # the whole side at once (the verifier's easiest case)
        lo_good = lo_bad + 1
    while lo_good - lo_bad > 1 and v - step > lo_bad:
        if not ok(v - step, v):
            lo_bad = v - step
            break
        lo_good, step = v - step, 2 * step
    while lo_good - lo_bad > 1:
        mid = (lo_good + lo_bad) // 2
        if ok(mid, v):
            lo_good = mid
        else:
            lo_bad = mid
    hi_good, hi_bad = v, t.max + 1
    step = 1
    if v < t.max and ok(v, t.max):
        hi_good = hi_bad - 1
    while hi_bad - hi_good > 1 and v + step < hi_bad:
        if not ok(v, v + step):
            hi_bad = v + step
            break
        hi_good, step = v + step, 2 * step
    while hi_bad - hi_good > 1:
        mid = (hi_good + hi_bad) // 2
        if ok(v, mid):
            hi_good = mid
        else:
            hi_bad = mid
    return lo_good, hi_good


def _bound_preds(name: str, t: ScalarType, lo: int, hi: int) -> list[str]:
    if lo == hi:
        return [f"{name} == {lo}"]
    out = []
    if lo > t.min:
        out.append(f"{name} >= {lo}")
    if hi < t.max:
        out.append(f"{name} <= {hi}")
    return out


def constant_relations(consts: list[Term]) -> list[tuple[int, str]]:
    """(dependent constant, predicate) for the relations that hold between the left side's
    constants: c_i == c_j + 1 and c_i == c_j - 1, c_i == 1 << (c_j - 1) (a rounding term beside
    its shift, `(x + 8) >> 4`), c_i == 1 << c_j. At most one relation per dependent constant."""
    out: list[tuple[int, str]] = []
    for i, a in enumerate(consts):
        for j, b in enumerate(consts):
            if i == j or any(k == i for k, _ in out) or any(k == j for k, _ in out):
                continue
            v, w = a.value, b.value
            if 1 <= w < 64 and v == 1 << (w - 1) and v > 1:
                out.append((i, f"c{i} == 1 << (c{j} - 1)"))
            elif 0 <= w < 64 and v == 1 << w and v > 2:
                out.append((i, f"c{i} == 1 << c{j}"))
            elif i > j and v == w + 1:
                out.append((i, f"c{i} == c{j} + 1"))
            elif i > j and v == w - 1:
                out.append((i, f"c{i} == c{j} - 1"))
    return out


_BOUND = re.compile(r"^(c\d+) (>=|<=|==) (-?\d+)$")


def simplify_predicates(preds: list[str]) -> list[str]:
    """The same conjunction with bounds on one constant merged: `c1 >= 0 && c1 <= 32767 && c1 <= 8`
    is `c1 >= 0 && c1 <= 8`, a bound an equality implies is dropped, duplicates go. Only `cN op k`
    conjuncts are merged (the rest are kept as written), so the result is equivalent."""
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    eq: dict[str, int] = {}
    rest: list[str] = []
    order: list[str] = []
    for p in preds:
        m = _BOUND.match(p.strip())
        if m is None:
            if p not in rest:
                rest.append(p)
            continue
        name, op, k = m.group(1), m.group(2), int(m.group(3))
        if name not in order:
            order.append(name)
        if op == ">=":
            lo[name] = max(lo.get(name, k), k)
        elif op == "<=":
            hi[name] = min(hi.get(name, k), k)
        elif name in eq and eq[name] != k:
            return preds  # contradictory: left as it is (the verifier reports it)
        else:
            eq[name] = k
    out: list[str] = []
    for name in order:
        if name in eq:
            out.append(f"{name} == {eq[name]}")
            if lo.get(name, eq[name]) > eq[name] or hi.get(name, eq[name]) < eq[name]:
                return preds
            continue
        if name in lo and name in hi and lo[name] == hi[name]:
            out.append(f"{name} == {lo[name]}")
            continue
        if name in lo:
            out.append(f"{name} >= {lo[name]}")
        if name in hi:
            out.append(f"{name} <= {hi[name]}")
    return rest + out


def _related(lt: str, rt: str, rel: list[str], consts: list[Term], pins: list[str]) -> Optional[list[str]]:
    """Predicates tying constants by their relations (`constant_relations`), the other constants
    free or in the widest range that verifies; None if no such attempt verifies."""
    rels = constant_relations(consts)
    if not rels:
        return None
    tied = [p for _, p in rels]
    if _verify(_join(lt, rt, rel + tied))[0]:
        return tied
    dependent = {i for i, _ in rels}
    ranges: list[str] = []
    for i, c in enumerate(consts):
        if i in dependent:
            continue
        others = [p for j, p in enumerate(pins) if j != i and j not in dependent]
        r = _range(lt, rt, rel + tied, i, c, others)
        if r is None:
            return None
        ranges.extend(_bound_preds(f"c{i}", c.type, *r))
    if ranges and _verify(_join(lt, rt, rel + tied + ranges))[0]:
        return tied + ranges
    return None


def generalize_constants(
    lhs: Term, rhs: Term, assume: tuple[str, ...] = (), alternates: Optional[Mapping[Term, Term]] = None
) -> Optional[tuple[str, str, list[str], str]]:
    """(lhs text, rhs text, predicates, how) of the most general VALID constant treatment, or None.
    `assume`: predicates every attempt carries (bounds under which lhs == rhs); `alternates`: left-side
    sub-terms also matched in another form (`side_text`)."""
    lt, rt, rel, consts = _texts(lhs, rhs, alternates)
    rel = list(assume) + [p for p in rel if p not in assume]
    if not consts:
        return (lt, rt, rel, "none") if _verify(_join(lt, rt, rel))[0] else None
    if _verify(_join(lt, rt, rel))[0]:
        return lt, rt, rel, "symbolic"
    pins = [f"c{i} == {c.value}" for i, c in enumerate(consts)]
    related = _related(lt, rt, rel, consts, pins)
    if related is not None:
        return lt, rt, rel + related, "related"
    ranged: list[str] = []
    for i, c in enumerate(consts):
        others = [p for j, p in enumerate(pins) if j != i]
        r = _range(lt, rt, rel, i, c, others)
        if r is None:
            ranged.append(pins[i])
        else:
            ranged.extend(_bound_preds(f"c{i}", c.type, *r))
    if ranged != pins and _verify(_join(lt, rt, rel + ranged))[0]:
        return lt, rt, rel + ranged, "ranged"
    if _verify(_join(lt, rt, rel + pins))[0]:
        return lt, rt, rel + pins, "pinned"
    return None


# ---------------------------------------------------------------------------------------------
# Types

_TYPE_TOKEN = re.compile(
    r"(?<=_)([ui](?:8|16|32|64|1))\b|(?<=<)([ui](?:8|16|32|64|1))(?=>)|(?<=, )([ui](?:8|16|32|64|1))(?=\))"
)


def _relation(u: ScalarType, base: ScalarType, tname: str) -> Optional[str]:
    expr = tname
    ratio = u.bits / base.bits
    steps = {0.5: ["narrow"], 1: [], 2: ["wide"], 4: ["wide", "wide"], 8: ["wide", "wide", "wide"]}.get(ratio)
    if steps is None:
        return None
    for s in steps:
        expr = f"{s}({expr})"
    if u.signed != base.signed:
        expr = f"{'signed' if u.signed else 'unsigned'}({expr})"
    return expr


def generalize_types(
    text_lhs: str, text_rhs: str, preds: list[str], first_var: ScalarType
) -> list[tuple[str, str]]:
    """Type-generalized attempts, most general first: (rule text, level)."""
    types: list[ScalarType] = []
    for m in _TYPE_TOKEN.finditer(" ".join([text_lhs, text_rhs, *preds])):
        name = m.group(1) or m.group(2) or m.group(3)
        from fpir.types import parse_type

        t = parse_type(name)
        if t not in types:
            types.append(t)
    if not types or any(t.bits == 1 for t in types):
        return []
    base = first_var
    var_names = iter("ABCDEFGHJKLMNPQRSUVWXYZ")
    names: dict[ScalarType, str] = {base: "T"}
    rels: list[str] = []
    for t in types:
        if t in names:
            continue
        rel = _relation(t, base, "T")
        if rel is None:
            return []
        n = next(var_names)
        names[t] = n
        rels.append(f"{n} == {rel}")

    def sub(text: str) -> str:
        return _TYPE_TOKEN.sub(
            lambda m: names[
                __import__("fpir.types", fromlist=["parse_type"]).parse_type(m.group(1) or m.group(2) or m.group(3))
            ],
            text,
        )

    # constant bounds stated through the types
    sym_preds = []
    for p in preds:
        m = re.fullmatch(r"(c\d+) (>=|<=|==) (-?\d+)", p)
        if m and int(m.group(3)) not in (-1, 0, 1):
            b = int(m.group(3))
            for t, n in names.items():
                cands = {
                    t.bits: f"bits({n})",
                    t.bits - 1: f"bits({n}) - 1",
                    t.max: f"tmax({n})",
                    t.min: f"tmin({n})",
                }
                if b in cands:
                    p = f"{m.group(1)} {m.group(2)} {cands[b]}"
                    break
        sym_preds.append(sub(p))
    lhs_g, rhs_g = sub(text_lhs), sub(text_rhs)
    sign = f"is_{'signed' if base.signed else 'unsigned'}(T)"
    # Capped at the observed width or 16 bits: 32- and 64-bit instances of multiplier identities can
    # exceed the solver's resource limit (UNKNOWN is not VALID), narrower ones are what DSP code uses.
    cap = f"bits(T) <= {max(16, base.bits)}"
    return [
        (_join(lhs_g, rhs_g, rels + sym_preds), "polymorphic"),
        (_join(lhs_g, rhs_g, rels + sym_preds + [sign]), "signed-fixed"),
        (_join(lhs_g, rhs_g, rels + sym_preds + [sign, cap]), "width-capped"),
    ]


def generalize(
    lhs: Term, rhs: Term, try_types: bool = True, assume: tuple[str, ...] = (),
    alternates: Optional[Mapping[Term, Term]] = None,
) -> Optional[Generalized]:
    """The most general verified rule for lhs == rhs (under the `assume` predicates, e.g. `fits(v0_u16,
    u8)` for a narrowing that bounds prove does not saturate), or None (see module doc). With
    `alternates`, the left side also matches those sub-terms' other forms (every alternative is
    verified, `verify_rule` checks each)."""
    cg = generalize_constants(lhs, rhs, assume, alternates)
    if cg is None:
        return None
    lt, rt, preds, how = cg
    preds = simplify_predicates(preds)
    vars_ = [t for t in _preorder(lhs) if t.is_var]
    if try_types and vars_:
        for text, level in generalize_types(lt, rt, preds, vars_[0].type):
            ok, n, summary = _verify(text)
            if ok:
                return Generalized(text, level, how, n, summary)
    text = _join(lt, rt, preds)
    ok, n, summary = _verify(text)
    return Generalized(text, "monomorphic", how, n, summary) if ok else None


def _preorder(t: Term) -> list[Term]:
    out = [t]
    for a in t.args:
        out.extend(_preorder(a))
    return out
