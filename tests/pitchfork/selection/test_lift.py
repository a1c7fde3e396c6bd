"""Lifting: Figure 2 (Sobel), expected lifted forms of the idioms, and semantic preservation.

* Figure 2b lifts to exactly Figure 2c.
* EXPECTED lists integer idioms with the exact FPIR text they lift to; together they reach every FPIR
  op (checked), and each pair is also checked to agree under the numpy interpreter.
* A hypothesis property test lifts thousands of random integer expressions (with the idiom shapes the
  rules target mixed in) and checks interp(lift(e)) == interp(e) bit-exactly on random and edge
  inputs, and that rules fire on a good fraction of them.
* The `pitchfork lift` CLI: single expression, --trace, --batch JSON lines (errors per line), --stats.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from trs.termgen import inputs_for, integer_terms

from fpir import FPIR_OPS, parse
from fpir.interp import evaluate
from fpir.term import Term
from pitchfork.cli import main as cli_main
from pitchfork.selection.lift import lift, lift_rules, lift_with_stats

ROOT = Path(__file__).resolve().parents[3]

SOBEL_2B = ("u8(min(absd(u16(a_u8) + u16(b_u8) * x(2) + u16(c_u8), u16(d_u8) + u16(e_u8) * x(2) + u16(f_u8)) + "
            "absd(u16(g_u8) + u16(h_u8) * x(2) + u16(i_u8), u16(j_u8) + u16(k_u8) * x(2) + u16(l_u8)), x(255)))")
SOBEL_2C = ("saturating_cast<u8>(absd(widening_add(a_u8, c_u8) + widening_shl(b_u8, x(1)), "
            "widening_add(d_u8, f_u8) + widening_shl(e_u8, x(1))) + absd(widening_add(g_u8, i_u8) + "
            "widening_shl(h_u8, x(1)), widening_add(j_u8, l_u8) + widening_shl(k_u8, x(1))))")


def test_sobel_figure_2b_lifts_to_figure_2c() -> None:
    assert lift(parse(SOBEL_2B)) is parse(SOBEL_2C)


def test_sobel_trace_uses_figure4_rules() -> None:
    _, stats = lift_with_stats(parse(SOBEL_2B), trace=True)
    assert set(stats.fired) == {"widening_shl_from_mul_pow2", "extending_add_from_cast",
                                "widening_add_from_extending_pair", "saturating_cast_from_umin"}
    assert not stats.not_decreasing


# (input idiom, exact lifted FPIR text)
EXPECTED = [
    ('u16(a_u8) + u16(b_u8)',
     'widening_add(a_u8, b_u8)'),
    ('i16(a_u8) + i16(b_u8)',
     'reinterpret<i16>(widening_add(a_u8, b_u8))'),
    ('u32(a_u8) + u32(b_u8)',
     'u32(widening_add(a_u8, b_u8))'),
    ('i16(a_u8) - i16(b_u8)',
     'widening_sub(a_u8, b_u8)'),
    ('u16(a_u8) - u16(b_u8)',
     'reinterpret<u16>(widening_sub(a_u8, b_u8))'),
    ('i16(a_u8) - 128',
     'widening_sub(a_u8, 128)'),
    ('i16(a_u8) + -128',
     'widening_sub(a_u8, 128)'),
    ('255 - i16(a_u8)',
     'widening_sub(255, a_u8)'),
    ('u16(a_u8) * u16(b_u8)',
     'widening_mul(a_u8, b_u8)'),
    ('i32(a_i16) * i32(b_i16)',
     'widening_mul(a_i16, b_i16)'),
    ('i16(a_u8) * i16(b_i8)',
     'widening_mul(a_u8, b_i8)'),
    ('i16(b_i8) * i16(a_u8)',
     'widening_mul(a_u8, b_i8)'),
    ('i32(a_i16) * 23170',
     'widening_mul(a_i16, 23170)'),
    ('i16(a_u8) * -3',
     'widening_mul(a_u8, i8(-3))'),
    ('u16(a_u8) * 4',
     'widening_shl(a_u8, 2)'),
    ('i16(a_u8) * 64',
     'reinterpret<i16>(widening_shl(a_u8, 6))'),
    ('i16(a_u8) << 6',
     'reinterpret<i16>(widening_shl(a_u8, 6))'),
    ('u16(a_u8) << 3',
     'widening_shl(a_u8, 3)'),
    ('u16(a_u8) << u16(b_u8)',
     'widening_shl(a_u8, b_u8)'),
    ('u16(a_u8) >> 3',
     'widening_shr(a_u8, 3)'),
    ('u16(a_u8) / 8',
     'widening_shr(a_u8, 3)'),
    ('u16(a_u8) >> u16(b_u8)',
     'widening_shr(a_u8, b_u8)'),
    ('c_u16 + u16(a_u8)',
     'extending_add(c_u16, a_u8)'),
    ('c_u16 - u16(a_u8)',
     'extending_sub(c_u16, a_u8)'),
    ('c_i32 * i32(a_i16)',
     'extending_mul(c_i32, a_i16)'),
    ('c_i32 + i32(a_i16) * i32(b_i16)',
     'c_i32 + widening_mul(a_i16, b_i16)'),
    ('c_u16 + u16(a_u8) * u16(b_u8)',
     'c_u16 + widening_mul(a_u8, b_u8)'),
    ('u8((u16(a_u8) + u16(b_u8)) >> 1)',
     'halving_add(a_u8, b_u8)'),
    ('u8((u16(a_u8) + u16(b_u8)) / 2)',
     'halving_add(a_u8, b_u8)'),
    ('i8((i16(a_i8) + i16(b_i8)) / 2)',
     'halving_add(a_i8, b_i8)'),
    ('u8((u16(a_u8) + u16(b_u8)) >> 3)',
     'halving_add(a_u8, b_u8) >> 2'),
    ('(a_u8 & b_u8) + ((a_u8 ^ b_u8) >> 1)',
     'halving_add(a_u8, b_u8)'),
    ('u8((u16(a_u8) + u16(b_u8) + 1) >> 1)',
     'rounding_halving_add(a_u8, b_u8)'),
    ('u8((u16(a_u8) + u16(b_u8) + 1) / 2)',
     'rounding_halving_add(a_u8, b_u8)'),
    ('u8((i16(a_u8) + i16(b_u8) + 1) / 2)',
     'rounding_halving_add(a_u8, b_u8)'),
    ('u8((u16(a_u8) + 5) / 2)',
     'rounding_halving_add(a_u8, 4)'),
    ('(a_u8 | b_u8) - ((a_u8 ^ b_u8) >> 1)',
     'rounding_halving_add(a_u8, b_u8)'),
    ('i8((i16(a_i8) - i16(b_i8)) >> 1)',
     'halving_sub(a_i8, b_i8)'),
    ('u8((u16(a_u8) - u16(b_u8)) >> 1)',
     'halving_sub(a_u8, b_u8)'),
    ('u8((i16(a_u8) - i16(b_u8)) / 2)',
     'halving_sub(a_u8, b_u8)'),
    ('u8((u16(a_u8) + 8) >> 4)',
     'rounding_shr(a_u8, 4)'),
    ('u8((u16(a_u8) + 8) / 16)',
     'rounding_shr(a_u8, 4)'),
    ('i8((i16(a_i8) + 8) >> 4)',
     'rounding_shr(a_i8, 4)'),
    ('u8((u16(a_u8) + 2 * u16(b_u8) + u16(c_u8) + 2) >> 2)',
     'u8(rounding_shr(widening_add(a_u8, c_u8) + widening_shl(b_u8, 1), 2))'),
    ('(a_i16 + 8) << -4',
     'a_i16 + 8 << -4'),
    ('u8(min(max(a_i16, 0), 255))',
     'saturating_cast<u8>(a_i16)'),
    ('u8(max(min(a_i32, 255), 0))',
     'saturating_cast<u8>(a_i32)'),
    ('i8(min(max(a_i16, -128), 127))',
     'saturating_cast<i8>(a_i16)'),
    ('u8(min(a_u16, 255))',
     'saturating_cast<u8>(a_u16)'),
    ('i16(min(a_u16, 32767))',
     'saturating_cast<i16>(a_u16)'),
    ('u8(max(a_i8, 0))',
     'saturating_cast<u8>(a_i8)'),
    ('u8(min(u16(a_u8) + u16(b_u8), 255))',
     'saturating_add(a_u8, b_u8)'),
    ('i8(min(max(i16(a_i8) + i16(b_i8), -128), 127))',
     'saturating_add(a_i8, b_i8)'),
    ('select(a_u8 + b_u8 < a_u8, 255, a_u8 + b_u8)',
     'saturating_add(a_u8, b_u8)'),
    ('a_u8 + min(b_u8, ~a_u8)',
     'saturating_add(a_u8, b_u8)'),
    ('u8(max(i16(a_u8) - i16(b_u8), 0))',
     'saturating_sub(a_u8, b_u8)'),
    ('i8(max(min(i16(a_i8) - i16(b_i8), 127), -128))',
     'saturating_sub(a_i8, b_i8)'),
    ('max(a_u8, b_u8) - b_u8',
     'saturating_sub(a_u8, b_u8)'),
    ('a_u8 - min(a_u8, b_u8)',
     'saturating_sub(a_u8, b_u8)'),
    ('select(a_u8 > b_u8, a_u8 - b_u8, 0)',
     'saturating_sub(a_u8, b_u8)'),
    ('u8(min(u16(a_u8) << 3, 255))',
     'saturating_shl(a_u8, 3)'),
    ('i8(max(min(i16(a_i8) * 8, 127), -128))',
     'saturating_shl(a_i8, 3)'),
    ('select(a_i16 < 0, -a_i16, a_i16)',
     'reinterpret<i16>(abs(a_i16))'),
    ('select(a_i8 > 0, a_i8, 0 - a_i8)',
     'reinterpret<i8>(abs(a_i8))'),
    ('max(a_i32, -a_i32)',
     'reinterpret<i32>(abs(a_i32))'),
    ('select(a_u8 > b_u8, a_u8 - b_u8, b_u8 - a_u8)',
     'absd(a_u8, b_u8)'),
    ('select(a_i16 < b_i16, b_i16 - a_i16, a_i16 - b_i16)',
     'reinterpret<i16>(absd(a_i16, b_i16))'),
    ('max(a_u8, b_u8) - min(a_u8, b_u8)',
     'absd(a_u8, b_u8)'),
    ('u8(abs(i16(a_u8) - i16(b_u8)))',
     'absd(a_u8, b_u8)'),
    ('abs(i16(a_u8) - i16(b_u8))',
     'u16(absd(a_u8, b_u8))'),
    ('select(u16(a_u8) > u16(b_u8), u16(a_u8) - u16(b_u8), u16(b_u8) - u16(a_u8))',
     'u16(absd(a_u8, b_u8))'),
    ('absd(u16(a_u8), u16(b_u8))',
     'u16(absd(a_u8, b_u8))'),
    ('i16(min(max((i32(a_i16) * i32(b_i16)) >> 15, -32768), 32767))',
     'mul_shr(a_i16, b_i16, 15)'),
    ('i16(min((i32(a_i16) * i32(b_i16)) >> 15, 32767))',
     'mul_shr(a_i16, b_i16, 15)'),
    ('u16((u32(a_u16) * u32(b_u16)) >> 16)',
     'mul_shr(a_u16, b_u16, 16)'),
    ('u16((u32(a_u16) * u32(b_u16)) / 65536)',
     'mul_shr(a_u16, b_u16, 16)'),
    ('i16(min(max((i32(a_i16) * i32(b_i16) + 16384) >> 15, -32768), 32767))',
     'rounding_mul_shr(a_i16, b_i16, 15)'),
    ('i16(max(min((i32(a_i16) * i32(b_i16) + 16384) / 32768, 32767), -32768))',
     'rounding_mul_shr(a_i16, b_i16, 15)'),
    ('i32(min(max((i64(a_i32) * i64(b_i32) + 1073741824) >> 31, -2147483648), 2147483647))',
     'rounding_mul_shr(a_i32, b_i32, 31)'),
    ('u8((u16(a_u8) * u16(b_u8) + 128) >> 8)',
     'rounding_mul_shr(a_u8, b_u8, 8)'),
    ('i16((i32(a_i16) + 8) << -4)',
     'rounding_shl(a_i16, -4)'),
    ('(i16(a_i8) + i16(b_i8) + 8) << -4',
     'rounding_shl(widening_add(a_i8, b_i8), -4)'),
    ('rounding_shr(a_i16, 0 - b_i16)',
     'rounding_shl(a_i16, b_i16)'),
    ('((a_u8 >> 1) + (1 << ((b_u8 & 7) - 1))) >> (b_u8 & 7)',
     'rounding_shr(a_u8 >> 1, b_u8 & 7)'),
    ('u8(min(u16(a_u8) << u16(b_u8 & 7), 255))',
     'saturating_shl(a_u8, b_u8 & 7)'),
    ('i16(min(max((i32(a_i16) * i32(b_i16)) >> i32(c_u16), -32768), 32767))',
     'mul_shr(a_i16, b_i16, c_u16)'),
    ('u8((u16(a_u8) - u16(b_u8)) / 2)',
     'halving_sub(a_u8, b_u8)'),
    ('u8(u16(a_u8) >> 2)',
     'a_u8 >> 2'),
    ('u16(a_u8) * 3 + c_u16',
     'widening_mul(a_u8, 3) + c_u16'),
    ('u16(a_i8) - u16(b_i8)',
     'reinterpret<u16>(widening_sub(a_i8, b_i8))'),
]


@pytest.mark.parametrize("source, lifted", EXPECTED, ids=[s for s, _ in EXPECTED])
def test_expected_lifted_form(source: str, lifted: str) -> None:
    t = parse(source)
    out = lift(t)
    assert str(out) == lifted
    assert out.type == t.type
    _check_same(t, out, np.random.default_rng(1))


FPIR_NAMES = set(FPIR_OPS) | {"abs"}


def test_expected_forms_reach_every_fpir_op() -> None:
    reached: set[str] = set()
    for _, lifted in EXPECTED:
        reached |= {t.op for t in parse(lifted).walk()} & FPIR_NAMES
    assert FPIR_NAMES - reached == set()


def test_every_expected_form_fully_lifted() -> None:
    """No widening-cast pattern a rule should have caught is left over: a cast of a narrower value
    may only remain as the operand of a wide add/sub/mul when the other operand is wide too."""
    for source, lifted in EXPECTED:
        t = parse(lifted)
        for n in t.walk():
            if n.op in ("add", "sub", "mul") and all(a.op == "cast" and a.args[0].type.bits * 2 == n.type.bits
                                                     for a in n.args):
                pytest.fail(f"{source}: leftover widening {n}")


# ---- semantics ------------------------------------------------------------------------------------


def _check_same(before: Term, after: Term, rng: np.random.Generator) -> None:
    env = inputs_for(before, rng)
    a = evaluate(before, env)
    b = evaluate(after, env)
    if not np.array_equal(np.asarray(a).astype(object), np.asarray(b).astype(object)):
        bad = int(np.flatnonzero(np.asarray(a).astype(object) != np.asarray(b).astype(object))[0])
        lane = {k: int(v[bad]) for k, v in env.items()}
        pytest.fail(f"{before}\n lifted to {after}\n differs at {lane}: {a[bad]} != {b[bad]}")


def test_lifting_preserves_semantics_on_random_expressions() -> None:
    fired: Counter = Counter()
    examples = [0, 0]  # [lifted with at least one rewrite, total]
    rng = np.random.default_rng(12345)

    @settings(max_examples=2500, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(integer_terms())
    def check(e: Term) -> None:
        out, stats = lift_with_stats(e)
        examples[1] += 1
        if stats.rewrites:
            examples[0] += 1
        fired.update(stats.fired)
        assert out.type == e.type
        _check_same(e, out, rng)

    check()
    assert examples[1] >= 2000
    # The idiom shapes make rules fire on most expressions, and on many different rules.
    assert examples[0] / examples[1] > 0.5, examples
    assert len(fired) >= 40, sorted(fired)


def test_bounded_sum_widens_once() -> None:
    # gaussian7x7's column (u8 taps times 1, 6, 15, 20, 15, 6, 1 summed in i32, at most 16320): the
    # whole sum stays in 16 bits (accumulate.rules' narrow_* rules) and is widened once at the root
    src = ("add.nsw(add.nsw(add.nsw(add.nsw(add.nsw(add.nsw(mul.nsw(i32(a_u8), 6), mul.nsw(i32(b_u8), 15)), "
           "mul.nsw(i32(c_u8), 20)), mul.nsw(i32(d_u8), 6)), mul.nsw(i32(e_u8), 15)), i32(f_u8)), i32(g_u8))")
    out, stats = lift_with_stats(parse(src))
    assert out.op == "cast" and out.args[0].type.bits == 16, str(out)
    assert stats.fired["narrow_extending_add_of_widening_add"] and stats.fired["narrow_extending_add_of_narrower_cast"]
    _check_same(parse(src), out, np.random.default_rng(5))
    # taps too large for 16 bits (200 * 255 + 150 * 255 + ...): the sum stays wide
    big = src.replace("20)", "200)").replace("15)), i32(f", "150)), i32(f")
    assert lift(parse(big)).op != "cast"


# ---- rule set ---------------------------------------------------------------------------------


def test_rule_set_size_and_documentation() -> None:
    rules = lift_rules()
    assert len(rules) >= 50
    files = sorted((ROOT / "rules" / "lift").glob("*.rules"))
    assert {f.name for f in files} >= {"figure4.rules", "widening.rules", "saturating.rules", "averaging.rules",
                                       "shifts.rules", "multiply.rules", "absd.rules"}
    for f in files:
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.match(r"^[A-Za-z_][A-Za-z0-9_.]*\s*:", line):
                j = i - 1
                while j >= 0 and not lines[j].strip():
                    j -= 1
                assert j >= 0 and lines[j].lstrip().startswith("#"), f"{f.name}:{i + 1}: rule without a comment"


# ---- CLI ------------------------------------------------------------------------------------


def test_cli_lift_prints_lifted_expression(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["lift", "u8((u16(a_u8) + u16(b_u8) + 1) / 2)"]) == 0
    assert capsys.readouterr().out.strip() == "rounding_halving_add(a_u8, b_u8)"


def test_cli_lift_trace_and_stats(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["lift", "--trace", "--stats", "u8((u16(a_u8) + u16(b_u8) + 1) / 2)"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == "rounding_halving_add(a_u8, b_u8)"
    for name in ("widening_add_of_casts", "shr_of_div_pow2", "rounding_halving_add_of_widening_add", "cast_of_cast"):
        assert name in out.err
    assert "u16(a_u8) + u16(b_u8)" in out.err  # a 'before' column
    assert "rewrites/s" in out.err


def test_cli_lift_syntax_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["lift", "u8(a_u8 +"]) == 1
    assert "1:" in capsys.readouterr().err


def test_cli_lift_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "exprs.txt"
    src.write_text("# a comment\n" + SOBEL_2B + "\nu8(a_u8 +\n\nwidening_add(a_u8, b_i8)\n"
                   "i16(min(max((i32(a_i16) * i32(b_i16) + 16384) >> 15, -32768), 32767))\n")
    assert cli_main(["lift", "--batch", str(src), "--stats"]) == 1  # two lines failed (docs/ERRORS.md)
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [set(r) for r in rows] == [{"input", "lifted", "rules", "error"}] * 4
    assert rows[0]["lifted"] == str(parse(SOBEL_2C)) and rows[0]["error"] is None
    assert "saturating_cast_from_umin" in rows[0]["rules"]
    assert rows[1]["lifted"] is None and rows[1]["error"].startswith(f"{src}:3:")  # file:line:col
    assert rows[2]["lifted"] is None and "widening_add" in rows[2]["error"]
    assert rows[3]["lifted"] == "rounding_mul_shr(a_i16, b_i16, 15)"
    assert "4 expression(s), 2 error(s)" in captured.err


def test_cli_lift_as_subprocess() -> None:
    r = subprocess.run([sys.executable, "-m", "pitchfork.cli", "lift", "u8(min(a_u16, 255))"],
                       check=False, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "saturating_cast<u8>(a_u16)"
