"""Differential testing of instruction selection: random expressions, compiled and RUN on every ISA.

For each random well-typed expression (FPIR ops, primitive integer ops, casts, shifts by constants and
by variables, div/mod, select/compare, and the integer idioms the lifting rules turn into FPIR, over
u8 .. i64), `pitchfork.selection.lower.select_instructions` lowers it for a target with isel=pitchfork or
isel=llvm; the result becomes an element-wise kernel (pitchfork.codegen.kernel); the kernels of a batch
share one module, one compilation and one execution (x86: in-process JIT; AArch64 / Hexagon: one
qemu run through pitchfork.backend.run.run_calls). Inputs mix random values, edge values (min, max, 0,
-1, 1, min+1, max-1) and small values (so variable shift amounts hit 0, negative and >= bits), and
the lane count varies (native/2, native, 2*native, 3*native) so splitting into registers and
padding are exercised. Every output lane must equal `fpir.interp.evaluate` of the ORIGINAL
expression bit for bit; a mismatch reports the expression, the lowered term, the inputs of the first
failing lanes and both outputs. Two variables of one name at two types (`c_u8`, `c_i32`) are two
inputs: inputs, the interpreter and the kernel's arguments are keyed by name, so such a term runs with
the clashing names made distinct (`pitchfork.codegen.kernel.distinct_variables`); reports show it as given.

    python -m tests.pitchfork.difftest --count 20000 --target arm64 [--isel llvm] [--seed 7]

Terms may carry flags (`add.nsw`, Halide's no-overflow rule; `random_overflow_terms` makes terms as the
Halide frontend does, with the i32/i64 averaging and rounding-shift spellings mixed in): their inputs
are redrawn, lane by lane, until every flagged node's fact holds (`fpir.interp.facts_hold`), and only
lanes where the facts hold are compared (a lane no redraw could fix is reported in `Result.masked`).

    python -m tests.pitchfork.difftest --overflow --count 500 --target x86-avx2

`--uniform` makes variables uniform leaves (broadcasts, fed one value in every lane), which the
instructions reading one count for all lanes (x86 vpsraw & co.) are selected for.

    python -m tests.pitchfork.difftest --uniform --count 500 --target x86-avx2

`--reductions` draws terms under the lane-combining `vector_reduce_<op>_x<f>` ops (`random_reductions`:
half of them the shapes udot/sdot, vrmpy, vdmpy, pmaddwd/pmaddubsw, psadbw and the pair sums take):

    python -m tests.pitchfork.difftest --reductions --count 300 --target arm64 --max-bits 32

`--families` draws issue 11's lifting-family spellings (tests/pitchfork/selection/test_lift_families.py) and the
HVX instruction forms it added (`HVX_TEMPLATES`), their variables replaced by random terms:

    python -m tests.pitchfork.difftest --families --count 300 --target hvx128 --max-bits 32

`--save PATH` writes every mismatch and error as a reproducer (one JSON object per line: target, isel,
lane count, expression text); `--replay PATH` reruns just those, each alone:

    python -m tests.pitchfork.difftest --target hvx128 --count 200 --seed 12 --save /tmp/f.jsonl
    python -m tests.pitchfork.difftest --replay /tmp/f.jsonl

Library use (tests/pitchfork/test_differential.py, the per-ISA tests): `random_terms`,
`random_overflow_terms`, `random_family_terms`, `run_batch`.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from fpir.ops import with_halide_overflow
from fpir.interp import evaluate, facts_hold
from fpir.z3enc import has_flags
from fpir.ops import make
from fpir.term import Term, const, var
from fpir.printer import to_text
from fpir.types import INT_TYPES, FPIRTypeError, ScalarType, u1

TARGETS = ("x86-avx2", "arm64", "hvx128")
ISELS = ("pitchfork", "llvm")

# ---------------------------------------------------------------------------------------------
# Random expressions


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


# ---------------------------------------------------------------------------------------------
# Inputs


def respecting_facts(term: Term, env: dict[str, np.ndarray], rng: np.random.Generator,
                     tries: int = 12) -> np.ndarray:
    """Redraw the inputs of lanes where a flag's fact fails (in place); the final per-lane mask."""
    ok = np.broadcast_to(facts_hold(term, env), next(iter(env.values())).shape).copy() if env else np.ones(0, bool)
    for attempt in range(tries):
        bad = np.nonzero(~ok)[0]
        if not len(bad):
            break
        for name, a in env.items():
            t = next(v.type for v in term.variables() if v.name == name)
            fresh = input_values(rng, t, len(bad))
            if attempt % 2:  # every other round: small values, which rarely overflow
                fresh = (fresh.astype(object) % 7).astype(a.dtype) if t.bits > 1 else fresh
            a[bad] = fresh
        ok = np.broadcast_to(facts_hold(term, env), ok.shape).copy()
    return ok


