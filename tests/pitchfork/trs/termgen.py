"""Hypothesis strategies for random well-typed FPIR terms, and input generation.

`integer_terms()` draws the integer expressions programmers write (casts, + - * / % << >> & | ^,
min/max, select over comparisons, abs) over u8 .. i32 variables and constants, mixed with the idiom
shapes the lifting rules target (widening arithmetic, averaging with the rounding constant folded in,
rounding shifts, clamps in either nesting, select spellings of abs/absd/saturating_sub, Q15 products,
`/ 2^k` for `>> k`), so that rules actually fire. `fpir_terms()` adds every FPIR op, for the bounds
soundness test. Every term is built with fpir.ops.make, so it type-checks; a variable's name carries
its type, so one name never has two types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from fpir.ops import make
from fpir.term import Term, const, var
from fpir.types import FPIRTypeError, ScalarType, i8, i16, i32, u8, u16, u32

SMALL = (u8, i8, u16, i16, u32, i32)
NAMES = "abcd"
Draw = Callable[[Any], Any]


def edge_values(t: ScalarType) -> list[int]:
    vals = {t.min, t.max, 0, 1, t.wrap(-1), t.min + 1, t.max - 1, t.max // 2, t.max // 2 + 1, 2, 7, 8}
    return sorted(v for v in vals if t.contains(v))


def C(v: int, t: ScalarType) -> Term:
    return const(t.wrap(v), t)


def wide(t: ScalarType) -> ScalarType:
    return t.widen()


class Gen:
    """Draws terms of a requested type from a hypothesis `draw` function."""

    def __init__(self, draw: Draw, fpir: bool = False, max_depth: int = 4) -> None:
        self.draw, self.fpir, self.max_depth = draw, fpir, max_depth

    def pick(self, seq: Any) -> Any:
        return self.draw(st.sampled_from(list(seq)))

    def chance(self, p: float) -> bool:
        return self.draw(st.floats(0, 1)) < p

    # ---- leaves -------------------------------------------------------------------------------
    def variable(self, t: ScalarType) -> Term:
        return var(f"{self.pick(NAMES)}{t.name}", t)

    def constant(self, t: ScalarType) -> Term:
        choice = self.draw(st.integers(0, 3))
        if choice == 0:
            return C(self.pick(edge_values(t)), t)
        if choice == 1:
            return C(1 << self.draw(st.integers(0, t.bits - 1)), t)
        return C(self.draw(st.integers(t.min, t.max)), t)

    def leaf(self, t: ScalarType) -> Term:
        return self.constant(t) if self.chance(0.2) else self.variable(t)

    def amount(self, t: ScalarType) -> Term:
        """A shift amount for a value of type t: usually a small constant, sometimes a term."""
        s = t if self.chance(0.7) else t.with_sign(not t.signed)
        if self.chance(0.75):
            lo = -2 if s.signed else 0
            return C(self.draw(st.integers(lo, t.bits)), s)
        return self.term(s, 2)

    # ---- terms --------------------------------------------------------------------------------
    def term(self, t: ScalarType, depth: int | None = None) -> Term:
        depth = self.max_depth if depth is None else depth
        for _ in range(5):
            try:
                return self._term(t, depth)
            except FPIRTypeError:
                continue
        return self.variable(t)

    def _term(self, t: ScalarType, depth: int) -> Term:
        if depth <= 0:
            return self.leaf(t)
        kinds = ["leaf", "binop", "binop", "cast", "shift", "divmod", "select", "minmax", "idiom", "idiom",
                 "idiom", "abs"]
        if self.fpir:
            kinds += ["fpir", "fpir", "fpir"]
        kind = self.pick(kinds)
        d = depth - 1
        if kind == "leaf":
            return self.leaf(t)
        if kind == "binop":
            op = self.pick(["add", "sub", "mul", "and", "or", "xor"])
            return make(op, self.term(t, d), self.term(t, d))
        if kind == "minmax":
            return make(self.pick(["min", "max"]), self.term(t, d), self.term(t, d))
        if kind == "cast":
            s = self.pick([x for x in SMALL if x != t])
            return make("cast", self.term(s, d), type=t)
        if kind == "shift":
            return make(self.pick(["shl", "shr"]), self.term(t, d), self.amount(t))
        if kind == "divmod":
            op = self.pick(["div", "mod"])
            den = C(1 << self.draw(st.integers(0, t.bits - 2)), t) if self.chance(0.7) else self.term(t, d)
            return make(op, self.term(t, d), den)
        if kind == "select":
            s = self.pick(SMALL)
            cmp = make(self.pick(["lt", "le", "gt", "ge", "eq", "ne"]), self.term(s, d), self.term(s, d))
            return make("select", cmp, self.term(t, d), self.term(t, d))
        if kind == "abs":
            if t.signed:
                return make("reinterpret", make("abs", self.term(t, d)), type=t)
            return make("abs", self.term(t.to_signed(), d))
        if kind == "fpir":
            return self.fpir_op(t, d)
        return self.idiom(t, d)

    # ---- idioms (the integer spellings the lifting rules target) --------------------------------
    def idiom(self, t: ScalarType, d: int) -> Term:
        narrow = t.narrow() if t.bits > 8 else None
        w = t.widen() if t.bits < 32 else None
        options = ["absd_select", "satsub_select", "bit_avg"]
        if t.signed:
            options += ["abs_select"]
        if narrow is not None:
            options += ["widen_op", "widen_op", "widen_const", "widen_shift", "mac"]
        if w is not None:
            options += ["avg", "avg", "clamp", "clamp", "round_shift", "sat_shl", "mulhi", "absd_wide"]
        kind = self.pick(options)
        if kind == "widen_op":
            s = narrow.with_sign(self.chance(0.5)) if self.chance(0.3) else narrow  # type: ignore[union-attr]
            s2 = s if self.chance(0.8) else s.with_sign(not s.signed)
            op = self.pick(["add", "sub", "mul", "mul"])
            return make(op, make("cast", self.term(s, d), type=t), make("cast", self.term(s2, d), type=t))
        if kind == "widen_const":
            a = make("cast", self.term(narrow, d), type=t)  # type: ignore[arg-type]
            return make(self.pick(["add", "sub", "mul", "shl", "shr", "div"]), a, self.constant(t))
        if kind == "widen_shift":
            a = make("cast", self.term(narrow, d), type=t)  # type: ignore[arg-type]
            k = self.draw(st.integers(1, t.bits - 1))
            return make(self.pick(["shl", "mul"]), a, C(k if self.chance(0.5) else 1 << min(k, t.bits - 2), t))
        if kind == "mac":
            a = make("cast", self.term(narrow, d), type=t)  # type: ignore[arg-type]
            b = make("cast", self.term(narrow, d), type=t)  # type: ignore[arg-type]
            return make(self.pick(["add", "sub"]), self.term(t, d), make("mul", a, b))
        if kind == "bit_avg":
            a, b = self.term(t, d), self.term(t, d)
            if self.chance(0.5):
                return make("add", make("and", a, b), make("shr", make("xor", a, b), C(1, t)))
            return make("sub", make("or", a, b), make("shr", make("xor", a, b), C(1, t)))
        if kind == "abs_select":
            a = self.term(t, d)
            neg = make("sub", C(0, t), a)
            cmp = self.pick(["lt", "gt"])
            if cmp == "lt":
                return make("select", make("lt", a, C(0, t)), neg, a)
            return make("select", make("gt", a, C(0, t)), a, neg)
        if kind == "absd_select":
            a, b = self.term(t, d), self.term(t, d)
            op = self.pick(["gt", "ge", "lt", "le"])
            x, y = (make("sub", a, b), make("sub", b, a))
            return make("select", make(op, a, b), *((x, y) if op in ("gt", "ge") else (y, x)))
        if kind == "satsub_select":
            a, b = self.term(t, d), self.term(t, d)
            choice = self.draw(st.integers(0, 2))
            if choice == 0:
                return make("select", make("gt", a, b), make("sub", a, b), C(0, t))
            if choice == 1:
                return make("sub", make("max", a, b), b)
            return make("sub", a, make("min", a, b))
        assert w is not None
        ws = w if self.chance(0.7) else w.with_sign(not w.signed)
        a = make("cast", self.term(t, d), type=ws)
        b = make("cast", self.term(t, d), type=ws)
        div = self.chance(0.5)

        def shr(x: Term, k: int) -> Term:
            return make("div", x, C(1 << k, x.type)) if div else make("shr", x, C(k, x.type))

        if kind == "avg":
            s = make("add", a, b)
            if self.chance(0.6):
                s = make("add", s, C(1, ws))
            if self.chance(0.2):
                s = make("sub", a, b)
            inner = shr(s, self.draw(st.integers(1, 2)))
            return make("cast", inner, type=t)
        if kind == "round_shift":
            k = self.draw(st.integers(1, t.bits - 1))
            x = a if self.chance(0.5) else make("add", a, b)
            return make("cast", shr(make("add", x, C(1 << (k - 1), ws)), k), type=t)
        if kind == "mulhi":
            k = self.draw(st.integers(t.bits - 2, t.bits))
            p = make("mul", a, b)
            if self.chance(0.6):
                p = make("add", p, C(1 << (k - 1), ws))
            return self.clamp(shr(p, k), t)
        if kind == "sat_shl":
            k = self.draw(st.integers(0, t.bits))
            return self.clamp(make("shl", a, C(k, ws)), t)
        if kind == "absd_wide":
            if self.chance(0.5):
                diff = make("sub", a, b)
                return make("cast", make("abs", diff), type=t)
            return make("cast", make("select", make("gt", a, b), make("sub", a, b), make("sub", b, a)), type=t)
        # clamp of a wide expression
        x = make(self.pick(["add", "sub", "mul"]), a, b)
        return self.clamp(x, t)

    def clamp(self, x: Term, t: ScalarType) -> Term:
        """cast<t>(clamp(x, t.min, t.max)), with the nesting / sidedness drawn."""
        s = x.type
        lo = C(t.min, s) if s.contains(t.min) else None
        hi = C(t.max, s) if s.contains(t.max) else None
        style = self.draw(st.integers(0, 3))
        if lo is not None and hi is not None and style <= 1:
            v = make("min", make("max", x, lo), hi) if style == 0 else make("max", make("min", x, hi), lo)
        elif hi is not None and style == 2:
            v = make("min", x, hi)
        elif lo is not None:
            v = make("max", x, lo)
        else:
            v = x
        return make("cast", v, type=t)

    # ---- FPIR ops -------------------------------------------------------------------------------
    def fpir_op(self, t: ScalarType, d: int) -> Term:
        narrow = t.narrow() if t.bits > 8 else None
        options = ["abs", "absd", "satcast", "same2", "rshift", "mulshr", "satshl"]
        if narrow is not None:
            options += ["widening", "widening", "extending"]
        kind = self.pick(options)
        if kind == "widening" and narrow is not None:
            op = self.pick(["widening_add", "widening_sub", "widening_mul", "widening_shl", "widening_shr"])
            if op == "widening_sub":
                if not t.signed:
                    return self.fpir_op(t, d)
                s = narrow.with_sign(self.chance(0.5))
                return make(op, self.term(s, d), self.term(s, d))
            if op == "widening_mul":
                if t.signed and self.chance(0.5):
                    return make(op, self.term(narrow.to_unsigned(), d), self.term(narrow, d))
                return make(op, self.term(narrow, d), self.term(narrow, d))
            if op in ("widening_shl", "widening_shr"):
                return make(op, self.term(narrow, d), self.amount(narrow))
            return make(op, self.term(narrow, d), self.term(narrow, d))
        if kind == "extending" and narrow is not None:
            op = self.pick(["extending_add", "extending_sub", "extending_mul"])
            return make(op, self.term(t, d), self.term(narrow, d))
        if kind == "abs":
            if t.signed:
                return make("reinterpret", make("abs", self.term(t, d)), type=t)
            return make("abs", self.term(t.with_sign(self.chance(0.5)), d))
        if kind == "absd":
            s = t.with_sign(self.chance(0.5))
            r = make("absd", self.term(s, d), self.term(s, d))
            return make("reinterpret", r, type=t)
        if kind == "satcast":
            return make("saturating_cast", self.term(self.pick(SMALL), d), type=t)
        if kind == "same2":
            op = self.pick(["saturating_add", "saturating_sub", "halving_add", "halving_sub",
                            "rounding_halving_add"])
            return make(op, self.term(t, d), self.term(t, d))
        if kind == "rshift":
            return make(self.pick(["rounding_shr", "rounding_shl"]), self.term(t, d), self.amount(t))
        if kind == "satshl":
            return make("saturating_shl", self.term(t, d), self.amount(t))
        op = self.pick(["mul_shr", "rounding_mul_shr"])
        z = C(self.draw(st.integers(0, 2 * t.bits + 1)), t.to_unsigned()) if self.chance(0.8) \
            else self.term(t.to_unsigned(), 1)
        return make(op, self.term(t, d), self.term(t, d), z)


@st.composite
def integer_terms(draw: Draw, max_depth: int = 4) -> Term:
    t = draw(st.sampled_from(SMALL))
    return Gen(draw, fpir=False, max_depth=max_depth).term(t)


@st.composite
def fpir_terms(draw: Draw, max_depth: int = 3) -> Term:
    t = draw(st.sampled_from(SMALL))
    return Gen(draw, fpir=True, max_depth=max_depth).term(t)


def inputs_for(term: Term, rng: np.random.Generator, lanes: int = 48) -> dict[str, np.ndarray]:
    """Random values for each variable, half of the lanes edge values (shuffled per variable)."""
    env: dict[str, np.ndarray] = {}
    for v in term.variables():
        t = v.type
        edges = np.array(edge_values(t), dtype=object)
        n_edge = lanes // 2
        e = rng.choice(edges, n_edge)
        r = [int(x) for x in rng.integers(t.min, t.max, lanes - n_edge, endpoint=True, dtype=np.int64)] \
            if t.bits < 64 else [int(rng.integers(-2**62, 2**62)) for _ in range(lanes - n_edge)]
        vals = np.array([int(x) for x in e] + r, dtype=object)
        rng.shuffle(vals)
        env[v.name] = vals.astype(t.np_dtype)
    return env
