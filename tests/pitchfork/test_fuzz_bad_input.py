"""Fuzzing bad input (issue 8): random mutations of valid expressions, rule files and command-line
arguments, and random values passed to a compiled pipeline, never give a traceback, a hang or a wrong
answer: only a result (checked) or a one-line error with a documented exit code / exception class.

The CLI is called in process (`pitchfork.cli.main(argv)`); an unanticipated exception would come out
as exit 70 (internal error), which fails the test. A lifted or selected result is checked against the
input with the FPIR interpreter on random data. Example counts are bounded (a few seconds each).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpir import parse
from fpir.interp import evaluate
from pitchfork.cli import main
from pitchfork.errors import EXIT_FILE, EXIT_INPUT, EXIT_OK, EXIT_USAGE, ParamTypeError, ParamValueError

SEEDS = [
    "u8(min(u16(a_u8) + u16(b_u8), 255))",
    "u8((u16(a_u8) + u16(b_u8) + 1) / 2)",
    "i16(min(max((i32(a_i16) * i32(b_i16) + 16384) >> 15, -32768), 32767))",
    "select(a_u8 > b_u8, a_u8 - b_u8, b_u8 - a_u8)",
    "saturating_cast<u8>(absd(widening_add(a_u8, c_u8) + widening_shl(b_u8, 1), d_u16))",
    "rounding_halving_add(a_u8, b_u8) << 2 | ~c_u8",
]
JUNK = ["(", ")", ",", "+", "-", "*", "/", "%", "<<", ">>", "<", ">", "==", "!", "~", "&&", "||", "_", "u8",
        "i64", "u1", "x_", "abs(", "cast<u8>(", "reinterpret<", "0", "255", "-1", "99999999999999999999",
        "#", " ", "\t", "é", "\x00", "\ufffd", "a_u8", "b_i8", "c0", "either(", "select(", "widening_mul("]

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 6)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(JUNK)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.sampled_from(JUNK)) + text[j:]
        else:
            text = text[:i] + text[i:j] * 2 + text[j:]
    return text


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "internal error" not in out.err, (argv, out.err)
    return code, out.out, out.err


def _same_meaning(source: str, result: str) -> None:
    """`result` computes what `source` computes (on random data)."""
    a, b = parse(source), parse(result)
    assert a.type == b.type
    rng = np.random.default_rng(0)
    env = {v.name: rng.integers(v.type.min, v.type.max + 1, 256, dtype=np.int64).astype(v.type.np_dtype)
           for v in a.variables()}
    assert np.array_equal(evaluate(a, env), evaluate(b, env)), (source, result)


@SETTINGS
@given(text=mutated(SEEDS))
def test_fuzz_lift_expression(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["lift", text], capsys)
    assert code in (EXIT_OK, EXIT_INPUT, EXIT_USAGE), (text, code, err)
    if code == EXIT_OK:
        _same_meaning(text, out.strip())
    else:
        assert len(err.strip().splitlines()) <= 3, err  # one line (argparse: usage + error)


@SETTINGS
@given(text=mutated(SEEDS[:4]))
def test_fuzz_select_expression(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["select", text, "-t", "arm64"], capsys)
    assert code in (EXIT_OK, EXIT_INPUT, EXIT_USAGE), (text, code, err)
    if code == EXIT_OK:
        final = next(line for line in out.splitlines() if line.startswith("final:"))[len("final:"):].strip()
        _same_meaning(text, final)


RULES = [
    "r1: x_u8 + y_u8 -> y_u8 + x_u8",
    "r2: widening_add(x_T, y_T) >> 1 -> cast<wide(T)>(halving_add(x_T, y_T))",
    "r3: cast<A>(widening_add(x_T, y_T) >> c0) -> reinterpret<A>(halving_add(x_T, y_T) >> (c0 - 1)) "
    "if bits(A) == bits(T) && c0 > 1 && c0 <= bits(T)",
    "r4: x_T * c0 -> x_T << log2(c0) if is_pow2(c0)",
    "r5: either(max(x_T, y_T) - min(x_T, y_T), max(y_T, x_T) - min(x_T, y_T)) -> reinterpret<T>(absd(x_T, y_T))",
]


@SETTINGS
@given(text=mutated(RULES), as_bytes=st.booleans())
def test_fuzz_rule_files(text: str, as_bytes: bool, tmp_path_factory: pytest.TempPathFactory,
                         capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path_factory.mktemp("rules") / "fuzz.rules"
    if as_bytes:
        f.write_bytes(text.encode("utf-8", "surrogatepass")[:-1] + b"\xff\n")
    else:
        f.write_text(text + "\n", encoding="utf-8")
    # --rule naming no rule: the file is parsed and checked (file:line:col errors), Z3 never runs.
    code, _, err = _run(["verify", str(f), "--rule", "zz_no_such_rule", "--no-progress"], capsys)
    assert code in (EXIT_INPUT, EXIT_USAGE, EXIT_FILE), (text, code, err)
    if code == EXIT_INPUT:
        assert str(f) in err
    code, _, err = _run(["lift", "--rules", str(f), "a_u8 + b_u8"], capsys)
    assert code in (EXIT_OK, EXIT_INPUT, EXIT_FILE), (text, code, err)


FLAGS = ["--lanes", "-n", "--target", "-t", "--isel", "--emit", "--batch", "-o", "--jobs", "--trace", "--stats",
         "--rules", "--allow-errors", "--rule", "--no-progress", "--bogus", "-"]
VALUES = ["0", "-4", "16", "100000", "x", "arm64", "x86-avx2", "hvx128", "sparc", "llvm", "pitchfork", "asm",
          "fpir", "/nonexistent/file", "/", "a_u8 + b_u8", "absd(a_u8, b_u8)", ""]


@SETTINGS
@given(cmd=st.sampled_from(["lift", "select", "verify"]),
       rest=st.lists(st.sampled_from(FLAGS + VALUES), max_size=6))
def test_fuzz_arguments(cmd: str, rest: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    if cmd == "verify" and not any(r.startswith("/") for r in rest):
        rest = [*rest, "/nonexistent/file"]  # never the default (slow) run of every shipped rule
    if "-" in rest or "--batch" in rest and rest[-1] == "--batch":
        rest = [r for r in rest if r != "-"]  # stdin is not ours to read
    if "--emit" in rest:
        i = rest.index("--emit")
        if i + 1 < len(rest) and rest[i + 1] == "asm":
            rest[i + 1] = "fpir"  # keep LLVM out of the fuzz loop
    code, _, err = _run([cmd, *rest], capsys)
    assert code in (EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_FILE, 5), (cmd, rest, code, err)


# ---- the compile API: random arguments to a compiled pipeline -------------------------------------

X = hl.Var("x")


@pytest.fixture(scope="module")
def scaled() -> tuple:
    import pitchfork
    from pitchfork.api import PitchforkFallbackWarning

    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    k = hl.Param(hl.Int(8), "k")
    f = hl.Func("scaled")
    f[X] = hl.u8(hl.clamp(hl.i16(inp[X]) * k, 0, 255))
    f.vectorize(X, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        prog = pitchfork.compile(f, [inp, k])
    f.compile_jit()
    return prog, f, inp, k


SCALARS = st.one_of(st.integers(-300, 300), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none(),
                    st.text(max_size=3), st.integers(-200, 200).map(np.int16), st.integers(0, 300).map(np.uint16),
                    st.floats(-130, 130).map(np.float32))
ARRAYS = st.one_of(st.integers(0, 40).map(lambda n: np.arange(n, dtype=np.uint8)),
                   st.integers(1, 8).map(lambda n: np.zeros((n, n), np.uint8)),
                   st.integers(1, 8).map(lambda n: np.ones(n, np.int16)),
                   st.just([1, 2, 3]))


@SETTINGS
@given(arr=ARRAYS, value=SCALARS)
def test_fuzz_compiled_pipeline_arguments(scaled: tuple, arr: object, value: object) -> None:
    prog, f, inp, k = scaled
    try:
        got = prog(arr, value)
    except (ParamValueError, ParamTypeError) as e:
        assert str(e).startswith("parameter k"), e
        return
    except TypeError as e:  # wrong dtype / dimensions: documented
        assert "inp" in str(e) or "input" in str(e), e
        return
    except RuntimeError as e:  # a failed Halide assertion (e.g. fewer than 16 elements): documented
        assert "Halide assertion" in str(e), e
        return
    a = np.asarray(arr)
    k8 = (int(value) + 128) % 256 - 128  # type: ignore[call-overload]  # Int(8): 255 means -1, as in Halide
    want = np.clip(a.astype(np.int64) * k8, 0, 255)
    assert np.array_equal(got, want.astype(np.uint8)), (arr, value)
