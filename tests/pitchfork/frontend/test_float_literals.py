"""Exact float constants in captured statements (pitchfork/frontend/float_literals.py): Halide prints
them with six decimals; the exact float32 values come from its C output, the float64 ones from the LLVM
module its code generator logs before optimising it."""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitchfork.frontend.capture import capture_stmt
from pitchfork.frontend.float_literals import (HALF_LITERAL, InexactFloatLiteral, halide_print, llvm_doubles,
                                               rewrite, rewrite_half)
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


def test_halide_print_matches_halide_at_the_scientific_threshold(tmp_path) -> None:
    """Below 1e-6 Halide 21 prints a float32 constant in scientific notation; `halide_print` must
    write every constant exactly as Halide does for the candidates to be found."""
    one = np.float32(1e-6)
    vals = [float(np.nextafter(one, np.float32(1))), float(one), float(np.nextafter(one, np.float32(0))),
            1.2e-6, f32(2.5963018e-07), f32(1e-44), f32(0.000312), f32(123456.7)]  # (a 0.0 is simplified away)
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    f = hl.Func("printed")
    f[x] = a[x]
    for i, v in enumerate(vals):  # one multiply per constant, each kept by the data dependence
        f[x] = f[x] * hl.f32(v) + a[x + i + 1]
    path = tmp_path / "f.stmt"
    f.compile_to_lowered_stmt(str(path), [a], hl.StmtOutputFormat.Text, hl.Target("x86-64-linux-avx2-fma-sse41"))
    printed = re.findall(r"\*([\d.e+-]+)f\)", path.read_text())
    assert printed == [halide_print(f32(v)) for v in vals]


def test_tiny_constants_no_longer_collide_with_zero() -> None:
    """fast_sin's polynomial has coefficients below 1e-6 and a 0.0: printed as `-2.596302e-07f` and
    `0.000000f`, each has one candidate (before the scientific form was read, three magnitudes printed
    as 0.000000 and the pipeline fell back)."""
    tiny, tinier = f32(2.5963018e-07), f32(2.5029328e-08)
    out = rewrite("y = (x*-2.596302e-07f) + (x*2.502933e-08f) + 0.000000f", {tiny, tinier, 0.0})
    assert out == f"y = (x*-{tiny!r}f) + (x*{tinier!r}f) + 0.000000f"


@pytest.mark.parametrize("fn", ["fast_sin", "fast_cos"])
def test_fast_sin_cos_compile_bit_exact(fn: str) -> None:
    import pitchfork

    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    f = hl.Func(f"{fn}_pf")
    f[x] = getattr(hl, fn)(a[x]) * 3.0
    f.vectorize(x, 8)
    prog = pitchfork.compile(f, [a], target="x86-avx2", name=f"{fn}_pf")
    assert not prog.is_fallback, prog.fallback_reason
    vals = np.linspace(-7, 7, 256, dtype=np.float32)
    a.set(hl.Buffer(vals))
    want = np.asarray(f.realize([256], hl.Target("x86-64-linux-avx2-fma-sse41")))
    assert np.array_equal(prog(vals).view(np.uint32), want.view(np.uint32))


def test_float64_literals_take_the_unoptimised_modules_exact_values() -> None:
    """float64 literals print with six decimals and no suffix; the exact values come from the LLVM
    module Halide's code generator logs before optimising it (hex IEEE bits or an exact decimal)."""
    log = ("Lowering...\nOptimizing module\n  %1 = fmul <4 x double> %0, splat (double 0x4005111111111111)\n"
           "  %2 = fadd double %1, 1.000000e+00\n  ret double 0x7FF0000000000000\n"
           "After LLVM optimizations:\n  %3 = fmul double %2, 0x3FF8000000000000\n")
    assert llvm_doubles(log) == {2.6333333333333333, 1.0}  # not inf, not the optimised module's 1.5
    text = "y = (t*2.633333) + 1.000000 + 0.500000f"
    assert rewrite(text, llvm_doubles(log), bits=64) == "y = (t*2.6333333333333333) + 1.000000 + 0.500000f"
    with pytest.raises(InexactFloatLiteral, match="float64 constant 0.333333"):
        rewrite("y = 0.333333", set(), bits=64)
    assert rewrite("y = 0.250000 + 3.000000e-09f", set(), bits=64) == "y = 0.250000 + 3.000000e-09f"


