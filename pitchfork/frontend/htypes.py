"""Halide value types as they appear in Halide's statement text.

Halide prints a type as `uint16`, `int32x16` (16 lanes), `float32`, `uint1` (bool), or, for handles,
as a C pointer type in parentheses: `(void *)`, `(struct halide_buffer_t *)`. `HType` is that type:
a code (int, uint, float, bfloat, handle), a bit width and a lane count. Every expression node of the
parsed statement carries one, so later passes know the element type and lane count of every vector.

This module is named `htypes` (not `types`) so that it can never shadow the standard library module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import halide as hl
    import numpy as np

    from fpir.types import ScalarType

TypeCode = Literal["int", "uint", "float", "bfloat", "handle"]

_SCALAR_RE = re.compile(r"(int|uint|float|bfloat)(\d+)(?:x(\d+))?")
_HANDLE_RE = re.compile(r"\(\s*(.*?)\s*\)")
#: `HType.with_lanes`'s types by (code, bits, lanes, handle); `HType.parse`'s by spelling (both grow
#: only with the distinct types a process meets: a few dozen)
_INTERNED: dict[tuple[str, int, int, str], HType] = {}
_PARSED: dict[str, HType] = {}


@dataclass(frozen=True, slots=True)
class HType:
    """A Halide type: `code`, `bits` per lane, `lanes`; `handle` names the pointee of a handle type."""

    code: TypeCode
    bits: int
    lanes: int = 1
    handle: str = ""

    # --- queries -----------------------------------------------------------------------------
    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1

    @property
    def is_int(self) -> bool:
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        return self.code == "uint"

    @property
    def is_bool(self) -> bool:
        return self.code == "uint" and self.bits == 1

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer, including bool (uint1)."""
        return self.code in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.code in ("float", "bfloat")

    @property
    def is_handle(self) -> bool:
        return self.code == "handle"

    @property
    def elem(self) -> HType:
        """The scalar element type (lanes = 1)."""
        return self if self.lanes == 1 else self.with_lanes(1)

    def with_lanes(self, lanes: int) -> HType:
        # One object per distinct type: the parser and code generator ask for a node's element type
        # thousands of times a compile, and the frozen dataclass's __init__ (object.__setattr__ per
        # field) was most of that cost. The cache is keyed by the fields (a C tuple hash), and equal
        # HTypes are interchangeable (a value type: nothing compares them by identity).
        key = (self.code, self.bits, lanes, self.handle)
        t = _INTERNED.get(key)
        if t is None:
            t = _INTERNED[key] = HType(self.code, self.bits, lanes, self.handle)
        return t

    @property
    def min(self) -> int:
        if self.code == "int":
            return -(1 << (self.bits - 1))
        if self.code == "uint":
            return 0
        raise TypeError(f"{self} is not an integer type")

    @property
    def max(self) -> int:
        if self.code == "int":
            return (1 << (self.bits - 1)) - 1
        if self.code == "uint":
            return (1 << self.bits) - 1
        raise TypeError(f"{self} is not an integer type")

    # --- text --------------------------------------------------------------------------------
    def __str__(self) -> str:
        """Halide's spelling: `uint16x16`, `int32`, `(void *)`."""
        if self.code == "handle":
            base = f"({self.handle})"
            return base if self.lanes == 1 else f"{base}x{self.lanes}"
        base = f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def __repr__(self) -> str:
        return f"HType({self})"

    @property
    def short(self) -> str:
        """FPIR-style element spelling with lanes: `u16x16`, `i32`, `u1`."""
        if self.code in ("int", "uint"):
            base = f"{'i' if self.code == 'int' else 'u'}{self.bits}"
        elif self.code == "handle":
            base = "handle"
        else:
            base = f"{self.code[0] if self.code == 'float' else 'bf'}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    @staticmethod
    def parse(text: str) -> HType:
        """Parse Halide's spelling of a type (`uint8x32`, `(struct halide_buffer_t *)`). A statement
        spells a handful of distinct types hundreds of times (every cast): each spelling is parsed once
        (an error is never cached: it raises again)."""
        t = _PARSED.get(text)
        if t is None:
            t = _PARSED[text] = HType._parse(text)
        return t

    @staticmethod
    def _parse(text: str) -> HType:
        text = text.strip()
        m = _SCALAR_RE.fullmatch(text)
        if m:
            code, bits, lanes = m.group(1), int(m.group(2)), int(m.group(3) or 1)
            return HType(code, bits, lanes)  # type: ignore[arg-type]
        m = _HANDLE_RE.fullmatch(text)
        if m:
            return HType("handle", 64, 1, " ".join(m.group(1).split()))
        raise ValueError(f"not a Halide type: {text!r}")

    # --- conversions -------------------------------------------------------------------------
    @staticmethod
    def from_halide(t: hl.Type) -> HType:
        """Convert a `halide.Type` (from the Python bindings)."""
        if t.is_handle():
            return HType("handle", 64, t.lanes(), "void *")
        code: TypeCode
        if t.is_bool() or t.is_uint():
            code = "uint"
        elif t.is_int():
            code = "int"
        elif t.is_bfloat():
            code = "bfloat"
        elif t.is_float():
            code = "float"
        else:  # pragma: no cover - Halide has no other type codes
            raise ValueError(f"unsupported Halide type {t}")
        return HType(code, t.bits(), t.lanes())

    @staticmethod
    def from_halide_type_code(packed: int) -> HType:
        """Decode the packed `halide_type_t` that Halide's statements compare against (`input.type`)."""
        code_num, bits, lanes = packed & 0xFF, (packed >> 8) & 0xFF, (packed >> 16) & 0xFFFF
        codes: dict[int, TypeCode] = {0: "int", 1: "uint", 2: "float", 3: "handle", 4: "bfloat"}
        if code_num not in codes:
            raise ValueError(f"bad packed halide_type_t {packed}")
        if codes[code_num] == "handle":
            return HType("handle", bits, lanes, "void *")
        return HType(codes[code_num], bits, lanes)

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of one lane (`bool` for uint1); lanes are dropped."""
        import numpy as np

        if self.is_bool:
            return np.dtype("bool")
        if self.code not in ("int", "uint", "float"):
            raise TypeError(f"{self} has no numpy dtype")
        return np.dtype(f"{self.code}{self.bits}")

    def to_fpir(self) -> ScalarType:
        """The FPIR element type (`fpir.types.ScalarType`) of an integer type; lanes are dropped."""
        from fpir.types import ScalarType

        if not self.is_integer:
            raise TypeError(f"{self} has no FPIR element type")
        return ScalarType(self.code == "int", self.bits)


def Int(bits: int, lanes: int = 1) -> HType:
    return HType("int", bits, lanes)


def UInt(bits: int, lanes: int = 1) -> HType:
    return HType("uint", bits, lanes)


def Float(bits: int, lanes: int = 1) -> HType:
    return HType("float", bits, lanes)


def Bool(lanes: int = 1) -> HType:
    """`uint1` of `lanes` lanes: `with_lanes`'s one object of that type (the parser asks for one per
    comparison; equal HTypes are interchangeable, so which equal object is returned changes nothing)."""
    key = ("uint", 1, lanes, "")
    t = _INTERNED.get(key)
    if t is None:
        t = _INTERNED[key] = HType("uint", 1, lanes)
    return t


def Handle(pointee: str = "void *") -> HType:
    return HType("handle", 64, 1, pointee)


# Named like Halide's own type constructors (Int(32), UInt(8), ...).
INT32 = Int(32)
# `with_lanes`' int32 is INT32 itself, so an int32 vector's `elem` is INT32 (an identity test finds it)
_INTERNED.setdefault(("int", 32, 1, ""), INT32)
BOOL = Bool()