def input_values(rng: np.random.Generator, t: ScalarType, n: int) -> np.ndarray:
    """n values of type t: a third edge values, a third small values, a third uniform."""
    if t == u1:
        return rng.integers(0, 2, n).astype(np.bool_)
    kinds = rng.integers(0, 3, n)
    edges = np.array(edge_values(t), dtype=object)
    out = np.empty(n, dtype=object)
    e = edges[rng.integers(0, len(edges), n)]
    small = rng.integers(-3, t.bits + 3, n)
    hi = rng.integers(0, 1 << 62, n) * 4 + rng.integers(0, 4, n)  # 64 random bits
    for i in range(n):
        if kinds[i] == 0:
            out[i] = int(e[i])
        elif kinds[i] == 1:
            out[i] = t.wrap(int(small[i]))
        else:
            out[i] = t.wrap(int(hi[i]))
    return out.astype(t.np_dtype)


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Case:
    term: Term  # what runs: `source` with variables that share a name at two types given two names
    lanes: int
    n: int
    final: Optional[Term] = None
    error: str = ""
    mask: Optional[np.ndarray] = None  # lanes whose inputs respect the flags' facts (None: all)
    source: Optional[Term] = None  # the expression as given (reports and reproducers show it)

    @property
    def shown(self) -> Term:
        return self.term if self.source is None else self.source


@dataclass
class Mismatch:
    target: str
    isel: str
    term: Term
    lowered: Term
    lanes: int
    inputs: dict[str, list[int]]
    expected: list[int]
    got: list[int]
    lowered_ok: bool = True  # the lowered term itself (numpy) gives the expected values

    def report(self) -> str:
        where = ("the machine code differs from the lowered term's meaning (instruction emitter or LLVM)"
                 if self.lowered_ok else "the lowered term itself is wrong (a lowering rule)")
        lines = [f"MISMATCH on {self.target} (isel={self.isel}, lanes={self.lanes}): {where}",
                 f"  expression: {to_text(self.term)}",
                 f"  lowered:    {to_text(self.lowered)}"]
        for name, vals in sorted(self.inputs.items()):
            lines.append(f"  {name} = {vals}")
        lines.append(f"  expected (fpir.interp): {self.expected}")
        lines.append(f"  got (machine):          {self.got}")
        return "\n".join(lines)


@dataclass
class Result:
    target: str
    isel: str
    ran: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # selection / compile / run failures (bugs too)
    skipped: str = ""  # a whole-target skip reason (tools missing, known link problem)
    seconds: float = 0.0
    masked: int = 0  # lanes not compared: no redraw made their inputs respect the flags' facts
    # every mismatch and error as a reproducer (`finding`), for `--save` / `--replay`
    findings: list[dict] = field(default_factory=list)


def finding(kind: str, target: str, isel: str, c: "Case", message: str) -> dict:
    """A failing case as one JSON object: enough to rerun it alone (`replay`) at its lane count."""
    return {"kind": kind, "target": target, "isel": isel, "lanes": c.lanes, "expression": to_text(c.shown),
            "uniform": sorted(v.name for v in c.shown.variables() if v.is_uniform_leaf),
            "message": message[:2000]}


def natural_lanes(target: str, t: ScalarType) -> int:
    from pitchfork.backend.machine import get_target

    return get_target(target).natural_lanes(max(t.bits, 8))


def _kernel_vars(term: Term) -> list[Term]:
    return sorted(term.variables(), key=lambda v: v.name)


