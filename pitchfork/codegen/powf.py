"""powf for compiled pipelines, written once for LLVM IR and once for numpy, with the same operations.

Codegen emits it for `pow_f32` on hvx128 only (the bare-metal Hexagon harness has no C library and
Hexagon has no double-precision multiply in hardware); on x86 and arm64 `pow_f32` is Halide 21's own
expansion (CodeGen_LLVM's exp(log(|x|) * y) with selects, FloatOps.halide_pow in float_math.py), which
is what Halide's code computes (not the C library's powf). It computes
2^(y·log2 x) in double-float (hi + lo float32 pairs, exact products by Veltkamp/Dekker splitting, no
FMA), then rounds once: over 10^6 random inputs it gave the correctly rounded float32 result in all
but a few cases (off by one ulp); see tests/pitchfork/codegen/test_powf.py.

`algorithm(ops, x, y)` is the single definition; `NumpyOps` runs it on float32 arrays (the reference
twin used by camera_pipe's numpy check) and `IROps` emits it with an llvmlite IRBuilder, operation for
operation (no fast-math flags, so LLVM keeps every rounding). Domain: x >= 0 (x < 0 gives NaN; C's
powf gives ±|x|^y for integral y); subnormal results lose precision (two scalings).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from llvmlite import ir

F = np.float32
_LN2 = np.log(2.0)
LN2_HI = F(_LN2)
LN2_LO = F(_LN2 - float(LN2_HI))
INV_LN2_HI = F(1 / _LN2)
INV_LN2_LO = F(1 / _LN2 - float(INV_LN2_HI))
SPLIT = F(4097.0)  # 2^12 + 1: Veltkamp splitting of a 24-bit significand into two 12-bit halves
#: 2 atanh(s) = 2s + s^3 (2/3 + 2/5 s^2 + ...): the coefficients of the tail polynomial in z = s^2
ATANH = [F(2 / k) for k in (3, 5, 7, 9, 11, 13, 15)]
#: exp(q) = 1 + q + q^2 (1/2 + q/6 + ...)
EXP = [F(1 / f) for f in (2, 6, 24, 120, 720, 5040, 40320)]


class Ops(Protocol):
    def c(self, v: float) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def sub(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def div(self, a: Any, b: Any) -> Any: ...
    def lt(self, a: Any, b: Any) -> Any: ...
    def gt(self, a: Any, b: Any) -> Any: ...
    def eq(self, a: Any, b: Any) -> Any: ...
    def select(self, c: Any, a: Any, b: Any) -> Any: ...
    def bits(self, a: Any) -> Any: ...  # float32 -> int32 bit pattern
    def from_bits(self, a: Any) -> Any: ...
    def ic(self, v: int) -> Any: ...
    def iadd(self, a: Any, b: Any) -> Any: ...
    def iand(self, a: Any, b: Any) -> Any: ...
    def ior(self, a: Any, b: Any) -> Any: ...
    def ishl(self, a: Any, n: int) -> Any: ...
    def ishr(self, a: Any, n: int) -> Any: ...  # logical
    def igt(self, a: Any, b: Any) -> Any: ...
    def ilt(self, a: Any, b: Any) -> Any: ...
    def iselect(self, c: Any, a: Any, b: Any) -> Any: ...
    def to_float(self, a: Any) -> Any: ...  # int32 -> float32 (exact here)
    def trunc_int(self, a: Any) -> Any: ...  # float32 -> int32 toward zero (|a| < 2^31 here)
    def or_(self, a: Any, b: Any) -> Any: ...


def _two_sum(o: Ops, a: Any, b: Any) -> tuple[Any, Any]:
    s = o.add(a, b)
    bb = o.sub(s, a)
    err = o.add(o.sub(a, o.sub(s, bb)), o.sub(b, bb))
    return s, err


def _fast_two_sum(o: Ops, a: Any, b: Any) -> tuple[Any, Any]:  # |a| >= |b|
    s = o.add(a, b)
    return s, o.sub(b, o.sub(s, a))


def _split(o: Ops, a: Any) -> tuple[Any, Any]:
    t = o.mul(o.c(SPLIT), a)
    hi = o.sub(t, o.sub(t, a))
    return hi, o.sub(a, hi)


def _two_prod(o: Ops, a: Any, b: Any) -> tuple[Any, Any]:
    p = o.mul(a, b)
    ah, al = _split(o, a)
    bh, bl = _split(o, b)
    err = o.add(o.add(o.add(o.sub(o.mul(ah, bh), p), o.mul(ah, bl)), o.mul(al, bh)), o.mul(al, bl))
    return p, err


def _poly(o: Ops, z: Any, coeffs: list[Any]) -> Any:
    acc = o.c(coeffs[-1])
    for k in reversed(coeffs[:-1]):
        acc = o.add(o.c(k), o.mul(z, acc))
    return acc


def _scale(o: Ops, v: Any, n: Any) -> Any:
    """v * 2^n for n in [-300, 300], by two exact power-of-two factors (2^(n - n//2) * 2^(n//2))."""
    half = o.ishr_arith(n, 1) if hasattr(o, "ishr_arith") else None
    assert half is not None
    rest = o.iadd(n, o.ineg(half))

    def pow2(k: Any) -> Any:
        k = o.iselect(o.igt(k, o.ic(127)), o.ic(127), o.iselect(o.ilt(k, o.ic(-126)), o.ic(-126), k))
        return o.from_bits(o.ishl(o.iadd(k, o.ic(127)), 23))

    return o.mul(o.mul(v, pow2(rest)), pow2(half))


def algorithm(o: Any, x: Any, y: Any) -> Any:
    """powf(x, y) for float32 x, y (see the module docstring)."""
    # x = m * 2^e with m in [sqrt(1/2), sqrt(2)); subnormal x scaled by 2^24 first
    tiny = o.lt(x, o.c(F(2.0 ** -126)))
    xs = o.select(tiny, o.mul(x, o.c(F(2.0 ** 24))), x)
    bx = o.bits(xs)
    e = o.iadd(o.iand(o.ishr(bx, 23), o.ic(0xFF)), o.iselect(tiny, o.ic(-127 - 24), o.ic(-127)))
    mbits = o.ior(o.iand(bx, o.ic(0x7FFFFF)), o.ic(0x3F800000))
    big = o.igt(mbits, o.ic(0x3FB504F3))  # m > sqrt(2)
    m = o.select(big, o.mul(o.from_bits(mbits), o.c(F(0.5))), o.from_bits(mbits))
    e = o.iadd(e, o.iselect(big, o.ic(1), o.ic(0)))
    f = o.sub(m, o.c(F(1)))  # exact
    # s = f / (2 + f) in double-float
    d_hi, d_lo = _fast_two_sum(o, o.c(F(2)), f)
    s_hi = o.div(f, d_hi)
    p, pe = _two_prod(o, s_hi, d_hi)
    r = o.sub(o.sub(o.sub(f, p), pe), o.mul(s_hi, d_lo))
    s_lo = o.div(r, d_hi)
    # ln m = 2 atanh(s) = 2 s_hi + (2 s_lo + s^3 P(s^2))
    z = o.mul(s_hi, s_hi)
    tail = o.mul(o.mul(s_hi, z), _poly(o, z, ATANH))
    l_hi, l_lo = _fast_two_sum(o, o.mul(o.c(F(2)), s_hi), o.add(o.mul(o.c(F(2)), s_lo), tail))
    # log2 x = e + ln m / ln 2
    p_hi, p_err = _two_prod(o, l_hi, o.c(INV_LN2_HI))
    p_lo = o.add(p_err, o.add(o.mul(l_hi, o.c(INV_LN2_LO)), o.mul(l_lo, o.c(INV_LN2_HI))))
    t_hi, t_err = _two_sum(o, o.to_float(e), p_hi)
    t_hi, t_lo = _fast_two_sum(o, t_hi, o.add(t_err, p_lo))
    # w = y log2 x
    w_hi, w_err = _two_prod(o, y, t_hi)
    w_hi, w_lo = _fast_two_sum(o, w_hi, o.add(w_err, o.mul(y, t_lo)))
    # 2^w = 2^n * exp((r + w_lo) ln 2), n the nearest integer to w_hi, |r| <= 1/2
    wc = o.select(o.gt(w_hi, o.c(F(300))), o.c(F(300)), o.select(o.lt(w_hi, o.c(F(-300))), o.c(F(-300)), w_hi))
    n = o.trunc_int(wc)
    r = o.sub(wc, o.to_float(n))  # exact
    up = o.gt(r, o.c(F(0.5)))
    down = o.lt(r, o.c(F(-0.5)))
    r = o.select(up, o.sub(r, o.c(F(1))), o.select(down, o.add(r, o.c(F(1))), r))
    n = o.iadd(n, o.iselect(up, o.ic(1), o.iselect(down, o.ic(-1), o.ic(0))))
    q_hi, q_err = _two_prod(o, r, o.c(LN2_HI))
    q_lo = o.add(q_err, o.add(o.mul(r, o.c(LN2_LO)), o.mul(w_lo, o.c(LN2_HI))))
    q_hi, q_lo = _fast_two_sum(o, q_hi, q_lo)
    ex = o.mul(o.mul(q_hi, q_hi), _poly(o, q_hi, EXP))
    one_hi, one_lo = _fast_two_sum(o, o.c(F(1)), q_hi)
    mant = o.add(one_hi, o.add(one_lo, o.add(q_lo, ex)))
    res = _scale(o, mant, n)
    # special cases: x == 0, x == 1 or y == 0, x < 0, x or y NaN, x infinite
    inf = o.c(F(np.inf))
    zero_x = o.select(o.gt(y, o.c(F(0))), o.c(F(0)), o.select(o.lt(y, o.c(F(0))), inf, o.c(F(1))))
    res = o.select(o.eq(x, o.c(F(0))), zero_x, res)
    res = o.select(o.eq(x, inf), o.select(o.gt(y, o.c(F(0))), inf, o.select(o.lt(y, o.c(F(0))), o.c(F(0)),
                                                                                o.c(F(1)))), res)
    res = o.select(o.or_(o.lt(x, o.c(F(0))), o.or_(o.ne(x, x), o.ne(y, y))), o.c(F(np.nan)), res)
    return o.select(o.or_(o.eq(x, o.c(F(1))), o.eq(y, o.c(F(0)))), o.c(F(1)), res)


class NumpyOps:
    """float32 / int32 numpy arrays; every operation rounds to float32 (IEEE)."""

    def c(self, v: float) -> Any:
        return F(v)

    def add(self, a, b): return F(a) + F(b) if np.ndim(a) == 0 and np.ndim(b) == 0 else (np.asarray(a, F) + np.asarray(b, F))  # noqa: E704
    def sub(self, a, b): return np.asarray(a, F) - np.asarray(b, F)  # noqa: E704
    def mul(self, a, b): return np.asarray(a, F) * np.asarray(b, F)  # noqa: E704

    def div(self, a: Any, b: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(a, F) / np.asarray(b, F)

    def lt(self, a, b): return np.asarray(a) < np.asarray(b)  # noqa: E704
    def gt(self, a, b): return np.asarray(a) > np.asarray(b)  # noqa: E704
    def eq(self, a, b): return np.asarray(a) == np.asarray(b)  # noqa: E704
    def ne(self, a, b): return np.asarray(a) != np.asarray(b)  # noqa: E704
    def or_(self, a, b): return np.logical_or(a, b)  # noqa: E704
    def select(self, c, a, b): return np.where(c, a, b).astype(F)  # noqa: E704
    def bits(self, a): return np.asarray(a, F).view(np.int32)  # noqa: E704
    def from_bits(self, a): return np.asarray(a, np.int32).view(F)  # noqa: E704
    def ic(self, v): return np.int32(v)  # noqa: E704
    def iadd(self, a, b): return (np.asarray(a, np.int32) + np.asarray(b, np.int32)).astype(np.int32)  # noqa: E704
    def ineg(self, a): return (-np.asarray(a, np.int32)).astype(np.int32)  # noqa: E704
    def iand(self, a, b): return np.asarray(a, np.int32) & np.asarray(b, np.int32)  # noqa: E704
    def ior(self, a, b): return np.asarray(a, np.int32) | np.asarray(b, np.int32)  # noqa: E704
    def ishl(self, a, n): return (np.asarray(a, np.int32) << n).astype(np.int32)  # noqa: E704
    def ishr(self, a, n): return (np.asarray(a, np.int32).view(np.uint32) >> n).astype(np.int32)  # noqa: E704
    def ishr_arith(self, a, n): return np.asarray(a, np.int32) >> n  # noqa: E704
    def igt(self, a, b): return np.asarray(a) > np.asarray(b)  # noqa: E704
    def ilt(self, a, b): return np.asarray(a) < np.asarray(b)  # noqa: E704
    def iselect(self, c, a, b): return np.where(c, a, b).astype(np.int32)  # noqa: E704
    def to_float(self, a): return np.asarray(a, np.int32).astype(F)  # noqa: E704
    def trunc_int(self, a): return np.trunc(np.asarray(a, F)).astype(np.int32)  # noqa: E704


def powf_numpy(x: Any, y: Any) -> np.ndarray:
    """The numpy twin of the emitted powf (float32 in, float32 out, elementwise)."""
    with np.errstate(all="ignore"):
        return np.asarray(algorithm(NumpyOps(), np.asarray(x, F), np.asarray(y, F)), F)


class IROps:
    """Emits the same operations with an llvmlite IRBuilder (scalar float / i32 / i1 values)."""

    def __init__(self, b: ir.IRBuilder) -> None:
        self.b = b
        self.f, self.i = ir.FloatType(), ir.IntType(32)

    def c(self, v: float) -> ir.Value:
        return ir.Constant(self.f, float(F(v)))

    def add(self, a, b): return self.b.fadd(a, b)  # noqa: E704
    def sub(self, a, b): return self.b.fsub(a, b)  # noqa: E704
    def mul(self, a, b): return self.b.fmul(a, b)  # noqa: E704
    def div(self, a, b): return self.b.fdiv(a, b)  # noqa: E704
    def lt(self, a, b): return self.b.fcmp_ordered("<", a, b)  # noqa: E704
    def gt(self, a, b): return self.b.fcmp_ordered(">", a, b)  # noqa: E704
    def eq(self, a, b): return self.b.fcmp_ordered("==", a, b)  # noqa: E704
    def ne(self, a, b): return self.b.fcmp_unordered("!=", a, b)  # noqa: E704
    def or_(self, a, b): return self.b.or_(a, b)  # noqa: E704
    def select(self, c, a, b): return self.b.select(c, a, b)  # noqa: E704
    def bits(self, a): return self.b.bitcast(a, self.i)  # noqa: E704
    def from_bits(self, a): return self.b.bitcast(a, self.f)  # noqa: E704
    def ic(self, v): return ir.Constant(self.i, v)  # noqa: E704
    def iadd(self, a, b): return self.b.add(a, b)  # noqa: E704
    def ineg(self, a): return self.b.neg(a)  # noqa: E704
    def iand(self, a, b): return self.b.and_(a, b)  # noqa: E704
    def ior(self, a, b): return self.b.or_(a, b)  # noqa: E704
    def ishl(self, a, n): return self.b.shl(a, ir.Constant(self.i, n))  # noqa: E704
    def ishr(self, a, n): return self.b.lshr(a, ir.Constant(self.i, n))  # noqa: E704
    def ishr_arith(self, a, n): return self.b.ashr(a, ir.Constant(self.i, n))  # noqa: E704
    def igt(self, a, b): return self.b.icmp_signed(">", a, b)  # noqa: E704
    def ilt(self, a, b): return self.b.icmp_signed("<", a, b)  # noqa: E704
    def iselect(self, c, a, b): return self.b.select(c, a, b)  # noqa: E704
    def to_float(self, a): return self.b.sitofp(a, self.f)  # noqa: E704
    def trunc_int(self, a): return self.b.fptosi(a, self.i)  # noqa: E704


def powf_function(module: ir.Module, name: str = "pitchfork.powf") -> ir.Function:
    """The internal function `float name(float x, float y)` in `module` (created once)."""
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    f = ir.FloatType()
    fn = ir.Function(module, ir.FunctionType(f, [f, f]), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(algorithm(IROps(b), fn.args[0], fn.args[1]))
    return fn
