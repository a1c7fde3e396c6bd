"""Random well-typed expressions for the differential tester (tests/pitchfork/difftest.py).

Every generator is seeded and deterministic: the same (count, seed, depth, bits) gives the same terms, so a
failing run is reproduced by its command line. Terms are built with `fpir.ops.make`, so each type-checks.

- `random_terms`: FPIR ops, primitive integer ops, casts, shifts, div/mod, select/compare, u8 .. i64;
- `random_overflow_terms`: terms as the Halide frontend builds them (nsw flags, averaging and rounding-shift
  spellings);
- `random_reductions`: terms under `vector_reduce_<op>_x<f>`, half of them dot-product / pair-sum shapes;
- `random_family_terms`: issue 11's lifting-family spellings and HVX instruction forms with random operands;
- `with_uniform_leaves`: variables made uniform leaves (broadcasts).
"""

from __future__ import annotations

import random
import sys
from typing import Optional, Sequence

from fpir.ops import make, with_halide_overflow
from fpir.term import Term, const, var
from fpir.types import INT_TYPES, FPIRTypeError, ScalarType

def edge_values(t: ScalarType) -> list[int]:
    vals = {t.min, t.max, 0, 1, t.wrap(-1), t.min + 1, t.max - 1, t.max // 2, t.max // 2 + 1}
    return sorted(v for v in vals if t.contains(v))


class Generator:
    """Random well-typed terms. Every term is built with fpir.ops.make (so it type-checks)."""

    def __init__(self, rng: random.Random, max_depth: int = 4, fpir_weight: float = 0.45,
                 max_bits: int = 64) -> None:
        self.rng = rng
        self.max_depth = max_depth
        self.fpir_weight = fpir_weight
        self.types = tuple(t for t in INT_TYPES if t.bits <= max_bits)

    # ---- leaves ---------------------------------------------------------------------------
    def variable(self, t: ScalarType) -> Term:
        # The name carries the type so that one name never has two types in an environment.
        return var(f"{'abcd'[self.rng.randrange(4)]}{t.name}", t)

    def constant(self, t: ScalarType) -> Term:
        r = self.rng.random()
        if r < 0.4:
            return const(self.rng.choice(edge_values(t)), t)
        if r < 0.7:
            return const(t.wrap(self.rng.randint(-3, 9)), t)
        return const(self.rng.randint(t.min, t.max), t)

    def leaf(self, t: ScalarType) -> Term:
        return self.variable(t) if self.rng.random() < 0.8 else self.constant(t)

    def amount(self, t: ScalarType, signed: Optional[bool] = None, lo: int = -2, hi_extra: int = 2) -> Term:
        """A shift amount of t's width: a small constant (often in range) or a variable."""
        s = self.rng.random() < 0.5 if signed is None else signed
        at = ScalarType(s, t.bits)
        if self.rng.random() < 0.6:
            v = self.rng.randint(0 if not s else lo, t.bits + hi_extra)
            return const(at.wrap(v), at)
        return self.variable(at)

    # ---- terms ----------------------------------------------------------------------------
    def term(self, t: ScalarType, depth: int = 0) -> Term:
        for _ in range(30):
            try:
                x = self._term(t, depth)
            except (FPIRTypeError, ValueError, IndexError):
                continue
            if x.type == t and all(n.type.bits <= self.types[-1].bits for n in x.walk()):
                return x
        return self.variable(t)

    def top(self, t: Optional[ScalarType] = None) -> Term:
        """A term with at least one variable (a constant-only term folds away)."""
        for _ in range(50):
            x = self.term(t or self.rng.choice(self.types))
            if x.variables():
                return x
        return self.variable(t or self.types[0])

    def _sub(self, t: ScalarType, depth: int) -> Term:
        if depth + 1 >= self.max_depth or self.rng.random() < 0.25:
            return self.leaf(t)
        return self.term(t, depth + 1)

    def _term(self, t: ScalarType, depth: int) -> Term:
        r = self.rng.random()
        if r < 0.12:
            return self.idiom(t, depth)
        if r < 0.12 + self.fpir_weight:
            return self.fpir(t, depth)
        return self.primitive(t, depth)

    def primitive(self, t: ScalarType, depth: int) -> Term:
        g = lambda ty=t: self._sub(ty, depth)  # noqa: E731
        k = self.rng.choice(["add", "sub", "mul", "min", "max", "and", "or", "xor", "not", "shl", "shr",
                             "shl", "shr", "div", "mod", "select", "abs", "cast", "cast", "reinterpret"])
        if k in ("add", "sub", "mul", "min", "max", "and", "or", "xor"):
            return make(k, g(), g())
        if k == "not":
            return make("not", g())
        if k in ("shl", "shr"):
            return make(k, g(), self.amount(t))
        if k in ("div", "mod"):
            d = self.constant(t) if self.rng.random() < 0.5 else g()
            return make(k, g(), d)
        if k == "select":
            s = self.rng.choice(self.types)
            cmp = self.rng.choice(["eq", "ne", "lt", "le", "gt", "ge"])
            return make("select", make(cmp, self._sub(s, depth), self._sub(s, depth)), g(), g())
        if k == "abs":
            if t.signed:
                raise FPIRTypeError("abs gives an unsigned type")
            return make("abs", self._sub(t.to_signed(), depth))
        if k == "cast":
            return make("cast", self._sub(self.rng.choice(self.types), depth), type=t)
        return make("reinterpret", self._sub(t.with_sign(not t.signed), depth), type=t)

    def fpir(self, t: ScalarType, depth: int) -> Term:
        g = lambda ty=t: self._sub(ty, depth)  # noqa: E731
        narrow = t.narrow() if t.bits > 8 else None
        ops = ["saturating_cast", "saturating_add", "saturating_sub", "halving_add", "halving_sub",
               "rounding_halving_add", "rounding_shr", "rounding_shl", "saturating_shl", "mul_shr",
               "rounding_mul_shr", "mul_shr", "rounding_mul_shr"]
        if not t.signed:
            ops += ["absd", "absd"]
        if narrow is not None:
            ops += ["widening_add", "widening_sub", "widening_mul", "widening_shl", "widening_shr",
                    "extending_add", "extending_sub", "extending_mul"]
        k = self.rng.choice(ops)
        if k == "saturating_cast":
            return make(k, g(self.rng.choice(self.types)), type=t)
        if k in ("saturating_add", "saturating_sub", "halving_add", "halving_sub", "rounding_halving_add"):
            return make(k, g(), g())
        if k in ("rounding_shr", "rounding_shl", "saturating_shl"):
            return make(k, g(), self.amount(t))
        if k in ("mul_shr", "rounding_mul_shr"):
            return make(k, g(), g(), self.amount(t, signed=False, hi_extra=t.bits + 2))
        if k == "absd":
            s = t.with_sign(self.rng.random() < 0.5)
            return make(k, g(s), g(s))
        assert narrow is not None
        if k == "widening_add":
            if t.signed:
                raise FPIRTypeError("widening_add keeps the sign")
            return make(k, g(narrow), g(narrow))
        if k == "widening_sub":
            if not t.signed:
                raise FPIRTypeError("widening_sub is signed")
            s = narrow.with_sign(self.rng.random() < 0.5)
            return make(k, g(s), g(s))
        if k == "widening_mul":
            a = narrow.with_sign(self.rng.random() < 0.5)
            b = narrow.with_sign(self.rng.random() < 0.5) if t.signed else narrow
            if not t.signed:
                a = b = narrow
            elif not (a.signed or b.signed):
                a = narrow.to_signed()
            return make(k, g(a), g(b))
        if k in ("widening_shl", "widening_shr"):
            return make(k, g(narrow.with_sign(t.signed)), self.amount(narrow))
        return make(k, g(), g(narrow.with_sign(self.rng.random() < 0.5)))

    def idiom(self, t: ScalarType, depth: int) -> Term:
        """Integer spellings of fixed-point operations, so that the lifting rules fire."""
        rng = self.rng
        k = rng.randrange(9)
        if t.bits == 64 and k in (0, 1, 2, 4, 6, 7, 8):
            k = 3
        if k in (7, 8):  # acc +- |x - y| widened (uaba, uabdl) / acc - widen(x) * widen(y) (umlsl)
            if t.bits == 8:
                raise FPIRTypeError("no narrower type")
            n = t.narrow().with_sign(rng.random() < 0.5)
            x, y = self._sub(n, depth), self._sub(n, depth)
            if k == 7:
                return make("add", self._sub(t, depth), make("cast", make("absd", x, y), type=t))
            return make("sub", self._sub(t, depth), make("mul", make("cast", x, type=t), make("cast", y, type=t)))
        if k == 0:  # u8(min(u16(a) + u16(b) * 2^c, 255)): saturating narrow of a widening shl-add
            w = t.widen()
            a, b = self._sub(t, depth), self._sub(t, depth)
            inner = make("add", make("cast", a, type=w), make("mul", make("cast", b, type=w),
                                                              const(1 << rng.randint(0, 3), w)))
            if t.signed:
                return make("cast", make("max", make("min", inner, const(t.max, w)), const(t.min, w)), type=t)
            return make("cast", make("min", inner, const(t.max, w)), type=t)
        if k == 1:  # rounding average (x + y + 1) >> 1 / rounding shift (x + 2^(c-1)) >> c, narrowed
            w = t.widen()
            a, b = make("cast", self._sub(t, depth), type=w), make("cast", self._sub(t, depth), type=w)
            c = rng.randint(1, min(t.bits, 6))
            s = make("add", make("add", a, b), const(1 << (c - 1), w))
            return make("cast", make("shr", s, const(c, w)), type=t)
        if k == 2:  # absd from a widened difference, narrowed back
            if t.signed:
                raise FPIRTypeError("absd is unsigned")
            w = t.widen().to_signed()
            s = t.with_sign(rng.random() < 0.5)
            d = make("sub", make("cast", self._sub(s, depth), type=w), make("cast", self._sub(s, depth), type=w))
            return make("cast", make("abs", d), type=t)
        if k == 3:  # acc + widen(x) * widen(y) (multiply-accumulate), or widen(x) << c + y
            if t.bits == 8:
                raise FPIRTypeError("no narrower type")
            n = t.narrow()
            x, y = make("cast", self._sub(n, depth), type=t), make("cast", self._sub(n, depth), type=t)
            if rng.random() < 0.5:
                return make("add", self._sub(t, depth), make("mul", x, y))
            return make("add", make("mul", x, const(1 << rng.randint(1, 4), t)), self._sub(t, depth))
        if k == 4:  # clamp to the narrow type's range, then narrow
            if t.bits > 32:
                raise FPIRTypeError("too wide")
            w = ScalarType(rng.random() < 0.5, t.bits * 2)
            x = self._sub(w, depth)
            lo = max(t.min, w.min)
            return make("cast", make("max", make("min", x, const(t.max, w)), const(lo, w)), type=t)
        if k == 5:  # (widen(x) * widen(y)) >> c narrowed (a mul_shr when it cannot overflow)
            if t.bits > 32:
                raise FPIRTypeError("too wide")
            w = t.widen()
            p = make("mul", make("cast", self._sub(t, depth), type=w), make("cast", self._sub(t, depth), type=w))
            c = rng.randint(t.bits - 1, t.bits + 2)
            if rng.random() < 0.5:
                p = make("add", p, const(1 << (c - 1), w))
            return make("cast", make("shr", p, const(c, w)), type=t)
        # Sobel-style: absd of two 1-2-1 sums of widened inputs
        if t.bits < 16 or t.signed:
            raise FPIRTypeError("sobel needs u16+")
        n = t.narrow()
        row = lambda: make("add", make("add", make("cast", self.variable(n), type=t),  # noqa: E731
                                       make("mul", make("cast", self.variable(n), type=t), const(2, t))),
                           make("cast", self.variable(n), type=t))
        return make("absd", row(), row())


def _dot_body(rng: random.Random, gen: Generator) -> Optional[tuple[Term, int]]:
    """A body the horizontal instructions take, with the factor they reduce it by: a widening product of
    narrow variables (or of one and a constant tap; into 32 bits by 4 for udot / vrmpy, by 2 for pmaddwd
    / vdmpy), a widened variable (pair sums), an absolute difference widened to 64 bits (psadbw, by 8)."""
    narrow = [t for t in gen.types if t.bits in (8, 16)]
    x = rng.choice(narrow)
    y = rng.choice([t for t in narrow if t.bits == x.bits])
    a = gen.variable(x)
    shape = rng.choice(["mul", "mul", "tap", "widen", "absd"])
    if shape == "absd":
        if 64 not in {t.bits for t in gen.types}:
            return None
        return make("cast", make("absd", a, gen.variable(x)), type=ScalarType(False, 64)), 8
    if shape == "widen":
        body = make("cast", a, type=x.widen())
    else:
        b = gen.variable(y) if shape == "mul" else const(y.wrap(rng.choice([1, 2, 3, 5, 100, -3, -7, y.max, y.min])), y)
        body = make("widening_mul", a, b)
    if x.bits == 8 and rng.random() < 0.5:  # 8-bit products summed in 32 bits
        return make("cast", body, type=ScalarType(rng.random() < 0.7, 32)), 4
    return body, 2


def random_reductions(count: int, seed: int = 0, max_depth: int = 3, max_bits: int = 64) -> list[Term]:
    """Random terms under a random lane-combining op (`vector_reduce_<op>_x<f>`, f in 2, 3, 4, 8), some
    of them accumulated (`acc + reduction`, the dot-product shape); half of the bodies are the shapes
    the horizontal instructions take (`_dot_body`), the rest random terms."""
    from fpir.opspec import REDUCE_COMBINE, reduce_op

    rng = random.Random(seed)
    gen = Generator(rng, max_depth, max_bits=max_bits)
    out = []
    for _ in range(count):
        shaped = _dot_body(rng, gen) if rng.random() < 0.5 else None
        if shaped is not None and rng.random() < 0.8:
            body, f = shaped
            kind = "saturating_add" if body.op == "widening_mul" and rng.random() < 0.3 else "add"
        else:
            body = shaped[0] if shaped is not None else gen.top(rng.choice([t for t in gen.types if t.bits > 1]))
            kind, f = rng.choice(sorted(REDUCE_COMBINE)), rng.choice([2, 3, 4, 8])
        r = make(reduce_op(kind, f), body)
        if rng.random() < 0.3 and r.op.startswith("vector_reduce_add"):
            r = make("add", var(f"acc{r.type.name}", r.type), r)  # its own name: read at result lanes
        out.append(r)
    return out


def random_terms(count: int, seed: int = 0, max_depth: int = 4, max_bits: int = 64) -> list[Term]:
    """`count` random terms whose every node has at most `max_bits` bits (64: every user type)."""
    rng = random.Random(seed)
    gen = Generator(rng, max_depth, max_bits=max_bits)
    return [gen.top(rng.choice(gen.types)) for _ in range(count)]


def with_uniform_leaves(terms: Sequence[Term], seed: int = 0) -> list[Term]:
    """Each variable made a uniform leaf (a broadcast, as the Halide frontend makes its splats) with
    probability 1/2, per term; run_batch feeds such a variable one value in every lane."""
    rng = random.Random(seed)
    return [_with_uniform(term, {v.name for v in term.variables() if rng.random() < 0.5}) for term in terms]


def random_overflow_terms(count: int, seed: int = 0, max_depth: int = 3) -> list[Term]:
    """Terms as the Halide frontend builds them (`nsw` on signed >= 32-bit add/sub/mul/shl, `inrange`
    on every shl/shr): half random
    terms, half the i32/i64 spellings of halving_add/sub, rounding_halving_add and rounding_shr /
    rounding_shl (constant and clamped variable amounts) over random sub-terms."""
    rng = random.Random(seed)
    gen = Generator(rng, max_depth)
    out: list[Term] = []
    while len(out) < count:
        try:
            if rng.random() < 0.5:
                t = with_halide_overflow(gen.top(rng.choice(gen.types)), shifts=True)
            else:
                t = with_halide_overflow(_overflow_idiom(gen, rng), shifts=True)
        except FPIRTypeError:
            continue
        out.append(t)
    return out


def _overflow_idiom(gen: "Generator", rng: random.Random) -> Term:
    t = rng.choice([ScalarType(True, 32), ScalarType(True, 64)])
    x = gen._sub(t, 1)
    y = gen._sub(t, 1)
    one = const(1, t)
    k = rng.randrange(7)
    if k == 0:
        return make("shr", make("add", x, y), one) if rng.random() < 0.5 else make("div", make("add", x, y), const(2, t))
    if k == 1:
        return make("shr", make("sub", x, y), one)
    if k == 2:
        s = make("add", make("add", x, y), one) if rng.random() < 0.5 else make("add", make("add", x, one), y)
        return make("shr", s, one)
    if k == 3:
        c = rng.randrange(1, t.bits - 1)
        return make("div", make("add", x, const(1 << (c - 1), t)), const(1 << c, t))
    # variable amounts, clamped like Halide's clamp(n, lo, hi) (max(min(n, hi), lo)); sometimes unsigned
    n = gen._sub(t, 1)
    hi = rng.choice([t.bits - 2, t.bits - 1, 5, t.bits + 3])
    if k == 6:  # the left-shift twin: (x + ((1 >> n) >> 1)) << n, n in [2 - bits, hi]
        lo = rng.choice([2 - t.bits, 1 - t.bits, -4])
        n = make("max", make("min", n, const(min(hi, 4), t)), const(lo, t))
        if rng.random() < 0.5:  # the two shifts of 1 folded: 1 >> (n + 1)
            return make("shl", make("add", x, make("shr", one, make("add", n, one))), n)
        return make("shl", make("add", x, make("shr", make("shr", one, n), one)), n)
    n = make("max", make("min", n, const(hi, t)), const(rng.choice([0, -3]), t))
    if rng.random() < 0.4:
        n = make("cast", n, type=t.to_unsigned())
        one = make("cast", one, type=t)
    if k == 4:
        rnd = make("shr", make("shl", one, n), const(1, t))
    else:
        rnd = make("shl", one, make("sub", n, const(1, n.type)))
    return make("shr", make("add", x, rnd), n)


# Issue 11's HVX instructions, in the forms that select them (tests/pitchfork/backend/test_hvx*.py run the
# same forms with plain variables): Q31 / Q15 high multiplies (vmpye + vmpyo :<<1:sat / :rnd:sat, vmpyo),
# high halves of widening products (vmpy + vpacko/vshuffo), truncating and saturating narrows on pairs
# (vpacke, vsat, vround, vasr:sat), rounding shifts by clamped variable amounts (rounding_shr_b_var via
# vavg), multiplies by scalars (vmpyi, vmpa, accumulating forms) and the saturating pair sum (vdmpyhvsat).
HVX_TEMPLATES = [
    "rounding_mul_shr(a_i32, b_i32, 31)", "mul_shr(a_i32, b_i32, 31)", "mul_shr(a_i32, i32(b_i16), 15)",
    "saturating_cast<i32>(rounding_shr(widening_mul(a_i32, b_i32), 31))",
    "mul_shr(a_i16, b_i16, 16)", "mul_shr(a_u16, b_u16, 16)", "mul_shr(a_u8, b_u8, 8)", "mul_shr(a_i8, b_i8, 8)",
    "mul_shr(a_i16, 23170, 15)", "rounding_mul_shr(a_i16, b_i16, 15)", "rounding_mul_shr(a_u8, b_u8, 8)",
    "u8(a_u16)", "i16(a_i32)", "u8(a_u16 >> 8)", "i16(a_i32 >> 16)", "u16(widening_mul(a_u8, b_u8) >> 8)",
    "saturating_cast<u8>(a_i16)", "saturating_cast<i16>(a_i32)", "saturating_cast<u8>(rounding_shr(a_i16, 4))",
    "saturating_cast<i8>(a_i16 >> 3)", "saturating_cast<u16>(rounding_shr(a_u32, 7))",
    "rounding_shr(a_u8, u8(min(n_u16, 7)))", "rounding_shr(a_i8, i8(max(min(n_i16, 8), 0)))",
    "rounding_shr(a_i16, i16(max(min(n_i32, 15), 0)))", "rounding_shr(a_i32, max(min(n_i32, 31), 0))",
    "rounding_shl(a_i16, max(min(n_i16, 15), -15))", "rounding_shr(a_u16, n_u16)",
    "a_i16 * 7 + b_i16 * -3", "acc_i32 + widening_mul(a_i16, 300)", "acc_u16 + widening_mul(a_u8, 3)",
    "acc_i32 + widening_mul(a_i16, b_i16)", "a_i32 * 1000 + b_i32",
    "vector_reduce_saturating_add_x2(widening_mul(a_i16, b_i16))",
    "vector_reduce_add_x2(widening_mul(max(a_i16, -32767), b_i16))",
]


def family_templates() -> list[str]:
    """Every issue-11 lifting-family spelling and near miss (tests/pitchfork/selection/test_lift_families.py) and
    the HVX instruction forms above."""
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)  # test_lift_families imports trs.termgen as pytest does
    if here not in sys.path:
        sys.path.append(here)
    from tests.pitchfork.selection.test_lift_families import NOT_LIFTED, SPELLINGS

    return [s for _, s, _ in SPELLINGS] + [s for s, _ in NOT_LIFTED] + HVX_TEMPLATES