def _compile(module_text: str, target: str):  # type: ignore[no-untyped-def]
    from pitchfork.backend.machine import compile_module

    return compile_module(module_text, target, isolate=True)


def run_batch(terms: Sequence[Term], target: str, isel: str, seed: int = 0, batch: int = 150,
              lanes_choice: Optional[Callable[[random.Random, int], int]] = None,
              max_report: int = 20) -> Result:
    """Lower, compile and run every term on `target`; compare with the interpreter."""
    from pitchfork.backend.run import ToolMissing, check_tools
    from pitchfork.codegen.kernel import distinct_variables
    from pitchfork.selection.lower import select_instructions

    res = Result(target, isel)
    t0 = time.perf_counter()
    try:
        check_tools(target)
    except ToolMissing as e:
        res.skipped = str(e)
        return res
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    cases: list[Case] = []
    for term in terms:
        # One register of the result type; on HVX of the widest type (LLVM scalarises 64-bit lanes
        # there, and 128 scalarised lanes take seconds to compile and to emulate).
        wide = max(min(t.type.bits, 64) for t in term.walk())
        nat = natural_lanes(target, ScalarType(False, wide) if target == "hvx128" else term.type)
        if lanes_choice is not None:
            lanes = lanes_choice(rng, nat)
        else:
            lanes = max(1, rng.choice([nat // 2, nat, nat, 2 * nat, 3 * nat]))
        n = lanes * max(1, math.ceil(96 / lanes))
        # Inputs, the interpreter and the kernel's arguments are all keyed by variable name, but `c_u8`
        # and `c_i32` are two variables of one name: they run under two names (one value each).
        distinct = distinct_variables(term, [])[0]
        c = Case(distinct, lanes, n, source=term)
        try:
            c.final = select_instructions(distinct, target, isel).final
        except Exception as e:  # noqa: BLE001 - a selection crash is a finding
            c.error = f"select: {type(e).__name__}: {e}"
            res.errors.append(f"{c.error}\n  expression: {to_text(term)}")
            res.findings.append(finding("select", target, isel, c, c.error))
        cases.append(c)

    todo = [c for c in cases if c.final is not None]
    # (No compile-ahead thread: forking an LLVM compile while this thread runs LLVM (the JIT, object
    # emission) can deadlock the child on a lock held at fork time.)
    for start in range(0, len(todo), batch):
        good, mods, errors, failed = _compile_chunk(todo[start:start + batch], target)
        res.errors.extend(errors)
        res.findings.extend(finding("compile", target, isel, c, e) for c, e in failed)
        _run_chunk(good, mods, target, nrng, res, max_report)
        if res.skipped:
            break
    res.seconds = time.perf_counter() - t0
    return res


def _build(cs: list[tuple[int, Case]], target: str = "") -> str:
    from pitchfork.codegen.kernel import add_expression_kernel, new_module

    m = new_module()
    for i, c in cs:
        add_expression_kernel(m, f"k{i}", c.final, c.lanes, _kernel_vars(c.final), target or None)
    return str(m)


def _compile_chunk(chunk: list[Case], target: str):  # type: ignore[no-untyped-def]
    """One module for the chunk; if it does not compile, each kernel alone (failures are findings)."""
    from pitchfork.backend.machine import CompileError

    indexed = list(enumerate(chunk))
    errors: list[str] = []
    failed: list[tuple[Case, str]] = []
    try:
        return indexed, [_compile(_build(indexed, target), target)], errors, failed
    except CompileError as e:  # a finding only if some kernel fails alone too (reported below)
        print(f"note: the {len(chunk)}-kernel module did not compile ({str(e).strip().splitlines()[0][:200]}); "
              "compiling each kernel alone", file=sys.stderr, flush=True)
    good, mods = [], []
    for i, c in indexed:
        err = None
        for _ in range(2):  # LLVM's HVX backend asserts nondeterministically on some i64 code
            try:
                mods.append(_compile(_build([(i, c)], target), target))
                good.append((i, c))
                err = None
                break
            except CompileError as e:
                err = e
        if err is not None:
            errors.append(f"compile: {str(err)[:6000]}\n  expression: {to_text(c.shown)}\n"
                          f"  lowered: {to_text(c.final)}")
            failed.append((c, str(err)))
    return good, mods, errors, failed


def _run_chunk(good, mods, target, nrng, res, max_report) -> None:  # type: ignore[no-untyped-def]
    from pitchfork.backend.harness import Buffer, Call, Scalar
    from pitchfork.codegen.kernel import input_factors
    from pitchfork.backend.run import RunError, run_calls

    if not good:
        return
    calls, envs = [], []
    for i, c in good:
        vs = _kernel_vars(c.term)
        factors = input_factors(c.term)  # elements per output element (> 1 under a vector_reduce)
        env = {v.name: input_values(nrng, v.type, c.n * factors.get(v.name, 1)) for v in vs}
        uniform = [v for v in vs if v.is_uniform_leaf]
        for v in uniform:  # a broadcast: one value (drawn like the others) in every lane
            env[v.name] = np.full_like(env[v.name], env[v.name][int(nrng.integers(len(env[v.name])))])
        if uniform and has_flags(c.term):  # no per-lane redraw (it would break uniformity): mask only
            c.mask = np.broadcast_to(facts_hold(c.term, env), (c.n,)).copy()
        else:
            c.mask = respecting_facts(c.term, env, nrng) if has_flags(c.term) and env else None
        envs.append(env)
        out_t = c.term.type
        out = np.zeros(c.n, dtype=np.uint8 if out_t.bits == 1 else out_t.np_dtype)
        args = [Buffer.output(out)]
        for v in _kernel_vars(c.final):
            a = env.get(v.name)
            if a is None:  # lowering cannot introduce variables; be loud if it does
                raise AssertionError(f"lowered term has unknown variable {v.name}")
            args.append(Buffer.input(a.astype(np.uint8) if v.type.bits == 1 else a,
                                     misalign=int(nrng.integers(0, 4)) * int(nrng.integers(0, 2))))
        args.append(Scalar(c.n, 64))
        calls.append(Call(f"k{i}", args))
    try:
        outs = run_calls(mods, target, calls)
    except RunError as e:
        msg = str(e)
        if target == "hvx128" and "relocation" in msg:
            res.skipped = ("hvx128 kernels do not link (lld: unknown relocation, the known constant-pool "
                           f"problem): {msg.splitlines()[0][:300]}")
            return
        res.errors.append(f"run: {msg[:3000]}")
        res.findings.extend(finding("run", target, res.isel, c, msg) for _, c in good)
        return
    for (i, c), env, out in zip(good, envs, outs):
        got = out[0]
        exp = evaluate(c.term, env)
        if c.term.type.bits == 1:
            exp = exp.astype(np.uint8)
        exp = np.asarray(exp).astype(got.dtype)
        res.ran += 1
        differ = got != exp
        if c.mask is not None:  # lanes whose inputs break a flag's fact: the term promises nothing there
            res.masked += int((~c.mask).sum())
            differ &= c.mask
        if not differ.any():
            continue
        bad = np.nonzero(differ)[0][:6]
        inputs = {k: [int(v[j]) for j in bad] for k, v in env.items()}
        low = evaluate(c.final, env)
        mm = Mismatch(target, res.isel, c.shown, c.final, c.lanes, inputs, [int(exp[j]) for j in bad],
                      [int(got[j]) for j in bad], lowered_ok=bool(np.array_equal(np.asarray(low).astype(got.dtype), exp)))
        res.mismatches.append(mm)
        res.findings.append(finding("mismatch", target, res.isel, c, mm.report()))
        if len(res.mismatches) <= max_report:
            print(mm.report(), file=sys.stderr)


def summary(r: Result) -> str:
    if r.skipped:
        return f"{r.target:9s} isel={r.isel:9s} SKIPPED: {r.skipped}"
    return (f"{r.target:9s} isel={r.isel:9s} ran {r.ran:6d} expressions, {len(r.mismatches)} mismatches, "
            f"{len(r.errors)} errors, {r.seconds:.1f} s" + (f", {r.masked} lanes masked" if r.masked else ""))


def save_findings(results: Sequence[Result], path: str) -> int:
    """Write every finding of `results` to `path` (JSON lines); the number written."""
    import json

    rows = [f for r in results for f in r.findings]
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return len(rows)


def replay(path: str, seed: int = 0) -> list[Result]:
    """Rerun the findings saved in `path` (`--save`), each alone at its own target, isel and lane count
    (inputs are drawn afresh from `seed`: a mismatch that needs particular inputs may want several seeds)."""
    import json

    from fpir.text import parse

    rows = [json.loads(line) for line in open(path) if line.strip()]
    out = []
    for target, isel in sorted({(r["target"], r["isel"]) for r in rows}):
        mine = [r for r in rows if (r["target"], r["isel"]) == (target, isel)]
        terms = [_with_uniform(parse(r["expression"]), set(r.get("uniform", ()))) for r in mine]
        lanes = iter([r["lanes"] for r in mine])
        out.append(run_batch(terms, target, isel, seed=seed, batch=1, lanes_choice=lambda rng, nat: next(lanes)))
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="expressions per target and isel")
    p.add_argument("--target", action="append", choices=TARGETS, help="repeatable (default: all)")
    p.add_argument("--isel", action="append", choices=ISELS, help="repeatable (default: both)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--batch", type=int, default=150, help="kernels per module / emulator run")
    p.add_argument("--max-bits", type=int, default=64, choices=(8, 16, 32, 64),
                   help="widest element type in the expressions")
    p.add_argument("--overflow", action="store_true",
                   help="terms as the Halide frontend builds them (nsw flags, i32/i64 averaging and "
                        "rounding-shift spellings): random_overflow_terms")
    p.add_argument("--uniform", action="store_true",
                   help="make each variable a uniform leaf (a broadcast, one value in every lane) with "
                        "probability 1/2, as the Halide frontend makes its splats: with_uniform_leaves")
    p.add_argument("--reductions", action="store_true",
                   help="terms under vector_reduce_<op>_x<f>, half of them dot-product / pair-sum / "
                        "sum-of-absolute-difference shapes: random_reductions")
    p.add_argument("--families", action="store_true",
                   help="issue 11's lifting-family spellings and HVX instruction forms with random "
                        "operands: random_family_terms")
    p.add_argument("--save", metavar="PATH",
                   help="write every mismatch and error as a reproducer (JSON lines: target, isel, lanes, "
                        "expression text, message) to PATH; rerun them with --replay PATH")
    p.add_argument("--replay", metavar="PATH",
                   help="rerun the findings saved with --save, each alone at its own target, isel and "
                        "lane count (the generator options are ignored)")
    args = p.parse_args(argv)
    if args.replay:
        results = replay(args.replay, args.seed)
        for r in results:
            for e in r.errors[:20]:
                print("ERROR " + e, file=sys.stderr)
            print(summary(r), flush=True)
        if args.save:
            save_findings(results, args.save)
        return int(any(r.mismatches or r.errors for r in results))
    if args.overflow + args.reductions + args.families > 1:
        p.error("--overflow, --reductions and --families are three generators: pick one")
    if args.families:
        terms = random_family_terms(args.count, args.seed, args.max_bits, min(args.depth, 3))
    elif args.reductions:
        terms = random_reductions(args.count, args.seed, min(args.depth, 3), args.max_bits)
    elif args.overflow:
        terms = random_overflow_terms(args.count, args.seed, min(args.depth, 3))
    else:
        terms = random_terms(args.count, args.seed, args.depth, args.max_bits)
    if args.uniform:
        terms = with_uniform_leaves(terms, args.seed)
    status = 0
    results = []
    for target in args.target or TARGETS:
        for isel in args.isel or ISELS:
            r = run_batch(terms, target, isel, seed=args.seed, batch=args.batch)
            for e in r.errors[:20]:
                print("ERROR " + e, file=sys.stderr)
            print(summary(r), flush=True)
            status |= bool(r.mismatches or r.errors)
            results.append(r)
            if args.save:  # after each target/isel, so an interrupted run keeps what it found
                save_findings(results, args.save)
    if args.save:
        print(f"{sum(len(r.findings) for r in results)} findings written to {args.save}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
