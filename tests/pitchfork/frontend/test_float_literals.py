"""Exact float32 constants in captured statements (pitchfork/frontend/float_literals.py): Halide prints
them with six decimals; the exact values come from its C output."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

from pitchfork.frontend.capture import capture_stmt
from pitchfork.frontend.float_literals import InexactFloatLiteral, rewrite
from pitchfork.frontend.stmt import parse_stmt


def f32(v: float) -> float:
    return float(np.float32(v))


def test_rewrite_replaces_rounded_literals_and_keeps_exact_ones() -> None:
    text = "x = (a*0.000312f) + 0.500000f - 1.842105f"
    out = rewrite(text, {f32(1 / 3200), 0.5, f32(1.8421052631578947)})
    assert out == f"x = (a*{f32(1 / 3200)!r}f) + 0.500000f - {f32(1.8421052631578947)!r}f"


def test_exact_literal_without_candidate_is_kept_inexact_one_refused() -> None:
    assert rewrite("y = 255.000000f", set()) == "y = 255.000000f"
    with pytest.raises(InexactFloatLiteral, match="0.333333f"):
        rewrite("y = 0.333333f", set())


def test_ambiguous_literal_is_refused() -> None:
    a = f32(0.1234561)
    b = float(np.nextafter(np.float32(a), np.float32(1)))
    assert f"{a:.6f}" == f"{b:.6f}"
    with pytest.raises(InexactFloatLiteral, match="2 exact values"):
        rewrite(f"z = {a:.6f}f", {a, b})


def test_captured_statement_has_the_exact_constants() -> None:
    x = hl.Var("x")
    p = hl.Param(hl.Float(32), "p")
    f = hl.Func("f")
    f[x] = hl.u8(hl.f32(x) * p * hl.f32(1 / 3200) + hl.f32(1.842105123))
    cap = capture_stmt(f, [p], "x86-avx2")
    consts = set()

    def walk(n: object) -> None:
        if type(n).__name__ == "FloatImm":
            consts.add(n.value)  # type: ignore[attr-defined]
        for name in getattr(n, "__dataclass_fields__", {}):
            v = getattr(n, name)
            for c in (v if isinstance(v, tuple) else (v,)):
                if hasattr(c, "__dataclass_fields__"):
                    walk(c)

    walk(parse_stmt(cap.text, buffers=cap.buffer_types))
    assert f32(1 / 3200) in consts and f32(1.842105123) in consts
