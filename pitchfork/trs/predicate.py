"""The small closed language of rule predicates and constant expressions.

Predicates (after `if`) and constant expressions (arguments of a right-hand side made only of
constant wildcards and literals, like `log2(c0)` or `1 << c0`) are written in the expression syntax
and evaluated in one of two domains, so matcher and verifier agree on their meaning:

* `PyDomain`: at match time, over Python ints, with term bounds from interval analysis;
* `Z3Domain`: at verification time, over 160-bit Z3 bit-vectors (wide enough that every constant
  a real rewrite computes is exact), with bounds queries turned into assumptions on the inputs;
* `IntDomain`: the same over Z3 integers, for the verifier's integer-arithmetic proofs (where a
  160-bit multiplier in an assumption would defeat bit-blasting).

Vocabulary: integer literals, constant wildcards `c0..`, `+ - * / % << >> & | ^ ~`, comparisons,
`&& || !`, `is_pow2(e)`, `log2(e)`, `bits(T)`, `tmin(T)`, `tmax(T)`, `is_signed(T)`, `is_unsigned(T)`,
`represents(T, U)` (every value of U is a value of T, so a cast from U to T is lossless), type
(in)equality `T == wide(U)`, and bounds queries on term wildcards: `upper_bounded(x, e)`,
`lower_bounded(x, e)`, `fits(x, T)` (x's value range lies in T), `sum_fits(x, y, ..., T)` (the exact sum
of the wildcards' values lies in T: at match time from the sum of their bounds, an over-approximation;
the verifier assumes the exact sum in T). Structural queries:
`is_variable(x)` (not a constant) and `stream(x, y, z)` (leaves reading one stream of memory at
consecutive element offsets, from the frontend's `Streams` facts: what HVX vtmpy's operand pair needs)
add no fact for the verifier (Z3 reads them as true, so a rule they guard is proved for every operand);
`is_uniform(x)` (the same value in every lane: built by lane-wise ops from constants and leaves the
Halide frontend states uniform, `fpir.term.var(uniform=True)`) is read by the verifier as the fact that
x is one symbol for every lane (`Z3Domain.uniform`). Its negation for selection, `is_varying(x)` (not
provably uniform), is structural like `is_variable`: it steers a per-lane form away from operands a
broadcast-count form serves better, and the verifier reads it as true.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping, Optional, Sequence

from fpir.lazy import z3

from fpir.term import Term
from fpir.text import Raw, _int_value
from fpir.types import FPIRTypeError, ScalarType
from pitchfork.trs.pattern import TypeExpr, _CWILD_RE, type_expr_of_raw

Z3_WIDTH = 160
TYPE_FUNCS = ("wide", "narrow", "signed", "unsigned")
TYPE_PREDICATES = ("is_signed", "is_unsigned")
INT_FUNCS = ("log2", "bits", "tmin", "tmax")
BOOL_FUNCS = ("is_pow2", "upper_bounded", "lower_bounded", "fits", "sum_fits", "is_signed", "is_unsigned",
              "represents")


class PredicateError(ValueError):
    """A predicate that cannot be evaluated; `node` (when known) locates the offending sub-expression."""

    def __init__(self, message: str, node: Optional[Raw] = None) -> None:
        super().__init__(message)
        self.message, self.node = message, node


def is_type_node(node: Raw) -> bool:
    try:
        type_expr_of_raw(node)
        return node.kind == "call" or not _CWILD_RE.match(node.text)
    except FPIRTypeError:
        return False


#: Stream facts about the leaves of a term being rewritten: variable name -> (stream key, element
#: offset). Two variables with one key hold the same stream of elements read at their offsets (the
#: Halide frontend: dense loads of one buffer whose indices differ by a constant). Empty by default.
Streams = Mapping[str, tuple[Hashable, int]]


class PyDomain:
    """Concrete evaluation at match time."""

    def __init__(self, consts: Mapping[str, int], terms: Mapping[str, Term], tvars: Mapping[str, ScalarType],
                 bounds: Callable[[Term], tuple[int, int]], streams: Streams | None = None) -> None:
        self.consts, self.terms, self.tvars, self.bounds = consts, terms, tvars, bounds
        self.streams = streams or {}

    def lit(self, v: int) -> int:
        return v

    def const_wild(self, name: str) -> int:
        return self.consts[name]

    def binop(self, op: str, a: int, b: int) -> Any:
        if op in ("div", "mod") and b == 0:
            return 0
        return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a // b,
                "mod": lambda: a % b, "shl": lambda: a << b if 0 <= b <= 512 else 0, "shr": lambda: a >> b,
                "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "eq": lambda: a == b,
                "ne": lambda: a != b, "lt": lambda: a < b, "le": lambda: a <= b, "gt": lambda: a > b,
                "ge": lambda: a >= b}[op]()

    def bnot(self, a: int) -> int:
        return ~a

    def land(self, a: bool, b: bool) -> bool:
        return a and b

    def lor(self, a: bool, b: bool) -> bool:
        return a or b

    def lnot(self, a: bool) -> bool:
        return not a

    def is_pow2(self, a: int) -> bool:
        return a > 0 and a & (a - 1) == 0

    def log2(self, a: int) -> int:
        if a <= 0:
            raise PredicateError("log2 of a non-positive value")
        return a.bit_length() - 1

    def boolean(self, b: bool) -> bool:
        return bool(b)

    def upper_bounded(self, name: str, v: int) -> bool:
        return self.bounds(self.terms[name])[1] <= v

    def lower_bounded(self, name: str, v: int) -> bool:
        return self.bounds(self.terms[name])[0] >= v

    def fits(self, name: str, t: ScalarType) -> bool:
        lo, hi = self.bounds(self.terms[name])
        return t.min <= lo and hi <= t.max

    def sum_fits(self, names: Sequence[str], t: ScalarType) -> bool:
        bs = [self.bounds(self.terms[n]) for n in names]
        return t.min <= sum(b[0] for b in bs) and sum(b[1] for b in bs) <= t.max

    def is_variable(self, name: str) -> bool:
        return not self.terms[name].is_const

    def stream(self, names: Sequence[str]) -> bool:
        return is_stream([self.terms[n] for n in names], self.streams)

    def is_uniform(self, name: str) -> bool:
        return is_uniform_term(self.terms[name])

    def is_varying(self, name: str) -> bool:
        return not is_uniform_term(self.terms[name])


def is_stream(terms: Sequence[Term], streams: Streams) -> bool:
    """The terms are variables reading one stream at consecutive element offsets o, o+1, ..."""
    facts = [streams.get(t.name) if t.op == "var" else None for t in terms]
    if any(f is None for f in facts):
        return False
    key, o = facts[0]  # type: ignore[misc]
    return all(f == (key, o + k) for k, f in enumerate(facts))


def is_uniform_term(term: Term) -> bool:
    """True if every lane of `term` holds the same value: lane-wise ops over constants and uniform
    leaves (a lane-combining op or one reading lane 0 is not looked into: False)."""
    from fpir.opspec import spec

    for t in term.walk():
        if t.is_var and not t.is_uniform_leaf:
            return False
        if t.args and (spec(t.op).combines_lanes or spec(t.op).reads_lane0):
            return False
    return True


class _Z3Logic:
    """The connectives of the two symbolic domains: Z3 Booleans whatever the value sort."""

    def land(self, a: Any, b: Any) -> Any:
        return z3.And(a, b)

    def lor(self, a: Any, b: Any) -> Any:
        return z3.Or(a, b)

    def lnot(self, a: Any) -> Any:
        return z3.Not(a)


class Z3Domain(_Z3Logic):
    """Symbolic evaluation for verification; facts the predicate states become assumptions."""

    def __init__(self, symbols: Mapping[str, tuple[z3.BitVecRef, ScalarType]], tvars: Mapping[str, ScalarType]) -> None:
        self.symbols, self.tvars = symbols, tvars
        self.side: list[z3.BoolRef] = []  # definitional constraints (log2 witnesses)
        self.uniform: set[str] = set()  # wildcards the predicate requires to be uniform (is_uniform)
        self._fresh = 0

    def ext(self, name: str) -> z3.BitVecRef:
        sym, t = self.symbols[name]
        n = Z3_WIDTH - t.bits
        return z3.SignExt(n, sym) if t.signed else z3.ZeroExt(n, sym)

    def lit(self, v: int) -> z3.BitVecRef:
        return z3.BitVecVal(v % (1 << Z3_WIDTH), Z3_WIDTH)

    def const_wild(self, name: str) -> z3.BitVecRef:
        return self.ext(name)

    def binop(self, op: str, a: Any, b: Any) -> Any:
        zero = self.lit(0)
        return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
                "div": lambda: z3.If(b == zero, zero, _floor_div(a, b)),
                "mod": lambda: z3.If(b == zero, zero, a - b * _floor_div(a, b)),
                "shl": lambda: a << b, "shr": lambda: a >> b, "and": lambda: a & b, "or": lambda: a | b,
                "xor": lambda: a ^ b, "eq": lambda: a == b, "ne": lambda: a != b, "lt": lambda: a < b,
                "le": lambda: a <= b, "gt": lambda: a > b, "ge": lambda: a >= b}[op]()

    def bnot(self, a: Any) -> Any:
        return ~a

    def is_pow2(self, a: Any) -> Any:
        return z3.And(a > 0, (a & (a - 1)) == 0)

    def log2(self, a: Any) -> Any:
        self._fresh += 1
        k = z3.BitVec(f"log2_{self._fresh}", Z3_WIDTH)
        self.side.append(z3.And(k >= 0, k < Z3_WIDTH - 1, (self.lit(1) << k) == a))
        return k

    def boolean(self, b: bool) -> Any:
        return z3.BoolVal(bool(b))

    def upper_bounded(self, name: str, v: Any) -> Any:
        return self.ext(name) <= v

    def lower_bounded(self, name: str, v: Any) -> Any:
        return self.ext(name) >= v

    def fits(self, name: str, t: ScalarType) -> Any:
        x = self.ext(name)
        return z3.And(x >= self.lit(t.min), x <= self.lit(t.max))

    def sum_fits(self, names: Sequence[str], t: ScalarType) -> Any:
        x = sum((self.ext(n) for n in names[1:]), self.ext(names[0]))  # 160 bits: exact
        return z3.And(x >= self.lit(t.min), x <= self.lit(t.max))

    def is_variable(self, name: str) -> Any:
        # Structural (the operand is not a constant): no fact about its value, so the rule is proved
        # for every value.
        return z3.BoolVal(True)

    def is_uniform(self, name: str) -> Any:
        # A fact about lanes, not values: the verifier encodes the wildcard as one symbol for every
        # lane (synth/verify.py reads `uniform`; only as a conjunct of the predicate).
        self.uniform.add(name)
        return z3.BoolVal(True)

    def stream(self, names: Sequence[str]) -> Any:
        # Structural too: which lanes of memory the operands read, not their values; the instruction
        # a rule guarded by it selects has the right side's lane-wise meaning for every operand.
        return z3.BoolVal(True)

    def is_varying(self, name: str) -> Any:
        # Structural (lanes not provably equal): no fact; the rule is proved for every operand.
        return z3.BoolVal(True)


class IntDomain(_Z3Logic):
    """Symbolic evaluation over Z3's unbounded integers, for the verifier's integer-arithmetic proofs
    (synth/verify_fallback.py: equivalent_int). Exact where Z3Domain is exact (no 160-bit wrap);
    `<<` by a symbolic amount and `log2` / `is_pow2` become a case split over the powers of two
    Z3Domain can express. Bitwise `& | ^ ~` are only modelled on known operands (UnsupportedPredicate
    otherwise: the caller then falls back to the bit-vector proofs). `names` maps each wildcard to its
    Z3 integer symbol."""

    def __init__(self, names: Mapping[str, z3.ArithRef], tvars: Mapping[str, ScalarType]) -> None:
        self.names, self.tvars = names, tvars
        self.side: list[z3.BoolRef] = []  # definitional constraints (shift factors, log2 witnesses)
        self.symbolic_amounts: set[str] = set()  # wildcards a power of two was taken of (case splits)
        self.nonlinear = False  # a product of two symbolic values (a wide multiplier for bit-blasting)
        self._fresh = 0

    def lit(self, v: int) -> z3.ArithRef:
        return z3.IntVal(v)

    def const_wild(self, name: str) -> z3.ArithRef:
        return self.names[name]

    @staticmethod
    def _known(a: Any) -> Optional[int]:
        a = z3.simplify(a)
        return a.as_long() if z3.is_int_value(a) else None

    def _pow2(self, b: Any) -> z3.ArithRef:
        """2^b for 0 <= b < Z3_WIDTH, 0 otherwise (a left shift in the 160-bit domain)."""
        k = self._known(b)
        if k is not None:
            return z3.IntVal(1 << k if 0 <= k < Z3_WIDTH else 0)
        from z3.z3util import get_vars

        self.symbolic_amounts.update(v.decl().name() for v in get_vars(b))
        self._fresh += 1
        p = z3.Int(f"pow2_{self._fresh}")
        cases = [z3.And(b == i, p == (1 << i)) for i in range(Z3_WIDTH)]
        self.side.append(z3.Or(*cases, z3.And(z3.Or(b < 0, b >= Z3_WIDTH), p == 0)))
        return p

    def binop(self, op: str, a: Any, b: Any) -> Any:
        if op in ("mul", "shl") and self._known(a) is None and self._known(b) is None:
            self.nonlinear = True
        if op in ("add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge"):
            return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "eq": lambda: a == b,
                    "ne": lambda: a != b, "lt": lambda: a < b, "le": lambda: a <= b, "gt": lambda: a > b,
                    "ge": lambda: a >= b}[op]()
        if op == "shl":
            return a * self._pow2(b)
        ka, kb = self._known(a), self._known(b)
        if op in ("div", "mod", "shr") and kb is not None:
            if op == "shr":
                if not 0 <= kb < Z3_WIDTH:
                    raise UnsupportedPredicate("a shift right by an amount out of range")
                kb, op = 1 << kb, "div"
            if kb == 0:
                return z3.IntVal(0)
            # Z3's integer div/mod by a positive constant are floor division and the non-negative rest
            return a / kb if (op == "div" and kb > 0) else (a % kb if kb > 0 else _unsupported(op))
        if ka is not None and kb is not None:
            return z3.IntVal({"and": ka & kb, "or": ka | kb, "xor": ka ^ kb}[op]) if op in ("and", "or", "xor") \
                else _unsupported(op)
        raise UnsupportedPredicate(f"{op} of symbolic values")

    def bnot(self, a: Any) -> Any:
        return -a - 1

    def is_pow2(self, a: Any) -> Any:
        return z3.Or(*[a == (1 << i) for i in range(Z3_WIDTH - 1)])

    def log2(self, a: Any) -> Any:
        from z3.z3util import get_vars

        self.symbolic_amounts.update(v.decl().name() for v in get_vars(a))
        self._fresh += 1
        k = z3.Int(f"log2_{self._fresh}")
        self.side.append(z3.Or(*[z3.And(k == i, a == (1 << i)) for i in range(Z3_WIDTH - 1)]))
        return k

    def boolean(self, b: bool) -> Any:
        return z3.BoolVal(bool(b))

    def upper_bounded(self, name: str, v: Any) -> Any:
        return self.names[name] <= v

    def lower_bounded(self, name: str, v: Any) -> Any:
        return self.names[name] >= v

    def fits(self, name: str, t: ScalarType) -> Any:
        x = self.names[name]
        return z3.And(x >= t.min, x <= t.max)

    def sum_fits(self, names: Sequence[str], t: ScalarType) -> Any:
        x = sum((self.names[n] for n in names[1:]), self.names[names[0]])
        return z3.And(x >= t.min, x <= t.max)

    def is_variable(self, name: str) -> Any:
        return z3.BoolVal(True)

    def is_uniform(self, name: str) -> Any:
        return z3.BoolVal(True)  # a lane fact; the integer proofs encode one lane only

    def stream(self, names: Sequence[str]) -> Any:
        return z3.BoolVal(True)

    def is_varying(self, name: str) -> Any:
        return z3.BoolVal(True)


class UnsupportedPredicate(PredicateError):
    """IntDomain cannot encode this predicate exactly."""


def _unsupported(op: str) -> Any:
    raise UnsupportedPredicate(f"{op} by a non-positive or symbolic amount")


def _floor_div(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:
    q = a / b
    return z3.If(z3.And(a % b != 0, (a < 0) != (b < 0)), q - 1, q)


_BIN = {"add", "sub", "mul", "div", "mod", "shl", "shr", "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge"}


def eval_type(node: Raw, tvars: Mapping[str, ScalarType]) -> ScalarType:
    te: TypeExpr = type_expr_of_raw(node)
    t = te.eval(dict(tvars))
    if t is None:
        raise PredicateError(f"type {te} is not defined here")
    return t


def evaluate(node: Raw, d: Any) -> Any:
    """Evaluate a predicate / constant expression in domain d (PyDomain or Z3Domain)."""
    v = _int_value(node)
    if v is not None:
        return d.lit(v)
    if node.kind == "name":
        if _CWILD_RE.match(node.text):
            return d.const_wild(node.text)
        if node.text in ("true", "false"):
            return d.boolean(node.text == "true")
        raise PredicateError(f"{node.text!r} cannot be used as a value here")
    if node.kind == "neg":
        return d.binop("sub", d.lit(0), evaluate(node.args[0], d))
    if node.kind == "lnot":
        return d.lnot(evaluate(node.args[0], d))
    name, args = node.text, node.args
    if name in ("eq", "ne") and is_type_node(args[0]) and is_type_node(args[1]):
        try:
            same = eval_type(args[0], d.tvars) == eval_type(args[1], d.tvars)
        except PredicateError:
            same = False  # e.g. wide(u64) does not exist: the types cannot be equal
        return d.boolean(same if name == "eq" else not same)
    if name in _BIN:
        return d.binop(name, evaluate(args[0], d), evaluate(args[1], d))
    if name == "not":
        return d.bnot(evaluate(args[0], d))
    if name == "land":
        return d.land(evaluate(args[0], d), evaluate(args[1], d))
    if name == "lor":
        return d.lor(evaluate(args[0], d), evaluate(args[1], d))
    if name == "is_pow2":
        return d.is_pow2(evaluate(args[0], d))
    if name == "log2":
        return d.log2(evaluate(args[0], d))
    if name in ("bits", "tmin", "tmax"):
        t = eval_type(args[0], d.tvars)
        return d.lit({"bits": t.bits, "tmin": t.min, "tmax": t.max}[name])
    if name in ("is_signed", "is_unsigned"):
        t = eval_type(args[0], d.tvars)
        return d.boolean(t.signed == (name == "is_signed"))
    if name == "represents":
        wide, narrow = eval_type(args[0], d.tvars), eval_type(args[1], d.tvars)
        return d.boolean(wide.can_represent(narrow))
    if name in ("upper_bounded", "lower_bounded"):
        return getattr(d, name)(_wild_name(args[0]), evaluate(args[1], d))
    if name == "fits":
        return d.fits(_wild_name(args[0]), eval_type(args[1], d.tvars))
    if name == "sum_fits":
        return d.sum_fits([_wild_name(a) for a in args[:-1]], eval_type(args[-1], d.tvars))
    if name == "is_variable":
        return d.is_variable(_wild_name(args[0]))
    if name == "is_uniform":
        return d.is_uniform(_wild_name(args[0]))
    if name == "is_varying":
        return d.is_varying(_wild_name(args[0]))
    if name == "stream":
        return d.stream([_wild_name(a) for a in args])
    raise PredicateError(f"unknown predicate function {name!r}")


def _wild_name(node: Raw) -> str:
    if node.kind != "name":
        raise PredicateError("bounds queries take a wildcard")
    from pitchfork.trs.pattern import split_wildcard

    return split_wildcard(node.text)[0]


#: the queries that bound a term wildcard's value (the verifier assumes them as facts on its inputs, and
#: synth/verify.py gives rules using them its product-bounds proof)
VALUE_BOUNDS = ("upper_bounded", "lower_bounded", "fits", "sum_fits")
#: the queries about term wildcards' values or structure (bounds, streams, uniformity): a predicate using
#: one needs the matched terms (and, at match time, their bounds), and is not a constant expression
TERM_QUERIES = VALUE_BOUNDS + ("is_variable", "stream", "is_uniform", "is_varying")


def uses_bounds(node: Optional[Raw]) -> bool:
    if node is None:
        return False
    if node.kind == "call" and node.text in TERM_QUERIES:
        return True
    return any(uses_bounds(a) for a in node.args)


def is_const_expr(node: Raw) -> bool:
    """True if node only involves literals, constant wildcards and constant functions."""
    if _int_value(node) is not None:
        return True
    if node.kind == "name":
        return bool(_CWILD_RE.match(node.text.split("_")[0])) and "_" not in node.text
    if node.kind == "call" and (node.text in TERM_QUERIES or node.text == "either"):
        return False
    if node.kind == "call" and node.text in ("bits", "tmin", "tmax"):
        return True
    return node.kind in ("call", "neg") and node.text in _BIN | {"not", "log2", "-"} and all(
        is_const_expr(a) for a in node.args)


#: Predicate functions: name -> argument kinds ("v" value, "t" type, "w" term wildcard).
SIGNATURES: dict[str, str] = {
    "is_pow2": "v", "log2": "v", "bits": "t", "tmin": "t", "tmax": "t", "is_signed": "t", "is_unsigned": "t",
    "represents": "tt", "upper_bounded": "wv", "lower_bounded": "wv", "fits": "wt", "is_variable": "w",
    "sum_fits": "wwt",  # variadic: two or more term wildcards, then the type (check_syntax)
    "stream": "www", "is_uniform": "w", "is_varying": "w",
    "land": "vv", "lor": "vv", "not": "v", **{op: "vv" for op in _BIN},
}


def check_syntax(node: Raw) -> None:
    """Reject, before any evaluation, a predicate that uses an unknown function, a function with the
    wrong number or kind of arguments, or a name that is neither a constant wildcard nor true/false in
    a value position. (Evaluation would otherwise fail at every type instance, which the verifier reads
    as "this rule cannot fire" rather than as a mistake.) Iterative, so deep predicates are fine."""
    stack: list[tuple[Raw, str]] = [(node, "v")]
    while stack:
        n, kind = stack.pop()
        if kind == "t":
            try:
                type_expr_of_raw(n)
            except FPIRTypeError:
                raise PredicateError(f"expected a type (u8, T, wide(T), ...), got {n.text!r}", n) from None
            continue
        if kind == "w":
            if n.kind != "name" or _CWILD_RE.match(n.text):
                raise PredicateError(f"bounds queries take a term wildcard (x_T), got {n.text!r}", n)
            continue
        if _int_value(n) is not None:
            continue
        if n.kind == "name":
            if not _CWILD_RE.match(n.text) and n.text not in ("true", "false"):
                raise PredicateError(f"{n.text!r} cannot be used as a value here (a predicate computes with "
                                     "constant wildcards c0.., literals and type functions)", n)
            continue
        if n.kind in ("neg", "lnot"):
            stack.append((n.args[0], "v"))
            continue
        if n.text in ("eq", "ne") and len(n.args) == 2 and is_type_node(n.args[0]) and is_type_node(n.args[1]):
            continue
        sig = SIGNATURES.get(n.text)
        if sig is None:
            known = ", ".join(sorted(k for k in SIGNATURES if k not in _BIN and k not in ("land", "lor", "not")))
            raise PredicateError(f"unknown predicate function {n.text!r} (known: {known})", n)
        if n.text == "sum_fits" and len(n.args) >= 3:
            sig = "w" * (len(n.args) - 1) + "t"
        if len(n.args) != len(sig):
            raise PredicateError(f"{n.text} takes {len(sig)} argument(s), got {len(n.args)}", n)
        stack.extend(zip(n.args, sig))
