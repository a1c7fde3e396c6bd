"""Flags: facts an FPIR node may carry, like LLVM's poison-generating flags (`add nsw`).

The one flag so far is `nsw`, Halide's overflow rule: signed 32-bit and wider add/sub/mul never
overflow (8- and 16-bit and unsigned arithmetic wraps). A flag restricts the inputs a term is meant
for and never changes the value computed, so the interpreter and the emitted code ignore it and a
wrapping instruction is a valid implementation of a flagged op. Each `FlagSpec` row states the fact
once, as numpy (`np_holds`: the differential tests draw inputs where it holds) and as Z3 (`z3_holds`:
the rule verifier assumes it for a left side and proves it for a right side), plus the op's interval
under it (bounds). fpir/ops.py attaches the rows to ops (`OpSpec.flags`); this module only needs
fpir.types, so the op table can import it.

`fpir.ops.with_halide_overflow(term)` puts `nsw` where Halide's frontend would (the CLI's --assume-no-overflow),
and with `shifts=True` `inrange` on every shl/shr (--assume-shifts-in-range).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from fpir.lazy import numpy as np
from fpir.lazy import z3

from fpir.types import ScalarType, work_arrays as _work

if TYPE_CHECKING:
    from fpir.term import Term

Interval = tuple[int, int]


@dataclass(frozen=True, slots=True)
class FlagSpec:
    """A fact a node of one op may carry. It restricts the inputs the term is meant for (LLVM's
    poison-generating flags), never the value computed. All callables take (args, arg types, result
    type) like the primitive semantics."""

    name: str
    doc: str
    applies_to: Callable[[ScalarType], bool]  # result types the flag is allowed on
    np_holds: Callable[..., Any]  # numpy bool array: where the fact holds
    z3_holds: Callable[..., Any]  # Z3 BoolRef: the fact
    # The op's interval under the fact (None: the op's usual rule).
    interval: Optional[Callable[[Sequence[Interval], Sequence[ScalarType], ScalarType], Interval]] = None



# The no-signed-wrap fact (LLVM's `nsw`): the exact result of the op fits its signed type. Halide's
# frontend puts it on signed >= 32-bit add/sub/mul, whose overflow Halide treats as impossible.
NSW_DOC = ("no signed wrap: the exact result fits the (signed) type. Halide's rule for signed 32-bit and "
           "wider add/sub/mul; the value is still computed wrapping.")


def _nsw(exact: Callable[[Any, Any], Any], z3_fact: Callable[[z3.BitVecRef, z3.BitVecRef], z3.BoolRef],
         limit: int) -> FlagSpec:
    def np_holds(args: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType) -> Any:
        w, _obj = _work(args, types, rt, limit)
        with np.errstate(all="ignore"):
            v = exact(*w)
        return np.asarray((v >= rt.min) & (v <= rt.max), dtype=np.bool_)

    def interval(ivs: Sequence[Interval], ts: Sequence[ScalarType], rt: ScalarType) -> Interval:
        (al, ah), (bl, bh) = ivs
        vals = [exact(x, y) for x in (al, ah) for y in (bl, bh)]
        lo, hi = max(min(vals), rt.min), min(max(vals), rt.max)
        return (lo, hi) if lo <= hi else (rt.min, rt.max)  # the fact can never hold: no information

    return FlagSpec("nsw", NSW_DOC, lambda t: t.signed and not t.is_bool, np_holds,
                    lambda a, ts, rt: z3_fact(a[0], a[1]), interval)


NSW_ADD = _nsw(lambda a, b: a + b, lambda a, b: z3.And(z3.BVAddNoOverflow(a, b, True), z3.BVAddNoUnderflow(a, b)), 32)
NSW_SUB = _nsw(lambda a, b: a - b, lambda a, b: z3.And(z3.BVSubNoOverflow(a, b), z3.BVSubNoUnderflow(a, b, True)), 32)
NSW_MUL = _nsw(lambda a, b: a * b, lambda a, b: z3.And(z3.BVMulNoOverflow(a, b, True), z3.BVMulNoUnderflow(a, b)), 16)


# `nsw` on the averaging and rounding-shift ops: the sum their definition computes in a wider type
# fits the operands' own (signed) type. Lifting `add.nsw(x, y) >> 1` to `halving_add.nsw(x, y)` keeps
# the fact, so a target without the instruction can lower it back to `add.nsw(x, y) >> 1` (two
# instructions) instead of an overflow-free expansion (four).
def _nsw_fpir(doc: str, np_ok: Callable[..., Any], z3_ok: Callable[..., Any]) -> FlagSpec:
    def np_holds(args: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType) -> Any:
        w, _obj = _work(args, types, rt, 16)
        with np.errstate(all="ignore"):
            return np.asarray(np_ok(*w, t=types[0]), dtype=np.bool_)

    return FlagSpec("nsw", doc, lambda t: t.signed and not t.is_bool, np_holds,
                    lambda a, ts, rt: z3_ok(*a, t=ts[0]))


def _fits(v: Any, t: ScalarType) -> Any:
    return (v >= t.min) & (v <= t.max)


def _z3_fits_sum3(x: z3.BitVecRef, y: z3.BitVecRef, t: ScalarType) -> z3.BoolRef:
    """x + y + 1 (exact) lies in t's range."""
    w = t.bits + 2
    s = z3.SignExt(2, x) + z3.SignExt(2, y) + z3.BitVecVal(1, w)
    return z3.And(s >= z3.BitVecVal(t.min, w), s <= z3.BitVecVal(t.max, w))


