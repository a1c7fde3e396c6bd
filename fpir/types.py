"""Element types of FPIR terms.

FPIR text and terms are lane-agnostic: a term's type is a scalar element type; the lane count is chosen
when compiling. User-visible types are u1 (bool), u8, i8, u16, i16, u32, i32, u64, i64. Wider types
(u128 ... i256) exist only as exact intermediates inside the semantic definitions of widening ops on
64-bit operands, so those definitions stay exact instead of silently wrapping.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Sequence
from dataclasses import dataclass

from fpir.lazy import numpy as np

VALID_BITS = (1, 8, 16, 32, 64, 128, 256)
USER_BITS = (1, 8, 16, 32, 64)


#: the one ScalarType per (signed, bits) (see ScalarType)
_INTERNED: dict[tuple[bool, int], ScalarType] = {}


class FPIRTypeError(TypeError):
    """A term was built with operand types its op does not accept."""


@dataclass(frozen=True, slots=True, init=False, eq=False)
class ScalarType:
    """An element type: signedness and width.

    Interned: `ScalarType(signed, bits)` returns the one instance for those fields (made and checked
    the first time), so equal types are the same object and `==` is object identity, compared in C.
    Types are compared at every node a compile builds or matches (type rules, argument hints, the
    rules' type patterns: ~10^4 comparisons per compile), which as the dataclass's generated `__eq__`
    were as many Python calls. The hash stays the dataclass's (`hash((signed, bits))`), so sets of types
    iterate in the same order as before. Pickling and copying go through the constructor
    (`__reduce__`), so an unpickled type is the interned one too; nothing else makes a ScalarType."""

    signed: bool
    bits: int

    def __new__(cls, signed: bool, bits: int) -> ScalarType:
        hit = _INTERNED.get((signed, bits))
        if hit is not None:
            return hit
        if bits not in VALID_BITS:
            raise FPIRTypeError(f"unsupported bit width {bits}")
        if bits == 1 and signed:
            raise FPIRTypeError("booleans are unsigned (u1)")
        self = object.__new__(cls)
        object.__setattr__(self, "signed", bool(signed))
        object.__setattr__(self, "bits", int(bits))
        return _INTERNED.setdefault((bool(signed), int(bits)), self)

    def __hash__(self) -> int:
        return hash((self.signed, self.bits))

    def __reduce__(self) -> tuple[type, tuple[bool, int]]:
        return ScalarType, (self.signed, self.bits)

    @property
    def name(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.bits}"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def is_bool(self) -> bool:
        return self.bits == 1

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def widen(self) -> ScalarType:
        """Twice the bits, same signedness."""
        if self.bits == 1 or self.bits >= 256:
            raise FPIRTypeError(f"cannot widen {self.name}")
        return _INTERNED[(self.signed, self.bits * 2)]

    def narrow(self) -> ScalarType:
        """Half the bits, same signedness."""
        if self.bits <= 8:
            raise FPIRTypeError(f"cannot narrow {self.name}")
        return _INTERNED[(self.signed, self.bits // 2)]

    def with_sign(self, signed: bool) -> ScalarType:
        if self.bits == 1:
            if signed:
                raise FPIRTypeError("u1 has no signed variant")
            return self
        return _INTERNED[(bool(signed), self.bits)]

    def to_signed(self) -> ScalarType:
        return self.with_sign(True)

    def to_unsigned(self) -> ScalarType:
        return self.with_sign(False)

    def contains(self, value: int) -> bool:
        return self.min <= value <= self.max

    def can_represent(self, other: ScalarType) -> bool:
        """True if every value of `other` is a value of self."""
        return self.min <= other.min and other.max <= self.max

    def wrap(self, value: int) -> int:
        """Reduce an integer modulo 2^bits into this type's range."""
        v = value & ((1 << self.bits) - 1)
        if self.signed and v >= (1 << (self.bits - 1)):
            v -= 1 << self.bits
        return v

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype holding values of this type (object for >64-bit intermediates)."""
        if self.bits == 1:
            return np.dtype(np.bool_)
        if self.bits > 64:
            return np.dtype(object)
        return np.dtype(f"{'int' if self.signed else 'uint'}{self.bits}")

    @property
    def is_user_type(self) -> bool:
        return self.bits in USER_BITS


u1 = ScalarType(False, 1)
u8 = ScalarType(False, 8)
i8 = ScalarType(True, 8)
u16 = ScalarType(False, 16)
i16 = ScalarType(True, 16)
u32 = ScalarType(False, 32)
i32 = ScalarType(True, 32)
u64 = ScalarType(False, 64)
i64 = ScalarType(True, 64)
# every valid type made now, so that widen / narrow / with_sign read theirs from the table
for _bits in VALID_BITS:
    for _signed in ((False,) if _bits == 1 else (False, True)):
        ScalarType(_signed, _bits)

USER_TYPES: tuple[ScalarType, ...] = (u1, u8, i8, u16, i16, u32, i32, u64, i64)
INT_TYPES: tuple[ScalarType, ...] = (u8, i8, u16, i16, u32, i32, u64, i64)

_TYPE_RE = re.compile(r"^([ui])(1|8|16|32|64|128|256)$")


def is_type_name(text: str) -> bool:
    m = _TYPE_RE.match(text)
    return bool(m) and not (m.group(1) == "i" and m.group(2) == "1")


@functools.lru_cache(maxsize=64)  # (only valid names are cached: an error is raised, not stored)
def parse_type(text: str) -> ScalarType:
    m = _TYPE_RE.match(text)
    if not m:
        raise FPIRTypeError(f"unknown type name {text!r}")
    return ScalarType(m.group(1) == "i", int(m.group(2)))


def from_dtype(dtype: np.dtype) -> ScalarType:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return u1
    if dt.kind not in "iu":
        raise FPIRTypeError(f"no FPIR type for numpy dtype {dt}")
    return ScalarType(dt.kind == "i", dt.itemsize * 8)


def work_arrays(arrays: Sequence[Any], types: Sequence[ScalarType], rt: ScalarType,
                limit: int = 16) -> tuple[list[Any], bool]:
    """Exact work arrays for numpy semantics: int64 when every type involved (operands `types` and
    result `rt`) has at most `limit` bits, Python ints in object arrays otherwise (so products and
    sums of wide values are computed exactly before they wrap). Booleans become int64."""
    use_obj = max([t.bits for t in types] + [rt.bits]) > limit
    out = []
    for a in arrays:
        a = np.asarray(a)
        if a.dtype == np.bool_:
            a = a.astype(np.int64)
        out.append(a.astype(object) if use_obj else a.astype(np.int64))
    return out, use_obj
