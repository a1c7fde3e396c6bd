"""Rule files are checked before any verification (issue 8, item 3): an unknown predicate function,
a predicate function with the wrong arguments, a term wildcard used as a value, and a type variable
the left side does not bind are errors at file:line:col; a rule no type instance can fire is INVALID;
UNKNOWN verdicts fail `pitchfork verify` unless --allow-unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitchfork.cli import main as cli_main
from pitchfork.trs.rules import RuleFileError, parse_rules
from synth.verify import verify_rule


@pytest.mark.parametrize(("text", "where", "message"), [
    ("r: x_u8 + c0 -> x_u8 if is_awesome(c0)", "f.rules:1:25", "unknown predicate function 'is_awesome'"),
    ("r: x_u8 + c0 -> x_u8 if bits(Q) == 8", "f.rules:1:30", "type variable Q is not bound by the left side"),
    ("r: x_u8 + c0 -> u16(x_Q)", "f.rules:1:23", "type variable Q is not bound by the left side"),
    ("r: x_T + c0 -> x_T if bits(T) == 8 && foo(c0, 1)", "f.rules:1:39", "unknown predicate function 'foo'"),
    ("r: x_u8 + c0 -> x_u8 if x_u8 > 3", "f.rules:1:25", "'x_u8' cannot be used as a value here"),
    ("r: x_u8 + c0 -> x_u8 if fits(c0, u8)", "f.rules:1:30", "bounds queries take a term wildcard"),
    ("# comment\nr: x_u8 + c0 -> x_u8\n   if log2(c0, 1) > 3", "f.rules:3:7", "log2 takes 1 argument(s), got 2"),
    ("r: x_u8 + c0 -> x_u8 if bits(c0 + 1) == 8", "f.rules:1:30", "expected a type"),
    ("r: x_u8 + y_u8 -> x_u8 if sum_fits(x_u8, u8)", "f.rules:1:27", "sum_fits takes 3 argument(s), got 2"),
    ("r: x_u8 + y_u8 -> x_u8 if sum_fits(x_u8, c0, u8)", "f.rules:1:42", "bounds queries take a term wildcard"),
])
def test_malformed_predicates_located(text: str, where: str, message: str) -> None:
    with pytest.raises(RuleFileError) as e:
        parse_rules(text, "f.rules")
    assert str(e.value).startswith(f"{where}: rule r: {message}"), str(e.value)


def test_every_shipped_rule_still_parses() -> None:
    from pitchfork.commands.verify import default_files, load, register_target_ops

    register_target_ops()
    assert len(load(default_files())) > 100


def test_narrowing_without_sum_fits_is_invalid() -> None:
    # accumulate.rules' narrow_extending_add_of_cast without its bound: the narrow sum wraps
    (bad,) = parse_rules("bad: extending_add(cast<W>(x_T), y_T) -> cast<W>(x_T + y_T) if W == wide(T) && bits(T) <= 16",
                         "f.rules")
    assert verify_rule(bad).status == "INVALID"
    (good,) = parse_rules("good: extending_add(cast<W>(x_T), y_T) -> cast<W>(x_T + y_T) "
                          "if W == wide(T) && bits(T) <= 16 && sum_fits(x_T, y_T, T)", "f.rules")
    assert verify_rule(good).status == "VALID"


def test_rule_no_instance_can_fire_is_invalid() -> None:
    (rule,) = parse_rules("never: x_T + y_T -> y_T + x_T if bits(T) == 7", "f.rules")
    res = verify_rule(rule)
    assert res.status == "INVALID" and "no type instance can fire" in res.error


def test_cli_exit_codes_for_rule_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.rules"
    f.write_text("ok: x_u8 + y_u8 -> y_u8 + x_u8\nawesome: x_u8 + c0 -> x_u8 if is_awesome(c0)\n")
    assert cli_main(["verify", str(f), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"{f}:2:31: rule awesome: unknown predicate function 'is_awesome'" in err.replace("\n", "")
    g = tmp_path / "never.rules"
    g.write_text("never: x_T + y_T -> y_T + x_T if bits(T) == 7\n")
    assert cli_main(["verify", str(g), "--no-progress", "--jobs", "1"]) == 1
    assert "INVALID never  (no type instance can fire" in capsys.readouterr().out
    d = tmp_path / "dir.rules"
    d.mkdir()
    assert cli_main(["verify", str(d)]) == 4
    assert capsys.readouterr().err.strip() == f"{d}: cannot read rule file: Is a directory"
    b = tmp_path / "latin1.rules"
    b.write_bytes(b"r: x_u8 -> x_u8 # caf\xe9\n")
    assert cli_main(["verify", str(b)]) == 4
    assert "is not UTF-8 text" in capsys.readouterr().err


def test_deep_rule_refused_with_location() -> None:
    deep = "abs(" * 70 + "x_i8" + ")" * 70
    with pytest.raises(RuleFileError, match=r"^f.rules:1:19: rule r: nested more than 64 deep$"):
        parse_rules(f"r: x_i8 + y_i8 -> {deep}", "f.rules")