@pytest.mark.parametrize("isa", ["x86-avx2", "arm64"])
def test_folded_float64_constants_compile_bit_exact(isa: str) -> None:
    """Halide folds `a * (0.1 * 3.0) + a * 2.0 + 0.1 / 3.0` into `a*2.633333 + 0.033333` in its
    statement; with the printed values the results were off by ~1e-7 relative, silently."""
    import pitchfork

    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(64), 1, "a")
    f = hl.Func(f"f64_{isa.replace('-', '_')}")
    f[x] = a[x] * (hl.f64(0.1) * hl.f64(3.0)) + a[x] * hl.f64(2.0) + hl.f64(0.1) / hl.f64(3.0) + hl.exp(a[x] * 0.01)
    f.vectorize(x, 4)
    prog = pitchfork.compile(f, [a], target=isa, name=f.name())
    assert not prog.is_fallback, prog.fallback_reason
    vals = np.random.default_rng(3).random(64) * 100
    a.set(hl.Buffer(vals))
    want = np.asarray(f.realize([64], hl.Target("x86-64-linux-avx2-fma-sse41")))
    got = prog(vals)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


def test_half_literals_take_the_one_float16_value_that_prints_so() -> None:
    """float16 literals (`h`) as Halide 21 prints them: the rounded ones become the float16 value they
    stand for, exact ones are kept, one that several float16 values print as is refused. The printed
    texts are Halide's own (a captured statement), so the table agrees with Halide's printer."""
    x = hl.Var("x")
    b = hl.ImageParam(hl.Float(16), 1, "b")
    f = hl.Func("half_lits")
    consts = [0.1, 1.0 / 3, 1e-7, 60000.0, 0.5]
    terms = [b[x + i] * hl.cast(hl.Float(16), hl.f32(c)) for i, c in enumerate(consts)]  # not folded
    f[x] = sum(terms[1:], terms[0])
    text = capture_stmt(f, [b], "x86-64-linux-avx2-fma-f16c").text
    printed = HALF_LITERAL.findall(text)
    assert sorted(printed) == sorted({halide_print(float(np.float16(c))) for c in consts})
    out = rewrite_half(text)
    got = {float(m) for m in HALF_LITERAL.findall(out)}
    assert got == {float(np.float16(c)) for c in consts}
    assert "0.500000h" in out and "60000.000000h" in out  # exact as printed: kept
    with pytest.raises(InexactFloatLiteral, match=r"0.000030h: .* 17 float16 values"):
        rewrite_half("y = 0.000030h")


#: the patterns as written before they were sped up (literal_suffixes, FLOAT16_TYPE, checks._BFLOAT):
#: the reference for the faster forms' matches
_REFERENCE = {
    "f": r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)f(?![\w.$])",
    "h": r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)h(?![\w.$])",
    "": r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)(?![\w.$])",
}
_REF_FLOAT16 = r"(?<![\w.$])float16(?:x\d+)?(?![\w.$])"
_REF_BFLOAT16 = r"(?<![\w.$])bfloat16(?:x\d+)?(?![\w.$])"

_PIECES = st.sampled_from(["1", "25", ".", "e", "+", "-", "f", "h", "x", "8", " ", "(", "$", "_", "a",
                           "float16", "bfloat16", "0.500000", "1.5e-07", "\n"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_literal_suffixes_and_type_patterns_agree_with_the_plain_patterns(text: str) -> None:
    from pitchfork.frontend.checks import _BFLOAT
    from pitchfork.frontend.float_literals import (FLOAT16_TYPE, has_float64_literals, has_float_literals,
                                                   has_half_literals, literal_suffixes)

    want = {suffix for suffix, p in _REFERENCE.items() if re.search(p, text)}
    assert literal_suffixes(text) == want
    assert (has_float_literals(text), has_half_literals(text), has_float64_literals(text)) == \
        ("f" in want, "h" in want, "" in want)
    for fast, ref in ((FLOAT16_TYPE, _REF_FLOAT16), (_BFLOAT, _REF_BFLOAT16)):
        assert [m.span() for m in fast.finditer(text)] == [m.span() for m in re.finditer(ref, text)]
