"""Halide 21's float math, emitted as LLVM IR the way Halide's own code generator emits it.

Halide expands `exp_f32`, `log_f32` (CodeGen_LLVM: `halide_exp` / `halide_log` of IROperator.cpp,
scalar and vector alike) and float `lerp` (Lerp.cpp) into plain float arithmetic before its LLVM
code generation; the helpers here write the same operations in the same order, so a pipeline
compiled by PITCHFORK computes what Halide's computes (bit for bit where LLVM makes the same
contraction choices, always under strict_float). Rounding calls map to LLVM's intrinsics with
Halide's semantics (`round` is round-half-to-even: llvm.roundeven, which is what Halide's x86
`vroundps $0` and its Neon `frintn` compute).

`FloatOps` is a small builder wrapper: every arithmetic instruction and comparison carries the
fast-math flags Halide sets on float code (`reassoc nnan ninf nsz contract afn`), or none when the
pipeline is strict (Halide's strict_float: its statement then has `strict_*` intrinsics and its
module has no fast-math flags at all).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

#: Halide's fast-math flags on float instructions (CodeGen_LLVM, unless the target has strict_float)
FAST_MATH = ("reassoc", "nnan", "ninf", "nsz", "contract", "afn")

# halide_exp / halide_log constants (IROperator.cpp), as the float32 values Halide writes
_LN2_PART1 = float(np.float32(0.6931457519))
_LN2_PART2 = float(np.float32(1.4286067653e-6))
_ONE_OVER_LN2 = float(np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
_LOG2 = float(np.float32(np.log(2.0)))  # logf(2.0): float32 ln 2
EXP_COEFF = [0.00031965933071842413, 0.00119156835564003744, 0.00848988645943932717, 0.04160188091348320655,
             0.16667983794100929562, 0.49999899033463041098, 1.0, 1.0]
LOG_COEFF = [0.05111976432738144643, -0.11793923497136414580, 0.14971993724699017569, -0.16862004708254804686,
             0.19980668101718729313, -0.24991211576292837737, 0.33333435275479328386, -0.50000106292873236491,
             1.0, 0.0]


_ROUNDING = ("floor", "ceil", "trunc", "roundeven")


def _is_f32(t: ir.Type) -> bool:
    return isinstance(t.element if isinstance(t, ir.VectorType) else t, ir.FloatType)


def _is_half(t: ir.Type) -> bool:
    return isinstance(t.element if isinstance(t, ir.VectorType) else t, ir.HalfType)


def _constant_value(v: ir.Value) -> float:
    """The value of a float constant (scalar, or a vector with every lane equal), else 0.0."""
    if not isinstance(v, ir.Constant):
        return 0.0
    k = v.constant
    if isinstance(k, list):
        lanes = {x.constant if isinstance(x, ir.Constant) else x for x in k}
        k = lanes.pop() if len(lanes) == 1 else None
    return float(k) if isinstance(k, (int, float)) else 0.0


def f32(v: float) -> float:
    """`v` rounded to float32 (the value a C++ `float` literal holds)."""
    return float(np.float32(v))


def type_suffix(t: ir.Type) -> str:
    """LLVM's overload suffix of a float type: f16, f32, f64, v8f32."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    return "f64" if isinstance(t, ir.DoubleType) else "f16" if isinstance(t, ir.HalfType) else "f32"


def with_lanes(t: ir.Type, lanes: int) -> ir.Type:
    """`t` as a vector of `lanes` lanes, or `t` itself for a scalar (lanes 0): the float16/bfloat16
    bit-level conversions build every integer and float type they use this way."""
    return ir.VectorType(t, lanes) if lanes else t


def like(v: ir.Value, t: ir.Type) -> ir.Type:
    """The scalar type `t` with the lane count of `v`'s type (a vector of as many lanes, or `t`)."""
    return with_lanes(t, v.type.count if isinstance(v.type, ir.VectorType) else 0)