def _z3_rshr_fact(x: z3.BitVecRef, y: z3.BitVecRef, t: ScalarType, ty: ScalarType) -> z3.BoolRef:
    one = z3.BitVecVal(1, t.bits)
    positive = (y > 0) if ty.signed else (y != 0)
    in_range = z3.And(positive, z3.ULT(y, t.bits))
    return z3.Implies(in_range, z3.BVAddNoOverflow(x, one << (y - one), True))


def _np_rshr_fact(x: Any, y: Any, t: ScalarType) -> Any:
    in_range = (y > 0) & (y < t.bits)
    amount = np.where(in_range, y, 1)
    rnd = np.asarray(2, dtype=object if x.dtype == object else np.int64) ** (amount - 1)
    return ~in_range | _fits(x + rnd, t)


NSW_HALVING_ADD = _nsw_fpir("no signed wrap: x + y fits the type.",
                             lambda x, y, t: _fits(x + y, t),
                             lambda x, y, t: z3.And(z3.BVAddNoOverflow(x, y, True), z3.BVAddNoUnderflow(x, y)))
NSW_ROUNDING_HALVING_ADD = _nsw_fpir(
    "no signed wrap: x + y + 1 fits the type.", lambda x, y, t: _fits(x + y + 1, t),
    lambda x, y, t: _z3_fits_sum3(x, y, t))
NSW_HALVING_SUB = _nsw_fpir("no signed wrap: x - y fits the type.", lambda x, y, t: _fits(x - y, t),
                             lambda x, y, t: z3.And(z3.BVSubNoOverflow(x, y), z3.BVSubNoUnderflow(x, y, True)))
NSW_ROUNDING_SHR = FlagSpec(
    "nsw", "no signed wrap: for 0 < y < bits, x + 2^(y-1) fits the type.", lambda t: t.signed and not t.is_bool,
    lambda a, ts, rt: _nsw_rshr_np(a, ts, rt), lambda a, ts, rt: _z3_rshr_fact(a[0], a[1], ts[0], ts[1]))


def _nsw_rshr_np(args: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType) -> Any:
    w, _obj = _work(args, types, rt, 16)
    with np.errstate(all="ignore"):
        return np.asarray(_np_rshr_fact(w[0], w[1], types[0]), dtype=np.bool_)


