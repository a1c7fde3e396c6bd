"""Exact float constants in captured statements (pitchfork/frontend/float_literals.py): the capture
child sets std::cerr's precision (_capture_worker.exact_float_log), so Halide's log prints every float
literal with digits that read back bit for bit."""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitchfork.frontend import capture
from pitchfork.frontend.capture import CaptureError, capture_stmt
from pitchfork.frontend.stmt import parse_stmt


def f32(v: float) -> float:
    return float(np.float32(v))


def _float_consts(text: str, buffers: dict) -> dict[int, set[float]]:
    """The FloatImm values of a statement, by bit width."""
    consts: dict[int, set[float]] = {}

    def walk(n: object) -> None:
        if type(n).__name__ == "FloatImm":
            consts.setdefault(n.type.bits, set()).add(n.value)  # type: ignore[attr-defined]
        for name in getattr(n, "__dataclass_fields__", {}):
            v = getattr(n, name)
            for c in (v if isinstance(v, tuple) else (v,)):
                if hasattr(c, "__dataclass_fields__"):
                    walk(c)

    walk(parse_stmt(text, buffers=buffers))
    return consts


def test_captured_statement_has_the_exact_constants() -> None:
    x = hl.Var("x")
    p = hl.Param(hl.Float(32), "p")
    f = hl.Func("f")
    f[x] = hl.u8(hl.f32(x) * p * hl.f32(1 / 3200) + hl.f32(1.842105123))
    cap = capture_stmt(f, [p], "x86-avx2")
    assert {f32(1 / 3200), f32(1.842105123)} <= _float_consts(cap.text, cap.buffer_types)[32]


#: magnitudes around Halide's switch to scientific notation (1e-6), subnormals, the extremes, and
#: constants six decimals rounded (1/3, 0.1, ...)
_MAGNITUDES = [1e-6, 1.2e-6, 9.9999e-7, 2.5963018e-07, 1e-44, 1.401298464324817e-45, 0.000312, 1 / 3, 0.1,
               123456.7, 3.4028234663852886e38, 1e-300, 4.9e-324, 1.7976931348623157e308, 1.234567890123e-6,
               0.1 + 2 ** -52, 2 ** -14, 2 ** -24, 3e-5, 65504.0, 1e-5]


@pytest.mark.parametrize("bits", [64, 32, 16])
def test_every_float_literal_reads_back_exactly(bits: int) -> None:
    """Each constant, of float64 / float32 / float16 (every neighbour of the 1e-6 threshold as well),
    one multiply each so the simplifier keeps it, is in the parsed statement with its exact value."""
    ty, np_ty = {64: (hl.Float(64), np.float64), 32: (hl.Float(32), np.float32), 16: (hl.Float(16), np.float16)}[bits]
    vals = set()
    with np.errstate(over="ignore"):  # magnitudes beyond the type's range: inf, left out
        for m in _MAGNITUDES:
            v = np_ty(m)
            if np.isfinite(v) and v != 0:
                vals |= {float(v), float(np.nextafter(v, np_ty(0))), float(np.nextafter(v, np_ty(np.inf)))}
    vals = sorted(v for v in vals if v != 0 and np.isfinite(v))
    x = hl.Var("x")
    a = hl.ImageParam(ty, 1, "a")
    f = hl.Func(f"exact_f{bits}")
    e = a[x]
    for i, v in enumerate(vals):
        e = e * hl.cast(ty, hl.f64(v)) + a[x + i + 1]
    f[x] = e
    cap = capture_stmt(f, [a], "x86-64-linux-avx2-fma-f16c", upto_intrinsics=True)
    assert cap.text.count("e-") > 0  # some printed in scientific notation
    assert set(vals) <= _float_consts(cap.text, cap.buffer_types)[bits]


def test_a_log_without_exact_floats_is_refused() -> None:
    """A log whose floats were printed with the default six decimals (no precision marker) gives no
    statement with float literals (one without them is fine)."""
    log = ("Creating initial loop nests...\nLowering after vectorizing:\nf[x] = a[x]*{}\n\n"
           "Finding intrinsics...\n")
    args = (capture.ArgInfo("a", "input_buffer", capture.HType("float", 32), 1),)
    assert capture._build(log.format("2"), "", "", "arm64", args, (), "subprocess").text == "f[x] = a[x]*2\n"
    with pytest.raises(CaptureError, match="printed the float constants .* rounded"):
        capture._build(log.format("0.100000f"), "", "", "arm64", args, (), "subprocess")
    exact = capture.EXACT_FLOATS_MARKER + "\n" + log.format("0.10000000149011611938477f")
    assert "0.10000000149011611938477f" in capture._build(exact, "", "", "arm64", args, (), "subprocess").text


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


def test_inprocess_capture_prints_exact_floats_and_restores_precision() -> None:
    """In-process capture sets the user's std::cerr precision only around its lowering: the statement
    is the subprocess capture's, and the precision is 6 again afterwards."""
    import json
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    code = textwrap.dedent("""
        import ctypes, json
        from pitchfork.frontend.capture import capture_stmt, enable_inprocess_capture
        from pitchfork.frontend._capture_worker import _cerr_base
        assert enable_inprocess_capture()
        import halide as hl
        x = hl.Var("x"); a = hl.ImageParam(hl.Float(64), 1, "a"); f = hl.Func("f")
        f[x] = a[x] * hl.f64(0.1) + hl.f64(1 / 3)
        i = capture_stmt(f, [a], "arm64")
        s = capture_stmt(f, [a], "arm64", mode="subprocess")
        precision = ctypes.c_int64.from_address(_cerr_base()[2] + 8).value
        print(json.dumps([i.mechanism, i.text, s.text, precision]))
    """)
    env = {k: v for k, v in os.environ.items() if k != "HL_DEBUG_CODEGEN"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[3]), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    mechanism, text_i, text_s, precision = json.loads(r.stdout)
    assert mechanism == "inprocess" and precision == 6
    literals = [re.findall(r"\d+\.\d+", t) for t in (text_i, text_s)]  # (temporaries' names differ)
    assert literals[0] == literals[1] and {f"{0.1:.23f}", f"{1 / 3:.23f}"} <= set(literals[0])


def test_bfloat16_literals_are_typed_and_checked() -> None:
    from pitchfork.frontend.bfloat_literals import rewrite_bfloat
    from pitchfork.frontend.float_literals import InexactFloatLiteral

    assert rewrite_bfloat("y = x8(-0.30078125000000000000000h) + 1.5h") == \
        "y = x8((bfloat16)-0.30078125000000000000000h) + (bfloat16)1.5h"
    with pytest.raises(InexactFloatLiteral, match="0.3h is not a bfloat16 value"):
        rewrite_bfloat("y = 0.3h")


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
    from pitchfork.frontend.float_literals import FLOAT16_TYPE, HALF_LITERAL, has_half_literals, literal_suffixes

    want = {suffix for suffix, p in _REFERENCE.items() if re.search(p, text)}
    assert literal_suffixes(text) == want
    assert has_half_literals(text) == ("h" in want) == (HALF_LITERAL.search(text) is not None)
    for fast, ref in ((FLOAT16_TYPE, _REF_FLOAT16), (_BFLOAT, _REF_BFLOAT16)):
        assert [m.span() for m in fast.finditer(text)] == [m.span() for m in re.finditer(ref, text)]