def declare(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
    """The overloaded intrinsic `name.<suffix of ret>` in `module` (declared once)."""
    full = f"{name}.{type_suffix(ret)}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name=full)
    return fn


class FloatOps:
    """Float instructions at a builder's position, with Halide's fast-math flags unless `strict`."""

    def __init__(self, b: ir.IRBuilder, module: ir.Module, strict: bool, target: str = "") -> None:
        self.b, self.module, self.strict, self.target = b, module, strict, target
        self.flags: tuple[str, ...] = () if strict else FAST_MATH

    # ---- constants and shapes --------------------------------------------------------------
    @staticmethod
    def const(t: ir.Type, v: float | int) -> ir.Constant:
        """A constant of `t` (a scalar or a vector: every lane `v`)."""
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [ir.Constant(t.element, v)] * t.count)
        return ir.Constant(t, v)

    @staticmethod
    def int_type_of(t: ir.Type) -> ir.Type:
        """The integer type of `t`'s width (lane by lane)."""
        if isinstance(t, ir.VectorType):
            return ir.VectorType(FloatOps.int_type_of(t.element), t.count)
        return ir.IntType(64 if isinstance(t, ir.DoubleType) else 32)

    # ---- arithmetic ------------------------------------------------------------------------
    def _flag(self, inst: ir.Instruction) -> ir.Instruction:
        inst.flags.extend(self.flags)  # type: ignore[attr-defined]
        return inst

    def add(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flag(self.b.fadd(a, c))

    def sub(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flag(self.b.fsub(a, c))

    def mul(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flag(self.b.fmul(a, c))

    def div(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flag(self.b.fdiv(a, c))

    def cmp(self, op: str, a: ir.Value, c: ir.Value) -> ir.Value:
        """C's comparison operators on floats (ordered, except `!=`), as Halide emits them."""
        if op == "!=":
            return self.b.fcmp_unordered("!=", a, c, flags=self.flags)
        return self.b.fcmp_ordered(op, a, c, flags=self.flags)

    def min(self, a: ir.Value, c: ir.Value) -> ir.Value:
        if self.target == "arm64":
            return self.intrinsic("aarch64.neon.fmin", [a, c])
        return self.b.select(self.cmp("<", a, c), a, c)

    def max(self, a: ir.Value, c: ir.Value) -> ir.Value:
        """Halide's float max (min alike): a > b ? a : b on x86; on arm64 Neon's fmax (CodeGen_ARM,
        float16 / float32 / float64, strict or not: its module calls llvm.aarch64.neon.fmax), which
        orders -0 below +0 and returns a NaN operand, where the select would not."""
        if self.target == "arm64":
            return self.intrinsic("aarch64.neon.fmax", [a, c])
        return self.b.select(self.cmp(">", a, c), a, c)

    def intrinsic(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        """`llvm.<name>` over the type of the first argument (`llvm.floor.v8f32`)."""
        if self.target == "hvx128" and name in _ROUNDING and _is_f32(args[0].type):
            return self.rounding(name, args[0])
        fn = declare(self.module, f"llvm.{name}", args[0].type, [a.type for a in args])
        return self.b.call(fn, list(args), fastmath=self.flags)

    def rounding(self, name: str, x: ir.Value) -> ir.Value:
        """floor/ceil/trunc/roundeven of float32 on integer operations (exact, so equal to libm's).
        On Hexagon LLVM lowers these intrinsics to floorf & co. calls, and the bare-metal harness has
        no C library: computed inline instead, lane-generic."""
        b, t = self.b, x.type
        it = self.int_type_of(t)
        c = lambda v: self.const(it, v)  # noqa: E731
        bits = b.bitcast(x, it)
        e = b.sub(b.and_(b.lshr(bits, c(23)), c(0xFF)), c(127))  # unbiased exponent
        # |x| < 1: +-0 keeps its sign; |x| >= 2^23 (and inf/NaN): already integral
        frac_mask = b.lshr(c(0x7FFFFF), b.select(b.icmp_signed("<", e, c(0)), c(0), e))
        cut = b.and_(bits, b.xor(frac_mask, c(-1)))
        small = b.and_(bits, c(-(1 << 31)))  # the sign alone
        tr = b.select(b.icmp_signed("<", e, c(0)), small, b.select(b.icmp_signed(">", e, c(22)), bits, cut))
        tf = b.bitcast(tr, t)
        if name == "trunc":
            return tf
        strict = FloatOps(b, self.module, True)
        one = self.const(t, 1.0)
        if name == "floor":
            return b.select(strict.cmp("<", x, tf), strict.sub(tf, one), tf)
        if name == "ceil":
            return b.select(strict.cmp(">", x, tf), strict.add(tf, one), tf)
        # roundeven: the fraction x - trunc(x) is exact for |x| < 2^23
        fr = strict.sub(x, tf)
        half = self.const(t, 0.5)
        away = b.select(strict.cmp("<", x, self.const(t, 0.0)), strict.sub(tf, one), strict.add(tf, one))
        mag = strict.intrinsic("fabs", [fr])
        odd = b.icmp_signed("!=", b.and_(b.fptosi(tf, it), c(1)), c(0))
        up = b.or_(strict.cmp(">", mag, half), b.and_(strict.cmp("==", mag, half), odd))
        return b.select(up, away, tf)

    def mod(self, a: ir.Value, c: ir.Value) -> ir.Value:
        """Halide's float `%`: a - b * floor(a / b), simplified as its CodeGen_LLVM simplifies it: a
        constant nonzero divisor becomes a product with its reciprocal, rounded to the type (Halide's
        simplifier folds x / c into x * (1 / c) for floats; x % 7.0f multiplies by 0.142857149f)."""
        k = _constant_value(c)
        if k:
            inv = 1.0 / k
            q = self.mul(a, self.const(c.type, float(np.float16(inv)) if _is_half(c.type)
                                       else f32(inv) if _is_f32(c.type) else inv))
        else:
            q = self.div(a, c)
        return self.sub(a, self.mul(c, self.intrinsic("floor", [q])))

    # ---- Halide's expansions ---------------------------------------------------------------
    def polynomial(self, x: ir.Value, coeff: Sequence[float]) -> ir.Value:
        """IROperator.cpp's evaluate_polynomial: even and odd terms in x^2, highest order first."""
        t = x.type
        x2 = self.mul(x, x)
        even: ir.Value = self.const(t, f32(coeff[0]))
        odd: ir.Value = self.const(t, f32(coeff[1]))
        for i in range(2, len(coeff)):
            c = f32(coeff[i])
            if i % 2 == 0:
                even = self.mul(even, x2) if c == 0.0 else self.add(self.mul(even, x2), self.const(t, c))
            else:
                odd = self.mul(odd, x2) if c == 0.0 else self.add(self.mul(odd, x2), self.const(t, c))
        if len(coeff) % 2 == 0:
            return self.add(self.mul(even, x), odd)
        return self.add(self.mul(odd, x), even)

    def exp(self, x: ir.Value) -> ir.Value:
        """halide_exp: 2^k * p(x - k ln 2), k = floor(x / ln 2), overflow to inf, underflow to 0."""
        t = x.type
        it = self.int_type_of(t)
        k_real = self.intrinsic("floor", [self.mul(x, self.const(t, _ONE_OVER_LN2))])
        k = self.b.fptosi(k_real, it)
        r = self.sub(x, self.mul(k_real, self.const(t, _LN2_PART1)))
        r = self.sub(r, self.mul(k_real, self.const(t, _LN2_PART2)))
        result = self.polynomial(r, EXP_COEFF)
        biased = self.b.add(k, self.const(it, 127))
        two_to_the_n = self.b.bitcast(self.b.shl(biased, self.const(it, 23)), t)
        result = self.mul(result, two_to_the_n)
        # Halide's `biased < 255` and `biased > 0` on k itself: its int32 add has no signed wrap (nsw),
        # so LLVM folds them to k < 128 and k > -127 in its modules, which keeps an infinite x's
        # saturated k (INT_MAX from fcvtzs) an overflow to inf where the wrapped sum would give 0
        inf = self.const(t, float("inf"))
        result = self.b.select(self.b.icmp_signed("<", k, self.const(it, 128)), result, inf)
        return self.b.select(self.b.icmp_signed(">", k, self.const(it, -127)), result, self.const(t, 0.0))

    def log(self, x: ir.Value) -> ir.Value:
        """halide_log: the exponent split off (mantissa in [0.75, 1.5)), a polynomial in m - 1;
        NaN below 0, -inf at 0."""
        t = x.type
        it = self.int_type_of(t)
        use_nan = self.cmp("<", x, self.const(t, 0.0))
        use_neg_inf = self.cmp("==", x, self.const(t, 0.0))
        exceptional = self.b.or_(use_nan, use_neg_inf)
        patched = self.b.select(exceptional, self.const(t, 1.0), x)
        iv = self.b.bitcast(patched, it)
        no_exponent = self.b.and_(iv, self.const(it, 0x807FFFFF - (1 << 32)))
        new_exponent = self.b.ashr(no_exponent, self.const(it, 22))
        new_biased = self.b.sub(self.const(it, 127), new_exponent)
        old_biased = self.b.ashr(iv, self.const(it, 23))
        exponent = self.b.sub(old_biased, new_biased)
        blended = self.b.or_(self.b.and_(iv, self.const(it, 0x807FFFFF - (1 << 32))),
                             self.b.shl(new_biased, self.const(it, 23)))
        reduced = self.b.bitcast(blended, t)
        x1 = self.sub(reduced, self.const(t, 1.0))
        result = self.polynomial(x1, LOG_COEFF)
        result = self.add(result, self.mul(self.b.sitofp(exponent, t), self.const(t, _LOG2)))
        special = self.b.select(use_nan, self.const(t, float("nan")), self.const(t, float("-inf")))
        return self.b.select(exceptional, special, result)

    def halide_pow(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """CodeGen_LLVM's pow where x > 0 is not provable (what Halide computes a float32 pow in, and a
        float16 pow widened to float32):
        r = halide_exp(halide_log(|x|) * y), then select(x > 0, r, y == 0, 1, x == 0, 0, y != floor(y),
        NaN, floor(y) % 2 == 0, r, -r), the `%` as floor(y) - floor(floor(y) * 0.5) * 2 (so an infinite
        y is odd: inf - inf is NaN). The selects carry no fast-math flags, so the NaN of a negative x to
        a non-integer power stays a NaN (Halide's x86 conversion to float16 then makes it +inf).

        Halide's modules differ by target in two places, which matter where flags do not hide them (a
        strict_float target): x86 (pow_f16 widened to pow_f32 first) tests y != floor(y) unordered and
        negates as 0 - r (+0 for r = +0); arm_fp16 (the expansion built on half) tests it ordered (a NaN
        y is not "non-integer": NaN propagates through r) and negates with fneg."""
        t = x.type
        arm = self.target == "arm64"
        r = self.exp(self.mul(self.log(self.intrinsic("fabs", [x])), y))
        iy = self.intrinsic("floor", [y])
        two_halves = self.mul(self.intrinsic("floor", [self.mul(iy, self.const(t, 0.5))]), self.const(t, 2.0))
        even = self.cmp("==", self.sub(iy, two_halves), self.const(t, 0.0))
        neg = self.b.fneg(r, flags=self.flags) if arm else self.sub(self.const(t, 0.0), r)
        v = self.b.select(even, r, neg)
        fraction = (self.b.fcmp_ordered("!=", iy, y, flags=self.flags) if arm else self.cmp("!=", iy, y))
        v = self.b.select(fraction, self.const(t, float("nan")), v)
        v = self.b.select(self.cmp("==", x, self.const(t, 0.0)), self.const(t, 0.0), v)
        v = self.b.select(self.cmp("==", y, self.const(t, 0.0)), self.const(t, 1.0), v)
        return self.b.select(self.cmp(">", x, self.const(t, 0.0)), r, v)

    def lerp(self, zero: ir.Value, one: Callable[[], ir.Value], w: ir.Value) -> ir.Value:
        """Lerp.cpp for float values and a float weight: zero * (1 - w) + one * w, in the order
        Halide's code generator emits that sum: the left product before `one` is computed (`one()`
        emits it). The order is the register allocator's: a lerp of two gathered lerps
        (bilateral_grid's slicing, `lerp(lerp(..), lerp(..), zf)`) keeps zero * (1 - zf) live
        through the second half instead of zero and 1 - zf, one ymm register fewer, as Halide's."""
        inv = self.sub(self.const(w.type, 1.0), w)
        left = self.mul(zero, inv)
        return self.add(left, self.mul(one(), w))
