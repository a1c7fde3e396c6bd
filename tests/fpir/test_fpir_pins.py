"""Hand-computed values that pin FPIR's documented semantics (ops.py docs, ISA_INTRINSICS.md section 1.1).

Each pin is checked four ways: the numpy interpreter on variable inputs, the Z3 encoding (substituted and
simplified), constant folding in `make`, and parsing the text form (which folds too).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest
import z3

from fpir.interp import evaluate
from fpir.ops import make
from fpir.term import const, var
from fpir.text import parse
from fpir.types import ScalarType, i8, i16, i32, i64, parse_type, u8, u16, u64
from fpir.z3enc import to_z3

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def check(op: str, args: list[tuple[int, ScalarType]], expected: int, rtype: ScalarType,
          explicit: Optional[ScalarType] = None) -> None:
    names = ["a", "b", "c"][: len(args)]
    term = make(op, *[var(n, t) for n, (_, t) in zip(names, args)], type=explicit)
    assert term.type == rtype, f"{op}: type {term.type}, expected {rtype}"
    # numpy interpreter
    env = {n: np.array([v], dtype=object).astype(t.np_dtype) for n, (v, t) in zip(names, args)}
    got = int(evaluate(term, env)[0])
    assert got == expected, f"numpy: {op}{tuple(v for v, _ in args)} = {got}, expected {expected}"
    # Z3 encoding
    z = to_z3(term)
    subs = [(z3.BitVec(n, t.bits), z3.BitVecVal(v % (1 << t.bits), t.bits)) for n, (v, t) in zip(names, args)]
    zval = rtype.wrap(z3.simplify(z3.substitute(z, *subs)).as_long())
    assert zval == expected, f"z3: {op}{tuple(v for v, _ in args)} = {zval}, expected {expected}"
    # constant folding
    folded = make(op, *[const(v, t) for v, t in args], type=explicit)
    assert folded.is_const and folded.type == rtype and folded.value == expected
    # text
    typed = ", ".join(f"{t}({v})" for v, t in args)
    text = f"{op}<{explicit}>({typed})" if explicit is not None else f"{op}({typed})"
    assert parse(text) is folded


PINS = [
    # (widening_add(255, 255) + 1) >> 1 = 511 >> 1 = 255: the average of two maxima cannot overflow
    ("rounding_halving_add", [(255, u8), (255, u8)], 255, u8),
    # 510 >> 1 = 255
    ("halving_add", [(255, u8), (255, u8)], 255, u8),
    # floor((-128 + -1) / 2) = floor(-64.5) = -65 ; rounding: floor((-129 + 1) / 2) = -64
    ("halving_add", [(-128, i8), (-1, i8)], -65, i8),
    ("rounding_halving_add", [(-128, i8), (-1, i8)], -64, i8),
    # -128 - 127 = -255, floor(-255 / 2) = floor(-127.5) = -128 (fits: signed halving_sub never overflows)
    ("halving_sub", [(-128, i8), (127, i8)], -128, i8),
    # 127 - (-128) = 255, floor(255 / 2) = 127
    ("halving_sub", [(127, i8), (-128, i8)], 127, i8),
    # 0 - 1 = -1, floor(-1 / 2) = -1, wraps to 255 in u8
    ("halving_sub", [(0, u8), (1, u8)], 255, u8),
    # 0 - 255 = -255, floor(-255 / 2) = -128, wraps to 128 in u8
    ("halving_sub", [(0, u8), (255, u8)], 128, u8),
    # (-32768)^2 = 2^30; (2^30 + 2^14) >> 15 = 32768 (the +2^14 is below 2^15); saturates to 32767
    ("rounding_mul_shr", [(-32768, i16), (-32768, i16), (15, u16)], 32767, i16),
    # 2^30 >> 15 = 32768, saturates to 32767
    ("mul_shr", [(-32768, i16), (-32768, i16), (15, u16)], 32767, i16),
    # -32768 * 32767 = -1073709056; (-1073709056 + 16384) >> 15 = floor(-32767.0) = -32767
    ("rounding_mul_shr", [(-32768, i16), (32767, i16), (15, u16)], -32767, i16),
    # 16384 * 3 = 49152 ; (49152 + 2^14) >> 15 = 65536 >> 15 = 2 (ties round up); plain shift: 49152 >> 15 = 1
    ("rounding_mul_shr", [(16384, i16), (3, i16), (15, u16)], 2, i16),
    ("mul_shr", [(16384, i16), (3, i16), (15, u16)], 1, i16),
    # q = 0: rounding_shr by 0 is the identity, 200 * 200 = 40000 saturates in u8 to 255
    ("rounding_mul_shr", [(200, u8), (200, u8), (0, u8)], 255, u8),
    # |-128 - 127| = 255, as u8
    ("absd", [(-128, i8), (127, i8)], 255, u8),
    ("absd", [(127, i8), (-128, i8)], 255, u8),
    # |3 - 250| = 247
    ("absd", [(3, u8), (250, u8)], 247, u8),
    # |-128| = 128 fits in u8
    ("abs", [(-128, i8)], 128, u8),
    ("abs", [(I64_MIN, i64)], 2**63, u64),
    # 0 - 255 = -255, in the signed wide type
    ("widening_sub", [(0, u8), (255, u8)], -255, i16),
    # 255 * -128 = -32640 (mixed signedness, signed result)
    ("widening_mul", [(255, u8), (-128, i8)], -32640, i16),
    ("widening_mul", [(-128, i8), (255, u8)], -32640, i16),
    # 255 * 255 = 65025 fits u16
    ("widening_mul", [(255, u8), (255, u8)], 65025, u16),
    # 255 << 8 = 65280 in u16; -128 << 8 = -32768 in i16; -128 >> -3 = -128 * 8 = -1024 (negative amount)
    ("widening_shl", [(255, u8), (8, u8)], 65280, u16),
    ("widening_shl", [(-128, i8), (8, i8)], -32768, i16),
    ("widening_shr", [(-128, i8), (-3, i8)], -1024, i16),
    # extending: x + widen(y) wraps in x's type: 65535 + 255 = 65790 - 65536 = 254
    ("extending_add", [(65535, u16), (255, u8)], 254, u16),
    # u16 0 - widen(i8 -1): widen keeps y's sign, cast to u16 gives 65535; 0 - 65535 wraps to 1
    ("extending_sub", [(0, u16), (-1, i8)], 1, u16),
    # 300 * 200 = 60000 in i16 wraps to 60000 - 65536 = -5536
    ("extending_mul", [(300, i16), (200, u8)], -5536, i16),
    # clamp(-5, 0, 255) = 0 ; clamp(300, -128, 127) = 127 ; clamp(-1, 0, 65535) = 0
    ("saturating_cast", [(-5, i16)], 0, u8, u8),
    ("saturating_cast", [(300, u16)], 127, i8, i8),
    ("saturating_cast", [(-1, i8)], 0, u16, u16),
    # u64 max to i64: clamps to 2^63 - 1 ; i64 min to u8: 0 ; u64 max to u8: 255 ; i64 -1 to u32: 0
    ("saturating_cast", [(2**64 - 1, u64)], I64_MAX, i64, i64),
    ("saturating_cast", [(I64_MIN, i64)], 0, u8, u8),
    ("saturating_cast", [(2**64 - 1, u64)], 255, u8, u8),
    ("saturating_cast", [(-1, i64)], 0, parse_type("u32"), parse_type("u32")),
    # saturating add/sub at the extremes
    ("saturating_add", [(200, u8), (100, u8)], 255, u8),  # 300 -> 255
    ("saturating_add", [(127, i8), (1, i8)], 127, i8),  # 128 -> 127
    ("saturating_add", [(-128, i8), (-1, i8)], -128, i8),  # -129 -> -128
    ("saturating_add", [(-100, i8), (50, i8)], -50, i8),  # no saturation
    ("saturating_sub", [(5, u8), (10, u8)], 0, u8),  # -5 -> 0
    ("saturating_sub", [(-128, i8), (1, i8)], -128, i8),  # -129 -> -128
    ("saturating_sub", [(0, i8), (-128, i8)], 127, i8),  # 128 -> 127
    ("saturating_sub", [(127, i8), (-1, i8)], 127, i8),  # 128 -> 127
    ("saturating_add", [(I64_MAX, i64), (1, i64)], I64_MAX, i64),  # 2^63 -> 2^63 - 1
    ("saturating_sub", [(I64_MIN, i64), (1, i64)], I64_MIN, i64),  # -2^63 - 1 -> -2^63
    ("saturating_sub", [(0, u64), (1, u64)], 0, u64),  # -1 -> 0
    ("saturating_add", [(2**64 - 1, u64), (2**64 - 1, u64)], 2**64 - 1, u64),
    # rounding_shr(255, 8) = (255 + 128) >> 8 = 383 >> 8 = 1 ; by 9: (255 + 256) >> 9 = 511 >> 9 = 0
    ("rounding_shr", [(255, u8), (8, u8)], 1, u8),
    ("rounding_shr", [(255, u8), (9, u8)], 0, u8),
    # (127 + 64) >> 7 = 191 >> 7 = 1 ; (-128 + 64) >> 7 = floor(-64 / 128) = -1 ; (-65 + 64) >> 7 = -1
    ("rounding_shr", [(127, i8), (7, i8)], 1, i8),
    ("rounding_shr", [(-128, i8), (7, i8)], -1, i8),
    ("rounding_shr", [(-64, i8), (7, i8)], 0, i8),  # (-64 + 64) >> 7 = 0: ties round up
    # negative amount: 5 << 7 = 640 = 2 * 256 + 128 -> wraps to 128 -> i8 -128
    ("rounding_shr", [(5, i8), (-7, i8)], -128, i8),
    # amounts far beyond the width: (200 + 2^254) >> 255 = 0 for u8
    ("rounding_shr", [(200, u8), (255, u8)], 0, u8),
    # rounding_shl(x, -k) is the rounding right shift: (5 + 2) >> 2 = 1 ; (6 + 2) >> 2 = 2
    ("rounding_shl", [(5, i8), (-2, i8)], 1, i8),
    ("rounding_shl", [(6, i8), (-2, i8)], 2, i8),
    # rounding_shl(100, 1) = 200 wraps to -56
    ("rounding_shl", [(100, i8), (1, i8)], -56, i8),
    # Euclidean division and modulo: -5 = 2 * -3 + 1 ; -5 = -2 * 3 + 1 ; 5 = -1 * -3 + 2 ; 7 = 2 * 3 + 1
    ("div", [(-5, i8), (-3, i8)], 2, i8),
    ("mod", [(-5, i8), (-3, i8)], 1, i8),
    ("div", [(-5, i8), (3, i8)], -2, i8),
    ("mod", [(-5, i8), (3, i8)], 1, i8),
    ("div", [(5, i8), (-3, i8)], -1, i8),
    ("mod", [(5, i8), (-3, i8)], 2, i8),
    ("div", [(7, i8), (3, i8)], 2, i8),
    ("mod", [(7, i8), (3, i8)], 1, i8),
    ("div", [(-6, i8), (3, i8)], -2, i8),  # exact: no adjustment
    ("mod", [(-6, i8), (-3, i8)], 0, i8),
    # division and modulo by zero give 0
    ("div", [(7, i8), (0, i8)], 0, i8),
    ("mod", [(7, i8), (0, i8)], 0, i8),
    ("div", [(-7, i8), (0, i8)], 0, i8),
    ("div", [(200, u8), (0, u8)], 0, u8),
    ("mod", [(200, u8), (0, u8)], 0, u8),
    ("div", [(I64_MIN, i64), (0, i64)], 0, i64),
    # -128 / -1 = 128 wraps to -128 ; -128 % -1 = 0
    ("div", [(-128, i8), (-1, i8)], -128, i8),
    ("mod", [(-128, i8), (-1, i8)], 0, i8),
    ("div", [(I64_MIN, i64), (-1, i64)], I64_MIN, i64),
    # -9223372036854775807 = q * 10 + r with 0 <= r < 10: q = -922337203685477581, r = 3
    ("div", [(-(2**63) + 1, i64), (10, i64)], -922337203685477581, i64),
    ("mod", [(-(2**63) + 1, i64), (10, i64)], 3, i64),
    # Halide shifts: a negative signed amount shifts the other way
    ("shr", [(3, i16), (-2, i16)], 12, i16),  # 3 >> -2 = 3 << 2
    ("shr", [(-20000, i16), (-2, i16)], -14464, i16),  # -80000 wraps: -80000 + 131072 = 51072 -> -14464
    ("shl", [(-20, i16), (-2, i16)], -5, i16),  # -20 << -2 = -20 >> 2 = floor(-5) = -5
    ("shl", [(-21, i16), (-2, i16)], -6, i16),  # floor(-21 / 4) = floor(-5.25) = -6
    ("shl", [(1, u8), (8, u8)], 0, u8),  # 256 wraps to 0
    ("shl", [(1, u8), (200, u8)], 0, u8),
    ("shl", [(64, i8), (1, i8)], -128, i8),  # 128 wraps
    ("shr", [(-1, i8), (100, i8)], -1, i8),  # arithmetic: sign fill
    ("shr", [(-128, i8), (7, i8)], -1, i8),
    ("shr", [(-128, i8), (127, i8)], -1, i8),
    ("shr", [(127, i8), (100, i8)], 0, i8),
    ("shr", [(255, u8), (200, u8)], 0, u8),
    ("shr", [(255, u8), (7, u8)], 1, u8),  # logical for unsigned
    ("shr", [(1, i8), (-128, i8)], 0, i8),  # 1 << 128 wraps to 0
    ("shl", [(-1, i64), (-64, i64)], -1, i64),  # -1 >> 64 = -1
    ("shl", [(1, u64), (63, u64)], 2**63, u64),
    # widening ops on 64-bit operands are exact (128-bit results)
    ("widening_mul", [(I64_MIN, i64), (I64_MIN, i64)], 2**126, parse_type("i128")),
    ("widening_mul", [(2**64 - 1, u64), (2**64 - 1, u64)], (2**64 - 1) ** 2, parse_type("u128")),
    ("widening_mul", [(2**64 - 1, u64), (I64_MIN, i64)], (2**64 - 1) * I64_MIN, parse_type("i128")),
    ("widening_add", [(2**64 - 1, u64), (2**64 - 1, u64)], 2**65 - 2, parse_type("u128")),
    ("widening_sub", [(0, u64), (2**64 - 1, u64)], -(2**64) + 1, parse_type("i128")),
    ("widening_shl", [(I64_MIN, i64), (63, i64)], -(2**126), parse_type("i128")),
    ("widening_shr", [(1, i64), (-100, i64)], 2**100, parse_type("i128")),
    # 2^126 >> 63 = 2^63 > i64 max: saturates to 2^63 - 1
    ("mul_shr", [(I64_MIN, i64), (I64_MIN, i64), (63, u64)], I64_MAX, i64),
    # -2^63 * (2^63 - 1) = -2^126 + 2^63; >> 63 = -2^63 + 1
    ("mul_shr", [(I64_MIN, i64), (I64_MAX, i64), (63, u64)], I64_MIN + 1, i64),
    # (2^64-1)^2 >> 64 = 2^64 - 2 (the high half)
    ("mul_shr", [(2**64 - 1, u64), (2**64 - 1, u64), (64, u64)], 2**64 - 2, u64),
    # (2^62 + 2^30) >> 31 = 2^31 + 0 = 2147483648 > i32 max: saturates
    ("rounding_mul_shr", [(I32_MIN, i32), (I32_MIN, i32), (31, parse_type("u32"))], I32_MAX, i32),
    # (2^126 + 2^62) >> 63 = 2^63 saturates to i64 max
    ("rounding_mul_shr", [(I64_MIN, i64), (I64_MIN, i64), (63, u64)], I64_MAX, i64),
    # halving ops on 64-bit: floor((max + max) / 2) = max ; (min - max) / 2 = floor(-2^64 + 1) / 2 = -2^63
    ("halving_add", [(I64_MAX, i64), (I64_MAX, i64)], I64_MAX, i64),
    ("halving_sub", [(I64_MIN, i64), (I64_MAX, i64)], I64_MIN, i64),
    ("rounding_halving_add", [(2**64 - 1, u64), (2**64 - 2, u64)], 2**64 - 1, u64),
    ("absd", [(I64_MIN, i64), (I64_MAX, i64)], 2**64 - 1, u64),
    # saturating_shl (section 8.4): 1 << 20 = 2^20 > 255 -> 255 ; -1 << 7 = -128 fits ; 3 << -1 = 3 >> 1 = 1
    ("saturating_shl", [(1, u8), (20, u8)], 255, u8),
    ("saturating_shl", [(-1, i8), (7, i8)], -128, i8),
    ("saturating_shl", [(3, i8), (-1, i8)], 1, i8),
    ("saturating_shl", [(1, i8), (7, i8)], 127, i8),  # 128 -> 127
    ("saturating_shl", [(-1, i8), (8, i8)], -128, i8),  # -256 -> -128
    ("saturating_shl", [(0, u8), (255, u8)], 0, u8),  # 0 never saturates
    ("saturating_shl", [(1, i8), (127, i8)], 127, i8),  # 2^127 -> 127
    ("saturating_shl", [(-3, i8), (-128, i8)], -1, i8),  # floor(-3 / 2^128) = -1
    ("saturating_shl", [(1, i64), (63, i64)], I64_MAX, i64),  # 2^63 -> 2^63 - 1
    # comparisons, min/max and casts
    ("lt", [(-1, i8), (0, i8)], 1, parse_type("u1")),
    ("lt", [(255, u8), (0, u8)], 0, parse_type("u1")),
    ("max", [(-1, i8), (0, i8)], 0, i8),
    ("min", [(2**64 - 1, u64), (0, u64)], 0, u64),
    ("cast", [(-1, i8)], 65535, u16, u16),  # sign-extend then reinterpret
    ("cast", [(255, u8)], 255, i16, i16),  # zero-extend
    ("cast", [(300, i16)], 44, u8, u8),  # 300 - 256
    ("cast", [(2, u8)], 1, parse_type("u1"), parse_type("u1")),  # cast to u1 tests != 0
    ("cast", [(256, i16)], 1, parse_type("u1"), parse_type("u1")),
    ("reinterpret", [(-1, i8)], 255, u8, u8),
    ("reinterpret", [(2**63, u64)], I64_MIN, i64, i64),
    ("not", [(0, i8)], -1, i8),
    ("not", [(0, u64)], 2**64 - 1, u64),
]


def _pin_id(p: tuple) -> str:
    op, args = p[0], p[1]
    t = f"<{p[4]}>" if len(p) > 4 else ""
    return f"{op}{t}(" + ",".join(f"{t} {v}" for v, t in args) + f")={p[2]}"


@pytest.mark.parametrize("pin", PINS, ids=_pin_id)
def test_pin(pin: tuple) -> None:
    check(*pin)


def test_pins_through_text() -> None:
    """The pins the issue names, written as FPIR text (bare constants typed from context)."""
    cases = {
        "rounding_halving_add(u8(255), u8(255))": (255, u8),
        "halving_sub(i8(-128), 127)": (-128, i8),
        "rounding_mul_shr(i16(-32768), -32768, 15)": (32767, i16),
        "absd(i8(-128), 127)": (255, u8),
        "rounding_shr(u8(255), 8)": (1, u8),
        "rounding_shr(i8(5), -7)": (-128, i8),
        "i8(-128) / -1": (-128, i8),
        "i16(3) >> -2": (12, i16),
        "i8(-1) >> 100": (-1, i8),
        "u8(1) << 8": (0, u8),
        "saturating_shl(u8(1), 20)": (255, u8),
        "mul_shr(i64(-9223372036854775808), i64(-9223372036854775808), 63)": (I64_MAX, i64),
    }
    for text, (value, t) in cases.items():
        c = parse(text)
        assert c.is_const and c.type == t and c.value == value, text


def test_halving_sub_u8_vector() -> None:
    """halving_sub on u8 vectors: the bits equal the signed result (floor((a - b) / 2)) modulo 256."""
    a = np.arange(256, dtype=np.uint8).repeat(256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    got = evaluate(make("halving_sub", var("a", u8), var("b", u8)), {"a": a, "b": b})
    want = ((a.astype(np.int64) - b.astype(np.int64)) >> 1) & 255
    assert got.dtype == np.uint8 and np.array_equal(got.astype(np.int64), want)


def test_widening_mul_64_vector_exact() -> None:
    """64-bit widening_mul on vectors gives exact 128-bit Python integers."""
    vals = [I64_MIN, I64_MIN + 1, -1, 0, 1, I64_MAX]
    a = np.array(vals, dtype=np.int64).repeat(len(vals))
    b = np.tile(np.array(vals, dtype=np.int64), len(vals))
    got = evaluate(make("widening_mul", var("a", i64), var("b", i64)), {"a": a, "b": b})
    assert [int(v) for v in got] == [int(x) * int(y) for x, y in zip(a, b)]