# Shifts. Halide leaves a shift by the lane width or more undefined (its ARM backend turns
# `saturating_cast<i16>(widening_shl(x, y))` into one sqshl, which differs from the wrapping shift past
# the width), and reads a signed 32-bit `x << y` like the multiply x * 2^y, which never overflows.
# `inrange` states the first fact (|y| < bits of the result; a negative signed y shifts the other way),
# `nsw` on shl / widening_shl the second (the exact x * 2^y fits the signed result type).
def _ext(v: z3.BitVecRef, t: ScalarType, width: int) -> z3.BitVecRef:
    return z3.SignExt(width - t.bits, v) if t.signed else z3.ZeroExt(width - t.bits, v)


def _inrange_np(args: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType) -> Any:
    y = np.asarray(args[1]).astype(object)
    ok = (y < rt.bits) & (y > -rt.bits) if types[1].signed else (y < rt.bits)
    return np.asarray(ok, dtype=np.bool_)


def _inrange_z3(a: Sequence[Any], ts: Sequence[ScalarType], rt: ScalarType) -> Any:
    w = max(ts[1].bits, rt.bits) + 2
    y = _ext(a[1], ts[1], w)
    b = z3.BitVecVal(rt.bits, w)
    return z3.And(y < b, y > -b)


INRANGE = FlagSpec("inrange", "shift amount in range: |y| < bits of the result (Halide leaves other shifts "
                   "undefined); the value is still computed as defined.", lambda t: not t.is_bool,
                   _inrange_np, _inrange_z3)


def _shl_fits_np(args: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType) -> Any:
    x = np.asarray(args[0]).astype(object)
    y = np.asarray(args[1]).astype(object)
    k = np.minimum(np.maximum(y, 0), rt.bits + 1)  # past the width no non-zero x fits
    v = x * np.asarray(2, dtype=object) ** k
    return np.asarray((y < 0) | ((v >= rt.min) & (v <= rt.max)), dtype=np.bool_)


def _shl_fits_z3(a: Sequence[Any], ts: Sequence[ScalarType], rt: ScalarType) -> Any:
    w = 2 * rt.bits + 4
    x, y = _ext(a[0], ts[0], w), _ext(a[1], ts[1], w)
    big = z3.BitVecVal(rt.bits + 1, w)
    v = x << y
    fits = z3.And(v >= z3.BitVecVal(rt.min, w), v <= z3.BitVecVal(rt.max, w))
    return z3.Or(y < 0, z3.If(y >= big, x == 0, fits))


NSW_SHL = FlagSpec("nsw", "no signed wrap: for y >= 0 the exact x * 2^y fits the (signed) result type "
                   "(Halide's overflow rule, which reads x << y as x * 2^y); the value is still computed "
                   "wrapping.", lambda t: t.signed and not t.is_bool, _shl_fits_np, _shl_fits_z3)


#: Halide's overflow rule: these ops at a signed type of at least 32 bits never overflow.
HALIDE_NSW_OPS = frozenset({"add", "sub", "mul", "shl"})
#: shifts whose amount Halide requires in range
HALIDE_SHIFT_OPS = frozenset({"shl", "shr"})


def has_flags(term: "Term") -> bool:
    """True if a node of the term carries a flag. Here, not in fpir/z3enc.py, so
    that callers deciding whether Z3 is needed do not import it."""
    return any(t.args and t.attrs for t in term.walk())


def halide_overflow_flags(op: str, t: ScalarType, shifts: bool = False, overflow: bool = True) -> tuple[str, ...]:
    """The flags Halide's semantics give a node of `op` at type t: with `overflow`, `nsw` (signed
    >= 32-bit add, sub, mul, shl) and, with `shifts`, `inrange` on every shl / shr."""
    out = ("nsw",) if overflow and op in HALIDE_NSW_OPS and t.signed and t.bits >= 32 else ()
    if shifts and op in HALIDE_SHIFT_OPS:
        out += ("inrange",)
    return tuple(sorted(out))
