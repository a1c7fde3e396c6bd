"""frontend/arg_estimates: integer constants are read from their printed form instead of a JIT
evaluation; every such value must be the one Halide's own evaluation gives."""

from __future__ import annotations

import halide as hl
import pytest

from pitchfork.frontend.arg_estimates import integer_constant, argument_estimates

_CASES = [
    (hl.Int(8), [-128, -100, 0, 127]),
    (hl.UInt(8), [0, 200, 255]),
    (hl.Int(16), [-32768, 32767]),
    (hl.UInt(16), [65535]),
    (hl.Int(32), [-(2**31), -1, 0, 7, 2**31 - 1]),
    (hl.UInt(32), [2**32 - 1]),
    (hl.Int(64), [-(2**63), -5, 2**63 - 1]),
    (hl.UInt(64), [2**64 - 1]),
]


@pytest.mark.parametrize("t,values", _CASES, ids=lambda c: str(c) if isinstance(c, hl.Type) else "")
def test_printedinteger_constants_are_halides_values(t: hl.Type, values: list[int]) -> None:
    for v in values:
        if t.bits() == 64 and t.is_uint():
            e = hl.UInt(64).max()
        elif t.bits() == 64:
            e = {-(2**63): hl.Int(64).min(), 2**63 - 1: hl.Int(64).max()}.get(v, hl.cast(t, hl.i64(v)))
        else:
            e = hl.cast(t, hl.i64(v))
        got = integer_constant(e)
        want = int(hl.evaluate(e))
        assert got == want == v, (str(e), got, want)


def test_bool_and_non_constants() -> None:
    assert integer_constant(hl.Expr(True)) == 1
    assert integer_constant(hl.f32(2.0)) is None  # a float's printed form is rounded: evaluated instead
    p = hl.Param(hl.Int(32), "p")
    assert integer_constant(p + 1) is None
    # not folded by the binding: read by hl.evaluate instead, never guessed
    assert integer_constant(hl.cast(hl.UInt(64), hl.Int(64).max()) + hl.cast(hl.UInt(64), 1)) is None


def test_estimates_match_the_evaluated_ones() -> None:
    """The whole reader, integer Params with ranges / estimates and a buffer with estimates, against
    hl.evaluate of each estimate."""
    a = hl.Param(hl.Int(8), "a")
    a.set_range(hl.i8(-100), hl.i8(100))
    b = hl.Param(hl.UInt(64), "b")
    b.set_estimate(2**64 - 1)
    img = hl.ImageParam(hl.UInt(8), 2, "img")
    img.dim(0).set_estimate(0, 1536)
    x, y = hl.Var("x"), hl.Var("y")
    hl.Func("f")  # a Func of the same name before it, as in a test process that made others: Halide renames it
    f = hl.Func("f")
    f[x, y] = img[x, y] + hl.cast(hl.UInt(8), a) + hl.cast(hl.UInt(8), b)
    f.set_estimates([(0, 64), (-3, 32)])
    got = {e.name: e for e in argument_estimates([img, a, b], hl.Pipeline(f))}
    assert got["a"].scalar_min == 156 and got["a"].scalar_max == 100  # int8 bits: -100 is 0x9c
    assert got["b"].scalar_estimate == 2**64 - 1 and got["b"].scalar_min is None
    assert got["img"].buffer == ((0, 1536), (None, None))
    assert got[f.name()].buffer == ((0, 64), (-3, 32))  # "f$2" where another Func "f" exists in the process