def random_family_terms(count: int, seed: int = 0, max_bits: int = 64, max_depth: int = 3) -> list[Term]:
    """`count` terms from `family_templates`, each variable replaced (with probability 1/2, every
    occurrence alike) by a random term of its type: the spellings the lifting rules and the HVX
    instruction rules match, over operands whose bounds and shapes vary (so a rule's side condition
    holds or fails), at the lane counts run_batch draws. Templates wider than `max_bits` are skipped."""
    from fpir.opspec import spec
    from fpir.text import parse

    rng = random.Random(seed)
    gen = Generator(rng, max_depth, max_bits=max_bits)
    templates = [t for t in (parse(s) for s in family_templates())
                 if max(n.type.bits for n in t.walk()) <= max_bits]
    out: list[Term] = []
    while len(out) < count:
        tmpl = rng.choice(templates)
        subst = {v: gen.term(v.type, 1) for v in tmpl.variables() if rng.random() < 0.5}
        memo: dict[int, Term] = {}
        try:
            for t in tmpl.walk():
                if t.args:
                    memo[id(t)] = make(t.op, *[memo[id(a)] for a in t.args],
                                       type=t.type if spec(t.op).explicit_type else None, flags=t.attrs)
                else:
                    memo[id(t)] = subst.get(t, t)
        except FPIRTypeError:
            continue
        term = memo[id(tmpl)]
        if term.variables() and max(n.type.bits for n in term.walk()) <= max_bits:
            out.append(term)
    return out


def _with_uniform(term: Term, names: set[str]) -> Term:
    """`term` with the variables in `names` made uniform leaves (FPIR text has no spelling for them)."""
    if not names:
        return term
    from fpir.opspec import spec
    from fpir.term import var as mkvar

    memo: dict[int, Term] = {}
    for t in term.walk():
        if t.is_var:
            memo[id(t)] = mkvar(t.name, t.type, uniform=t.name in names)
        elif t.args:
            memo[id(t)] = make(t.op, *[memo[id(a)] for a in t.args],
                               type=t.type if spec(t.op).explicit_type else None, flags=t.attrs)
        else:
            memo[id(t)] = t
    return memo[id(term)]
