"""Types, interned terms, and type errors raised at construction with clear messages."""

from __future__ import annotations

import pickle

import pytest

from fpir.ops import make
from fpir.term import const, var
from fpir.text import FPIRSyntaxError, parse
from fpir.types import (INT_TYPES, USER_TYPES, FPIRTypeError, ScalarType, from_dtype, i8, i16, i32, i64,
                        is_type_name, parse_type, u1, u8, u16, u32, u64)


# ---------------------------------------------------------------------------------------------
# Scalar types


def test_ranges() -> None:
    assert [(t.min, t.max) for t in USER_TYPES] == [
        (0, 1), (0, 255), (-128, 127), (0, 65535), (-32768, 32767), (0, 2**32 - 1), (-(2**31), 2**31 - 1),
        (0, 2**64 - 1), (-(2**63), 2**63 - 1)]


def test_widen_narrow_sign() -> None:
    assert u8.widen() == u16 and i32.widen() == i64 and i64.widen() == parse_type("i128")
    assert u16.narrow() == u8 and i64.narrow() == i32
    assert u8.with_sign(True) == i8 and i16.to_unsigned() == u16 and u1.with_sign(False) == u1
    for bad in (lambda: u8.narrow(), lambda: u1.widen(), lambda: u1.with_sign(True)):
        with pytest.raises(FPIRTypeError):
            bad()
    with pytest.raises(FPIRTypeError, match="booleans are unsigned"):
        ScalarType(True, 1)
    with pytest.raises(FPIRTypeError, match="unsupported bit width"):
        ScalarType(False, 7)


def test_wrap_and_names() -> None:
    assert i8.wrap(128) == -128 and u8.wrap(-1) == 255 and i64.wrap(2**63) == -(2**63) and u1.wrap(3) == 1
    assert all(parse_type(t.name) == t and is_type_name(t.name) for t in USER_TYPES)
    assert not is_type_name("i1") and not is_type_name("u7") and not is_type_name("f32")
    assert all(from_dtype(t.np_dtype) == t for t in USER_TYPES)
    with pytest.raises(FPIRTypeError, match="unknown type name"):
        parse_type("u7")


# ---------------------------------------------------------------------------------------------
# Interned terms


def test_terms_are_interned_and_immutable() -> None:
    a = make("add", var("a", u8), const(3, u8))
    assert make("add", var("a", u8), const(3, u8)) is a
    assert parse("a_u8 + 3") is a
    assert pickle.loads(pickle.dumps(a)) is a
    assert var("a", u8) is not var("a", i8)
    with pytest.raises(AttributeError):
        a.op = "sub"  # type: ignore[misc]


def test_constant_folding_and_identity_casts() -> None:
    assert make("add", const(200, u8), const(100, u8)) is const(44, u8)
    assert make("cast", var("a", u8), type=u8) is var("a", u8)
    assert make("saturating_cast", var("a", i16), type=i16) is var("a", i16)


# ---------------------------------------------------------------------------------------------
# Type errors at construction


@pytest.mark.parametrize("op, args, explicit, message", [
    ("widening_add", [u8, i16], None, r"widening_add: operands must have the same type, got u8, i16"),
    ("widening_sub", [u8, i8], None, r"widening_sub: operands must have the same type, got u8, i8"),
    ("widening_mul", [u8, u16], None, r"widening_mul: operands must have the same width, got u8, u16"),
    ("mul_shr", [u8, i8, u8], None, r"mul_shr: multiplicands must have the same type \(and signedness\)"),
    ("rounding_mul_shr", [i16, u16, u16], None, r"rounding_mul_shr: multiplicands must have the same type"),
    ("mul_shr", [i16, i16, i16], None, r"mul_shr: shift amount must be u16, got i16"),
    ("mul_shr", [i16, i16, u8], None, r"mul_shr: shift amount must be u16, got u8"),
    ("extending_add", [u8, u8], None, r"extending_add: first operand must be twice as wide as the second"),
    ("extending_mul", [u32, u8], None, r"extending_mul: first operand must be twice as wide"),
    ("extending_sub", [u8, u16], None, r"extending_sub: first operand must be twice as wide"),
    ("select", [u8, u8, u8], None, r"select: condition must be u1, got u8"),
    ("select", [u1, u8, i8], None, r"select: branches must have the same type, got u8, i8"),
    ("shl", [u8, u16], None, r"shl: shift amount must have 8 bits like the shifted value, got u16"),
    ("rounding_shr", [i32, i16], None, r"rounding_shr: shift amount must have 32 bits"),
    ("widening_shl", [u16, u8], None, r"widening_shl: shift amount must have 16 bits"),
    ("add", [u8, i8], None, r"add: operands must have the same type, got u8, i8"),
    ("add", [u1, u1], None, r"add: operands must be integers, got u1"),
    ("min", [u16, i16], None, r"min: operands must have the same type"),
    ("lt", [u8, u16], None, r"lt: operands must have the same type"),
    ("absd", [u8, i8], None, r"absd: operands must have the same type"),
    ("abs", [u1], None, r"abs: operands must be integers"),
    ("halving_add", [u16, u8], None, r"halving_add: operands must have the same type"),
    ("saturating_add", [i32, u32], None, r"saturating_add: operands must have the same type"),
    ("reinterpret", [u8], u16, r"reinterpret<u16>: operand must have 16 bits, got u8"),
    ("saturating_cast", [u8], u1, r"saturating_cast: operands must be integers, got u1"),
    ("cast", [u8], None, r"cast needs a target type"),
    ("add", [u8], None, r"add takes 2 arguments, got 1"),
    ("nonsense", [u8], None, r"unknown op 'nonsense'"),
])
def test_type_errors(op: str, args: list[ScalarType], explicit: ScalarType, message: str) -> None:
    terms = [var(n, t) for n, t in zip("abc", args)]
    with pytest.raises(FPIRTypeError, match=message):
        make(op, *terms, type=explicit)


