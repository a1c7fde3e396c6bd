"""Rule verification: every lifting rule is VALID; deliberately unsound rules are INVALID with real
counterexamples; the `pitchfork verify` CLI (output lines, summary, exit codes, --rule, --strict,
malformed files)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import FPIRSyntaxError
from fpir.types import FPIRTypeError, parse_type
from pitchfork.cli import main as cli_main
from pitchfork.trs.predicate import Z3Domain
from pitchfork.trs.rules import Rule, load_rule_file
from synth.output import VERIFY_RLIMIT
from synth.verify import _Instance, verify_rule

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
LIFT_FILES = sorted((ROOT / "rules" / "lift").glob("*.rules")) + sorted((ROOT / "rules" / "synthesized").glob("lift*.rules"))
LIFT_RULES = [r for f in LIFT_FILES for r in load_rule_file(f)]
UNSOUND = load_rule_file(DATA / "unsound.rules")


# ---- every lifting rule verifies ------------------------------------------------------------------


# Each case verifies its own rule: pytest-xdist spreads them over its workers (a module fixture
# verifying them all ran once in every worker that got one of these cases). The budget is the
# synthesizer's (60 M), which tests/synth/test_output.py relies on for the committed synthesized ones.
@pytest.mark.slow
@pytest.mark.parametrize("rule", LIFT_RULES, ids=[r.name for r in LIFT_RULES])
def test_lifting_rule_verifies(rule: Rule) -> None:
    res = verify_rule(rule, rlimit=VERIFY_RLIMIT)
    assert res.status == "VALID", f"{rule.location}: {rule.name}: {res.summary()}"
    assert res.instances, f"{rule.name}: no type instance can match"


# ---- unsound rules are caught -------------------------------------------------------------------


def _instances(rule: Rule, types: str) -> list[tuple]:
    """(lhs, rhs) instance terms of each alternative at the type instance described by `types`."""
    tvars = {}
    if types != "(monomorphic)":
        for part in types.split(", "):
            k, v = part.split("=")
            tvars[k] = parse_type(v)
    out = []
    for alt in rule.alternatives:
        symbols: dict = {}
        try:
            lhs = _Instance(tvars, symbols).elab(alt, None)
            rhs = _Instance(tvars, symbols, Z3Domain(symbols, tvars)).elab(rule.rhs_raw, lhs.type)
        except (FPIRTypeError, FPIRSyntaxError):
            continue
        out.append((lhs, rhs))
    return out


@pytest.mark.parametrize("rule", UNSOUND, ids=[r.name for r in UNSOUND])
def test_unsound_rule_is_invalid_with_a_real_counterexample(rule: Rule) -> None:
    res = verify_rule(rule, rlimit=60_000_000)
    assert res.status == "INVALID", res.summary()
    bad = [i for i in res.instances if i.verdict.status == "INVALID"]
    checked = 0
    for inst in bad:
        cex = inst.verdict.counterexample
        assert cex, inst.verdict
        for lhs, rhs in _instances(rule, inst.types):
            names = {v.name for v in lhs.variables() + rhs.variables()}
            if not names <= set(cex):
                continue
            env = {k: np.array([v], dtype=object).astype(_type_of(lhs, rhs, k).np_dtype) for k, v in cex.items()
                   if k in names}
            before, after = int(evaluate(lhs, env)[0]), int(evaluate(rhs, env)[0])
            if before != after:
                assert (before, after) == (inst.verdict.lhs_value, inst.verdict.rhs_value)
                checked += 1
                break
    assert checked, f"{rule.name}: no counterexample reproduced with fpir.interp"


def _type_of(lhs, rhs, name: str):  # type: ignore[no-untyped-def]
    for v in lhs.variables() + rhs.variables():
        if v.name == name:
            return v.type
    raise KeyError(name)


# ---- product bounds (the integer proof of a bounded factor) ------------------------------------


def test_assumed_bounds_reads_only_top_level_constant_bounds() -> None:
    import z3

    from synth.verify_fallback import _assumed_bounds

    x, y, z, k = z3.Ints("x y z k1")
    facts = [z3.And(x <= 2 ** 31, 1 - 2 ** 31 <= x), z3.Not(y > 7), y > -3, k == 31,
             z3.Or(z <= 0, z >= 9), x * y <= 5]
    assert _assumed_bounds(facts) == {"x": (1 - 2 ** 31, 2 ** 31), "y": (-2, 7), "k1": (31, 31)}


def test_product_bounds_prove_the_bounded_truncation_and_keep_counterexamples() -> None:
    """The Q31 instance of multiply.rules' bounded truncation, by hand: with product bounds the integer
    proof is quick; with the factor's bound one step looser it finds the real counterexample."""
    import z3

    from fpir import parse
    from synth.verify_fallback import equivalent_int

    before = parse("i32(widening_mul(x_i32, y_i32) >> 31)")
    after = parse("mul_shr(y_i32, x_i32, 31)")
    x = z3.Int("x")
    ok = equivalent_int(before, after, 4_000_000, [x <= 2 ** 31, x >= 1 - 2 ** 31], product_bounds=True)
    assert ok.status == "VALID", ok
    bad = equivalent_int(before, after, 4_000_000, [x <= 2 ** 31, x >= -2 ** 31], product_bounds=True)
    assert bad.status == "INVALID" and bad.counterexample == {"x": -2 ** 31, "y": -2 ** 31}, bad


