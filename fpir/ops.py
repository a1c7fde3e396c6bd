"""The op table: the single source of truth for every FPIR operation.

Each op is one `OpSpec` row: name, arity, type rule, and semantics. There are three kinds:

* ``primitive``: Halide's integer ops (cast, +, <<, select, ...). Each row carries its exact numpy
  semantics, its Z3 bit-vector semantics and its interval (bounds) rule. These are the only places
  where semantics are written in Python.
* ``fpir``: the fixed-point instructions of the paper's Table 1 (plus saturating_shl, section 8.4).
  Each row's semantics is a *definition*: a function building a term out of primitive (or earlier
  FPIR) ops, exactly like Table 1. The interpreter, the Z3 encoding and the bounds analysis expand
  it, so the three can never disagree about what an FPIR op means.
* ``target``: machine instructions registered by `pitchfork.targets`; also defined as terms.

Flags (`fpir.flags.FlagSpec`; `FLAGS` lists them): a fact an op node may carry, like LLVM's `nsw`. `add`, `sub` and `mul`
accept `nsw` on signed types: "the exact result fits the type", Halide's rule that signed 32-bit and
wider arithmetic never overflows. A flag never changes the value an op computes (the interpreter and
emitted code wrap as always, and wrapping is a valid implementation); it restricts the inputs the term
is meant for. Each flag's row gives its numpy and Z3 tests of the fact and the interval the op has under
it, so the verifier (rules that need the fact prove `facts => before == after`), the differential
tests (inputs respecting the fact) and bounds (no wrap-around) derive from this table. Text syntax:
`add.nsw(a, b)`; a pattern `add.nsw(...)` matches only nodes carrying the flag, a plain `a + b`
pattern matches either.

Invariants kept here: `make` is the only way to build a non-leaf term; it type-checks (raising
FPIRTypeError with a message naming the op and the operand types) and folds ops whose arguments are
all constants, so a term never contains a constant-only sub-term.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from fpir.lazy import numpy as np
from fpir.lazy import z3

from fpir import primitives as pr
from fpir import typerules as tr
from fpir.flags import (INRANGE, FlagSpec, NSW_ADD, NSW_HALVING_ADD, NSW_HALVING_SUB, NSW_MUL,
                        NSW_ROUNDING_HALVING_ADD, NSW_ROUNDING_SHR, NSW_SHL, NSW_SUB, halide_overflow_flags)
from fpir.opspec import DOCUMENTED_FACTORS, OPS, REDUCE_COMBINE, OpSpec, register, register_reduce, spec
from fpir.primitives import Interval
from fpir.term import Term, const, intern, var
from fpir.typerules import ArgHint, TypeRule
from fpir.types import FPIRTypeError, ScalarType


# ---------------------------------------------------------------------------------------------
# Term construction


def make(op: str, *args: Term, type: Optional[ScalarType] = None, fold: bool = True,
         flags: Sequence[str] = ()) -> Term:
    """Build a type-checked term; constant-only applications are folded to a constant (a flag's fact
    is then moot: the folded value is the wrapped one, which is what the op computes)."""
    s = OPS.get(op) or spec(op)  # (spec() for what the table lacks: it registers reductions, or raises)
    if len(args) != s.arity:
        raise FPIRTypeError(f"{op} takes {s.arity} arguments, got {len(args)}")
    for a in args:
        if not isinstance(a, Term):
            raise FPIRTypeError(f"{op}: argument {a!r} is not a Term")
    rt = s.type_rule([a.type for a in args], type)
    if s.explicit_type and type is not None:
        rt = type
    # Identity casts/reinterprets vanish so that every term has one canonical spelling.
    if op in ("cast", "reinterpret", "saturating_cast") and args[0].type == rt:
        return args[0]
    attrs = check_flags(op, rt, flags) if flags else ()
    if fold and args:
        for a in args:  # (a loop, not all(<generator>): make runs for every node built)
            if a.op != "const":
                break
        else:
            return _fold(s, rt, args)
    return intern(op, rt, args, attrs)


def _fold(s: OpSpec, rt: ScalarType, args: Sequence[Term]) -> Term:
    """The constant `s.name(args)` computes, all args constants, with the interpreter's semantics
    (fpir.interp evaluates the same rows): a primitive through its numpy row; a lane-combining op of a
    constant (a broadcast) as the left fold of its combining op over f copies; an FPIR or target op
    through its definition, rebuilt on the constants, which folds it bottom-up to primitives."""
    if s.reduce is not None:
        combine, f = s.reduce
        acc = args[0]
        for _ in range(f - 1):
            acc = make(combine, acc, args[0])
        return acc
    if s.np_impl is not None:
        vals = [np.asarray(a.value, dtype=a.type.np_dtype) if a.type.bits <= 64 else np.asarray(a.value, dtype=object)
                for a in args]
        v = s.np_impl(vals, [a.type for a in args], rt)
        return const(int(np.asarray(v).item()), rt)
    body, names = template(s.name, tuple(a.type for a in args), rt)
    env = dict(zip(names, args))
    memo: dict[int, Term] = {}
    for t in body.walk():
        if t.op == "var":
            memo[id(t)] = env.get(t.name, t)
        elif not t.args:
            memo[id(t)] = t
        else:
            memo[id(t)] = make(t.op, *[memo[id(a)] for a in t.args],
                               type=t.type if spec(t.op).explicit_type else None, flags=flags_of(t))
    return memo[id(body)]


#: `check_flags`'s answers by (op, signedness, bits, flags): `make` asks for every flagged node it builds
#: (each `nsw` add of a compile's index arithmetic), always about the same few ops and types
_CHECKED_FLAGS: dict[tuple[str, bool, int, tuple[str, ...]], tuple[str, ...]] = {}


def check_flags(op: str, rt: ScalarType, flags: Sequence[str]) -> tuple[str, ...]:
    """The canonical (sorted, distinct) flag tuple for a node of `op` at result type rt, or
    FPIRTypeError naming the flag the op does not take at that type (an error is never cached)."""
    key = (op, rt.signed, rt.bits, tuple(flags))
    out = _CHECKED_FLAGS.get(key)
    if out is None:
        out = _CHECKED_FLAGS[key] = _check_flags(op, rt, flags)
    return out


def _check_flags(op: str, rt: ScalarType, flags: Sequence[str]) -> tuple[str, ...]:
    s = spec(op)
    for f in flags:
        fs = s.flags.get(f)
        if fs is None:
            raise FPIRTypeError(f"{op} takes no flag {f!r}" + (f" (it takes: {', '.join(sorted(s.flags))})"
                                                                  if s.flags else ""))
        if not fs.applies_to(rt):
            raise FPIRTypeError(f"{op}.{f}: the {f} flag applies to signed integers, not {rt}")
    return tuple(sorted(set(flags)))


def flags_of(t: Term) -> tuple[str, ...]:
    """The flags a non-leaf term carries (its attrs; leaves use attrs for their name/value)."""
    return t.attrs if t.args else ()


def expansion(t: Term) -> Term:
    """One-level expansion of an FPIR/target op into the ops its definition uses."""
    s = spec(t.op)
    if s.definition is None:
        raise ValueError(f"{t.op} is primitive")
    return s.definition(t.args, t.type)


_TEMPLATES: dict[tuple, tuple[Term, tuple[str, ...]]] = {}


def template(op: str, arg_types: tuple[ScalarType, ...], rtype: ScalarType) -> tuple[Term, tuple[str, ...]]:
    """The definition of `op` over placeholder variables `$0..$k` (cached per type instance)."""
    key = (op, arg_types, rtype)
    hit = _TEMPLATES.get(key)
    if hit is None:
        names = tuple(f"${i}" for i in range(len(arg_types)))
        params = [var(n, ty) for n, ty in zip(names, arg_types)]
        hit = (spec(op).definition(params, rtype), names)  # type: ignore[misc]
        _TEMPLATES[key] = hit
    return hit


# ---------------------------------------------------------------------------------------------
# Primitive ops (Halide's integer IR)


def _prim(name: str, arity: int, rule: TypeRule, doc: str, np_fn: Callable[..., Any], z3_fn: Callable[..., Any],
          iv: Callable[..., Interval], symbol: Optional[str] = None, hint: ArgHint = tr.hint_same,
          explicit_type: bool = False, flags: Sequence[FlagSpec] = ()) -> None:
    limit = 16 if name in ("mul", "shl", "shr") else 32
    register(OpSpec(name, arity, "primitive", rule, doc, np_impl=pr.np_lift(np_fn, limit), z3_impl=z3_fn, interval=iv,
                    symbol=symbol, arg_hint=hint, explicit_type=explicit_type, flags={f.name: f for f in flags}))


def _bin_z3(f: Callable[[z3.BitVecRef, z3.BitVecRef], z3.BitVecRef]) -> Callable[..., z3.BitVecRef]:
    return lambda args, ts, rt: f(args[0], args[1])


_prim("cast", 1, tr.cast_rule("cast"), "Convert to type t, wrapping (casts to u1 test != 0).",
      pr.np_cast, lambda a, ts, rt: pr.z3_cast(a[0], ts[0], rt), pr.iv_cast, hint=tr.hint_cast, explicit_type=True)
_prim("reinterpret", 1, tr.cast_rule("reinterpret", same_bits=True),
      "Same bits, read as type t.", pr.np_reinterpret, lambda a, ts, rt: a[0], pr.iv_cast, hint=tr.hint_cast,
      explicit_type=True)
_prim("add", 2, tr.same_int("add"), "a + b, wrapping.", lambda a, b, **_: a + b, _bin_z3(lambda a, b: a + b),
      pr.corners(lambda x, y: x + y), symbol="+", flags=(NSW_ADD,))
_prim("sub", 2, tr.same_int("sub"), "a - b, wrapping.", lambda a, b, **_: a - b, _bin_z3(lambda a, b: a - b),
      pr.corners(lambda x, y: x - y), symbol="-", flags=(NSW_SUB,))
_prim("mul", 2, tr.same_int("mul"), "a * b, wrapping.", lambda a, b, **_: a * b, _bin_z3(lambda a, b: a * b),
      pr.corners(lambda x, y: x * y), symbol="*", flags=(NSW_MUL,))
_prim("div", 2, tr.same_int("div"), "Euclidean division (remainder never negative); x / 0 = 0.",
      pr.np_div, lambda a, ts, rt: pr.z3_div(a[0], a[1], ts, rt), pr.iv_div, symbol="/")
_prim("mod", 2, tr.same_int("mod"), "Euclidean modulo (never negative); x % 0 = 0.",
      pr.np_mod, lambda a, ts, rt: pr.z3_mod(a[0], a[1], ts, rt), pr.iv_mod, symbol="%")
_prim("min", 2, tr.same_type("min"), "Minimum.", lambda a, b, **_: np.minimum(a, b),
      lambda a, ts, rt: z3.If(pr.z3_le(a[0], a[1], rt), a[0], a[1]), pr.iv_minmax(min))
_prim("max", 2, tr.same_type("max"), "Maximum.", lambda a, b, **_: np.maximum(a, b),
      lambda a, ts, rt: z3.If(pr.z3_le(a[0], a[1], rt), a[1], a[0]), pr.iv_minmax(max))
for _n, _sym, _npf, _z3f in [
    ("eq", "==", lambda a, b: a == b, lambda a, b, t: a == b),
    ("ne", "!=", lambda a, b: a != b, lambda a, b, t: a != b),
    ("lt", "<", lambda a, b: a < b, lambda a, b, t: pr.z3_lt(a, b, t)),
    ("le", "<=", lambda a, b: a <= b, lambda a, b, t: pr.z3_le(a, b, t)),
    ("gt", ">", lambda a, b: a > b, lambda a, b, t: pr.z3_lt(b, a, t)),
    ("ge", ">=", lambda a, b: a >= b, lambda a, b, t: pr.z3_le(b, a, t)),
]:
    _prim(_n, 2, tr.cmp_rule(_n), f"Comparison a {_sym} b, giving u1.",
          (lambda f: lambda a, b, **_: f(a, b).astype(np.int64))(_npf),
          (lambda f: lambda a, ts, rt: pr.z3_bool(f(a[0], a[1], ts[0])))(_z3f), pr.iv_bool, symbol=_sym, hint=tr.hint_cmp)
_prim("select", 3, tr.select_rule, "select(c, a, b): a where c is true, else b.",
      lambda c, a, b, **_: np.where(c != 0, a, b), lambda a, ts, rt: z3.If(a[0] == 1, a[1], a[2]), pr.iv_select,
      hint=tr.hint_select)
_prim("and", 2, tr.same_type("and"), "Bitwise and.", lambda a, b, **_: a & b, _bin_z3(lambda a, b: a & b),
      pr.iv_bitwise("and"), symbol="&")
_prim("or", 2, tr.same_type("or"), "Bitwise or.", lambda a, b, **_: a | b, _bin_z3(lambda a, b: a | b),
      pr.iv_bitwise("or"), symbol="|")
_prim("xor", 2, tr.same_type("xor"), "Bitwise xor.", lambda a, b, **_: a ^ b, _bin_z3(lambda a, b: a ^ b),
      pr.iv_bitwise("xor"), symbol="^")
_prim("not", 1, tr.same_type("not"), "Bitwise complement.", pr.np_not, lambda a, ts, rt: ~a[0], pr.iv_not, symbol="~")
_prim("shl", 2, tr.shift_rule("shl"),
      "a << b. A negative (signed) b shifts right instead; amounts >= bits give 0.",
      pr.np_shl, lambda a, ts, rt: pr.z3_shift(a[0], a[1], ts, True), pr.iv_shl, symbol="<<", hint=tr.hint_shift,
      flags=(INRANGE, NSW_SHL))
_prim("shr", 2, tr.shift_rule("shr"),
      "a >> b (arithmetic for signed a, floor). A negative (signed) b shifts left instead; amounts >= bits "
      "give 0 or -1.", pr.np_shr, lambda a, ts, rt: pr.z3_shift(a[0], a[1], ts, False), pr.iv_shr, symbol=">>",
      hint=tr.hint_shift, flags=(INRANGE,))
_prim("abs", 1, tr.unsigned_of("abs"), "Absolute value; the result is unsigned, so abs(INT_MIN) is exact.",
      pr.np_abs, lambda a, ts, rt: z3.If(a[0] < 0, -a[0], a[0]) if ts[0].signed else a[0], pr.iv_abs)


# ---------------------------------------------------------------------------------------------
# FPIR ops: definitions in terms of the ops above (Table 1 of the paper, made exact at every width).


def C(value: int, t: ScalarType) -> Term:
    return const(t.wrap(value), t)


def _fpir(name: str, arity: int, rule: TypeRule, doc: str, definition: Callable[[Sequence[Term], ScalarType], Term],
          hint: ArgHint = tr.hint_same, interval: Optional[Callable[..., Interval]] = None,
          explicit_type: bool = False, flags: Sequence[FlagSpec] = ()) -> None:
    register(OpSpec(name, arity, "fpir", rule, doc, definition=definition, arg_hint=hint, interval=interval,
                    explicit_type=explicit_type, flags={f.name: f for f in flags}))


def _wide(x: Term, t: ScalarType) -> Term:
    return make("cast", x, type=t)


def _def_widening_add(a: Sequence[Term], rt: ScalarType) -> Term:
    return make("add", _wide(a[0], rt), _wide(a[1], rt))


def _def_widening_sub(a: Sequence[Term], rt: ScalarType) -> Term:
    return make("sub", _wide(a[0], rt), _wide(a[1], rt))


def _def_widening_mul(a: Sequence[Term], rt: ScalarType) -> Term:
    return make("mul", _wide(a[0], rt), _wide(a[1], rt))


def _def_extending(op: str) -> Callable[[Sequence[Term], ScalarType], Term]:
    return lambda a, rt: make(op, a[0], _wide(a[1], rt))


def _def_widening_shift(op: str) -> Callable[[Sequence[Term], ScalarType], Term]:
    def d(a: Sequence[Term], rt: ScalarType) -> Term:
        amount = _wide(a[1], a[1].type.widen())
        return make(op, _wide(a[0], rt), amount)

    return d


def _def_absd(a: Sequence[Term], rt: ScalarType) -> Term:
    x, y = a
    diff = make("select", make("gt", x, y), make("sub", x, y), make("sub", y, x))
    return make("reinterpret", diff, type=rt)


def sat_cast(x: Term, t: ScalarType) -> Term:
    """saturating_cast<t>(x) as primitives: clamp in a signed type holding both ranges, then cast."""
    s = x.type
    work = ScalarType(True, min(256, 2 * max(s.bits, t.bits)))
    v = _wide(x, work)
    if t.min > s.min:
        v = make("max", v, C(t.min, work))
    if t.max < s.max:
        v = make("min", v, C(t.max, work))
    return make("cast", v, type=t)


def _def_sat_cast(a: Sequence[Term], rt: ScalarType) -> Term:
    return sat_cast(a[0], rt)


def _def_saturating(inner: str) -> Callable[[Sequence[Term], ScalarType], Term]:
    return lambda a, rt: make("saturating_cast", make(inner, a[0], a[1]), type=rt)


def _def_halving_add(a: Sequence[Term], rt: ScalarType) -> Term:
    w = make("widening_add", a[0], a[1])
    return make("cast", make("shr", w, C(1, w.type)), type=rt)


def _def_rounding_halving_add(a: Sequence[Term], rt: ScalarType) -> Term:
    w = make("widening_add", a[0], a[1])
    return make("cast", make("shr", make("add", w, C(1, w.type)), C(1, w.type)), type=rt)


def _def_halving_sub(a: Sequence[Term], rt: ScalarType) -> Term:
    wt = rt.widen()  # widening keeps the signedness: an unsigned negative result wraps
    d = make("sub", _wide(a[0], wt), _wide(a[1], wt))
    return make("cast", make("shr", d, C(1, wt)), type=rt)


def _rshr_positive(x: Term, amount: Term) -> Term:
    """Round-to-nearest (ties up) of x / 2^amount for amount > 0, as a signed value of twice x's width.

    Every amount above bits(x) + 1 gives the same result (0) as bits(x) + 1, so the amount is clamped
    there to keep the rounding constant representable in the wide type.
    """
    t = x.type
    wt = t.widen()
    st = amount.type  # signed, same width as wt
    amt = make("min", amount, C(t.bits + 1, st))
    rnd = make("shl", C(1, wt), make("sub", amt, C(1, st)))
    return make("cast", make("shr", make("add", _wide(x, wt), rnd), amt), type=t)


def _def_rounding_shr(a: Sequence[Term], rt: ScalarType) -> Term:
    x, y = a
    yw = _wide(y, ScalarType(True, 2 * y.type.bits))
    return make("select", make("gt", yw, C(0, yw.type)), _rshr_positive(x, yw), make("shr", x, y))


def _def_rounding_shl(a: Sequence[Term], rt: ScalarType) -> Term:
    x, y = a
    yw = _wide(y, ScalarType(True, 2 * y.type.bits))
    neg = make("sub", C(0, yw.type), yw)
    return make("select", make("lt", yw, C(0, yw.type)), _rshr_positive(x, neg), make("shl", x, y))


def _def_mul_shr(a: Sequence[Term], rt: ScalarType) -> Term:
    p = make("widening_mul", a[0], a[1])
    return make("saturating_cast", make("shr", p, _wide(a[2], p.type.to_unsigned())), type=rt)


def _def_rounding_mul_shr(a: Sequence[Term], rt: ScalarType) -> Term:
    p = make("widening_mul", a[0], a[1])
    return make("saturating_cast", make("rounding_shr", p, _wide(a[2], p.type.to_unsigned())), type=rt)


def _def_saturating_shl(a: Sequence[Term], rt: ScalarType) -> Term:
    x, y = a
    # Shifting a non-zero value by bits(x) already saturates; clamping keeps the wide shift exact.
    amt = make("min", y, C(x.type.bits, y.type))
    return make("saturating_cast", make("widening_shl", x, amt), type=rt)


_fpir("widening_add", 2, tr.widening("widening_add"), "widen(x) + widen(y): exact, twice the width.",
      _def_widening_add, hint=tr.hint_widening)
_fpir("widening_sub", 2, tr.widening("widening_sub", lambda t: t.widen().to_signed()),
      "widen(x) - widen(y) in the signed wide type (u8 - u8 gives i16).", _def_widening_sub, hint=tr.hint_widening)
_fpir("widening_mul", 2, tr.widening_mul_rule,
      "widen(x) * widen(y); signedness may differ, the result is signed if either operand is.",
      _def_widening_mul, hint=tr.hint_widening)
_fpir("extending_add", 2, tr.extending_rule("extending_add"), "x + widen(y), x twice as wide as y; wraps.",
      _def_extending("add"), hint=tr.hint_extending)
_fpir("extending_sub", 2, tr.extending_rule("extending_sub"), "x - widen(y), x twice as wide as y; wraps.",
      _def_extending("sub"), hint=tr.hint_extending)
_fpir("extending_mul", 2, tr.extending_rule("extending_mul"), "x * widen(y), x twice as wide as y; wraps.",
      _def_extending("mul"), hint=tr.hint_extending)
_fpir("widening_shl", 2, tr.shift_rule("widening_shl", lambda t: t.widen()),
      "widen(x) << widen(y) (a negative signed y shifts right).", _def_widening_shift("shl"), hint=tr.hint_shift,
      flags=(INRANGE, NSW_SHL))
_fpir("widening_shr", 2, tr.shift_rule("widening_shr", lambda t: t.widen()),
      "widen(x) >> widen(y) (a negative signed y shifts left).", _def_widening_shift("shr"), hint=tr.hint_shift)
_fpir("absd", 2, tr.unsigned_of("absd"), "|x - y| exactly, as the unsigned type of the same width.",
      _def_absd, interval=pr.iv_absd)
_fpir("saturating_cast", 1, tr.cast_rule("saturating_cast", ints=True),
      "cast<t>(clamp(x, t.min, t.max)) for any pair of integer types.", _def_sat_cast, hint=tr.hint_cast,
      explicit_type=True)
_fpir("saturating_add", 2, tr.same_int("saturating_add"), "saturating_narrow(widening_add(x, y)).",
      _def_saturating("widening_add"))
_fpir("saturating_sub", 2, tr.same_int("saturating_sub"), "saturating_cast<T>(widening_sub(x, y)).",
      _def_saturating("widening_sub"))
_fpir("halving_add", 2, tr.same_int("halving_add"), "narrow(widening_add(x, y) >> 1): floor average.",
      _def_halving_add, flags=(NSW_HALVING_ADD,))
_fpir("halving_sub", 2, tr.same_int("halving_sub"),
      "narrow((widen(x) - widen(y)) >> 1); an unsigned negative result wraps.", _def_halving_sub, flags=(NSW_HALVING_SUB,))
_fpir("rounding_halving_add", 2, tr.same_int("rounding_halving_add"),
      "narrow((widening_add(x, y) + 1) >> 1): average rounding up.", _def_rounding_halving_add, flags=(NSW_ROUNDING_HALVING_ADD,))
_fpir("rounding_shr", 2, tr.shift_rule("rounding_shr"),
      "y > 0: (x + 2^(y-1)) >> y computed without overflow; y <= 0: x << -y (wraps).", _def_rounding_shr,
      hint=tr.hint_shift, flags=(NSW_ROUNDING_SHR,))
_fpir("rounding_shl", 2, tr.shift_rule("rounding_shl"),
      "y >= 0: x << y (wraps); y < 0: (x + 2^(-y-1)) >> -y computed without overflow.", _def_rounding_shl,
      hint=tr.hint_shift)
_fpir("mul_shr", 3, tr.mul_shr_rule("mul_shr"), "saturating_narrow(widening_mul(x, y) >> z), z unsigned.",
      _def_mul_shr, hint=tr.hint_mul_shr)
_fpir("rounding_mul_shr", 3, tr.mul_shr_rule("rounding_mul_shr"),
      "saturating_narrow(rounding_shr(widening_mul(x, y), z)), z unsigned.", _def_rounding_mul_shr,
      hint=tr.hint_mul_shr)
_fpir("saturating_shl", 2, tr.shift_rule("saturating_shl"),
      "saturating_cast<T>(widening_shl(x, y)) (section 8.4).", _def_saturating_shl, hint=tr.hint_shift)


# ---------------------------------------------------------------------------------------------
# Lane-combining ops: `vector_reduce_<op>_x<f>(x)` (Halide's VectorReduce with factor f = operand lanes /
# result lanes). The factor is part of the op name, so a rule's pattern states which grouping it matches,
# and every consumer knows the lane count of each argument relative to the result (OpSpec.arg_lanes).

for _kind in REDUCE_COMBINE:
    for _f in DOCUMENTED_FACTORS:
        register_reduce(_kind, _f)

PRIMITIVE_OPS = tuple(n for n, s in OPS.items() if s.kind == "primitive" and s.reduce is None)
#: The documented lane-combining ops (other factors are registered on first use by `spec`).
REDUCE_OPS = tuple(n for n, s in OPS.items() if s.reduce is not None)
FPIR_OPS = tuple(n for n, s in OPS.items() if s.kind == "fpir")
#: Every flag name, with the ops that take it.
FLAGS: dict[str, tuple[str, ...]] = {}
for _n, _s in OPS.items():
    for _f in _s.flags:
        FLAGS[_f] = FLAGS.get(_f, ()) + (_n,)


def with_halide_overflow(term: Any, shifts: bool = False, overflow: bool = True) -> Any:
    """The term with the flags the Halide frontend gives it: `nsw` on every signed >= 32-bit
    add/sub/mul/shl (for FPIR text a user states comes from Halide code: `--assume-no-overflow`) and,
    with `shifts`, `inrange` on every shl/shr (`--assume-shifts-in-range`)."""
    memo: dict[int, Any] = {}
    for t in term.walk():
        if not t.args:
            memo[id(t)] = t
            continue
        args = [memo[id(a)] for a in t.args]
        flags = tuple(sorted(set(t.attrs) | set(halide_overflow_flags(t.op, t.type, shifts, overflow))))
        memo[id(t)] = make(t.op, *args, type=t.type if spec(t.op).explicit_type else None, flags=flags)
    return memo[id(term)]