def test_accepted_signedness_rules() -> None:
    """The signedness rules that are easy to get wrong are accepted, with the right result types."""
    a8, s8 = var("a", u8), var("s", i8)
    assert make("widening_sub", a8, var("b", u8)).type == i16  # widening_sub is signed
    assert make("widening_mul", a8, s8).type == i16 and make("widening_mul", s8, a8).type == i16
    assert make("widening_mul", a8, var("b", u8)).type == u16
    assert make("abs", s8).type == u8 and make("absd", s8, var("t", i8)).type == u8  # unsigned results
    assert make("extending_add", var("w", u16), s8).type == u16  # narrow operand of either sign
    assert make("shl", a8, s8).type == u8 and make("shr", s8, a8).type == i8  # amounts of either sign
    assert make("mul_shr", s8, var("t", i8), a8).type == i8
    assert make("widening_add", var("x", i64), var("y", i64)).type == parse_type("i128")
    assert make("saturating_cast", var("x", u64), type=i8).type == i8


def test_constant_range_errors() -> None:
    with pytest.raises(FPIRTypeError, match="constant 300 does not fit in u8"):
        const(300, u8)
    with pytest.raises(FPIRTypeError, match="constant -1 does not fit in u64"):
        const(-1, u64)
    with pytest.raises(FPIRTypeError, match="constant 128 does not fit in i8"):
        const(128, i8)
    const(2**64 - 1, u64)
    const(-(2**63), i64)
    for t in INT_TYPES:
        const(t.min, t)
        const(t.max, t)


def test_type_errors_in_text_have_positions() -> None:
    with pytest.raises(FPIRSyntaxError) as e:
        parse("a_u8 + 300")
    assert (e.value.line, e.value.column) == (1, 8) and "constant 300 does not fit in u8" in e.value.message
    with pytest.raises(FPIRSyntaxError) as e:
        parse("x_u16 +\n  widening_add(a_u8, b_i16)")
    assert (e.value.line, e.value.column) == (2, 3)
    assert "widening_add: operands must have the same type, got u8, i16" in str(e.value)
    with pytest.raises(FPIRSyntaxError) as e:
        parse("select(a_u8, b_u8, c_u8)")
    assert "condition must be u1" in e.value.message
    with pytest.raises(FPIRSyntaxError) as e:
        parse("mul_shr(a_u8, b_i8, 3)")
    assert "same type" in e.value.message and e.value.column == 1


def test_wrap_of_work_arrays_agrees_with_scalar_wrap() -> None:
    """fpir.primitives.wrap (one cast from int64, uint64 then a cast from Python ints) gives each
    value ScalarType.wrap gives it."""
    import numpy as np

    from fpir.primitives import wrap
    from fpir.types import ScalarType

    vals = [0, 1, -1, 127, 128, -129, 255, 256, 32767, -32769, 2**31, -2**31 - 1, 2**32 + 5, 2**62, -2**63]
    for t in [ScalarType(s, b) for b in (8, 16, 32, 64) for s in (True, False)]:
        work = [np.array(vals + [2**64 + 3, -2**70], dtype=object)]  # Python ints: any width
        if t.bits <= 32:  # int64 work arrays hold results of at most 32 bits (fpir.types.work_arrays)
            work.append(np.array(vals, dtype=np.int64))
        for arr in work:
            got = wrap(arr, t)
            assert got.dtype == t.np_dtype and got.tolist() == [t.wrap(int(v)) for v in arr.tolist()], t