# ---- the CLI ------------------------------------------------------------------------------------


def test_cli_reports_invalid_rules_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["verify", str(DATA / "unsound.rules"), "--jobs", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    lines = [line for line in out.splitlines() if line.strip()]
    for r in UNSOUND:
        line = next(line for line in lines if f" {r.name}  " in line)
        assert line.startswith("INVALID"), line
        assert "before =" in line and "after =" in line  # counterexample values
    assert f"{len(UNSOUND)} rule(s) from 1 file(s): 0 VALID, {len(UNSOUND)} INVALID, 0 UNKNOWN" in out


def test_cli_valid_rules_and_rule_filter(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["verify", str(ROOT / "rules" / "lift" / "figure4.rules"), "--rule", "extending_add_from_cast",
                     "--rule", "saturating_cast_from_umin", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert [line.split()[:2] for line in out.splitlines() if line.strip() and "rule(s)" not in line] == [
        ["VALID", "extending_add_from_cast"], ["VALID", "saturating_cast_from_umin"]]
    assert "2 rule(s) from 1 file(s): 2 VALID, 0 INVALID, 0 UNKNOWN" in out


def test_cli_unknown_rule_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["verify", str(DATA / "unsound.rules"), "--rule", "no_such_rule"]) == 2
    assert "no_such_rule" in capsys.readouterr().err


@pytest.mark.parametrize("text, where", [
    ("ok: x_u8 + y_u8 -> y_u8 + x_u8\nbad: x_u8 + y_u8\n", ":2:17: missing '->'"),
    ("bad: x_u8 + y_u8 -> x_u8 + z_u8\n", ":1:5: rule bad: 'z_u8' is not bound by the left side"),
    ("\nbad: x_u8 +\n    y_u8 -> (x_u8 +\n", ":3:20: unexpected end of input"),
])
def test_cli_malformed_file_exits_1_with_position(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                 where: str) -> None:
    f = tmp_path / "bad.rules"
    f.write_text(text)
    assert cli_main(["verify", str(f)]) == 1  # EXIT_INPUT (docs/ERRORS.md)
    err = capsys.readouterr().err
    assert f"{f}{where}" in err.replace("\n", "")


def test_cli_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["verify", "no/such.rules"]) == 4  # EXIT_FILE
    assert "no/such.rules: cannot read rule file" in capsys.readouterr().err


def test_cli_strict_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # True (y | 1 is never 0), but a 64-bit divider cannot be bit-blasted within 1 ms.
    f = tmp_path / "hard.rules"
    f.write_text("hard: x_u64 / (y_u64 | 1) * (y_u64 | 1) + x_u64 % (y_u64 | 1) -> x_u64\n")
    assert cli_main(["verify", str(f), "--rlimit", "1", "--jobs", "1"]) == 5  # EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert out.startswith("UNKNOWN hard")
    assert cli_main(["verify", str(f), "--rlimit", "1", "--jobs", "1", "--allow-unknown"]) == 0


def test_cli_default_files_as_subprocess() -> None:
    r = subprocess.run([sys.executable, "-m", "pitchfork.cli", "verify", "--rule", "widening_add_from_extending_pair",
                        "--no-progress"], check=False, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("VALID   widening_add_from_extending_pair  (")
