"""Rule files: format, canonical text, and malformed files reported as file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitchfork.trs.rules import RuleFileError, RuleSet, load_rule_file, parse_rule, parse_rules


def test_rule_format_and_canonical_text() -> None:
    rules = parse_rules(
        "# comment\n"
        "first: u16(x_u8) * c0  ->  widening_shl(x_u8, log2(c0))   if is_pow2(c0)   # trailing comment\n"
        "\n"
        "second: cast<W>(x_T) +\n"
        "        y_W -> extending_add(y_W, x_T) if W == wide(T)\n", "f.rules")
    assert [r.name for r in rules] == ["first", "second"]
    assert rules[0].text() == "first: u16(x_u8) * c0 -> widening_shl(x_u8, log2(c0)) if is_pow2(c0)"
    assert rules[1].text() == "second: cast<W>(x_T) + y_W -> extending_add(y_W, x_T) if W == wide(T)"
    assert (rules[0].line, rules[1].line) == (2, 4)
    assert parse_rule(rules[1].text()).text() == rules[1].text()  # the printed text is the identity


def test_alternates_expand() -> None:
    r = parse_rule("r: either(x_T + 1, 1 + x_T, x_T - 1) -> x_T")
    assert len(r.alternatives) == 3


MALFORMED = [
    ("ok: a_u8 + b_u8 -> a_u8\nbad: x_u8 + y_u8\n", 2, 17, "missing '->'"),
    ("# c\nbad: x_u8 + + -> x_u8\n", 2, 13, "unexpected '+'"),
    ("bad: x_u8 + y_u8 -> widening_add(x_u8, \n", 1, 39, "unexpected end of input"),
    ("bad: x_u8 + y_u8 -> y_u8 + x_u8 if c0 == \n", 1, 41, "unexpected end of input"),
    ("bad: x_u8 + y_u8 -> x_u8 + z_u8\n", 1, 5, "'z_u8' is not bound"),
    ("\n\nbad: frobnicate(x_u8) -> x_u8\n", 3, 5, "unknown operation 'frobnicate'"),
    ("x_u8 + y_u8 -> y_u8\n", 1, 1, "expected 'name: before -> after"),
    ("a: x_u8 + y_u8 -> y_u8 + x_u8\n\na: x_u8 - y_u8 -> x_u8\n", 3, 1, "already used on line 1"),
    ("bad: x + y_u8 -> y_u8\n", 1, 5, "needs a type suffix"),
    ("bad: x_u8 -> x_u8\n", 1, 5, "left side must be an operation"),
    ("bad: x_u8 +\n   y_u8 -> )\n", 2, 12, "unexpected ')'"),
    ("bad: x_u8 @ y_u8 -> x_u8\n", 1, 11, "unexpected character '@'"),
    ("bad: widening_add(x_u8) -> x_u8\n", 1, 5, "takes 2 argument"),
    ("bad: saturating_cast(x_u8) -> x_u8\n", 1, 5, "needs a type"),
]


@pytest.mark.parametrize("text, line, col, message", MALFORMED, ids=[m[3] for m in MALFORMED])
def test_malformed_rule_file_reports_position(tmp_path: Path, text: str, line: int, col: int, message: str) -> None:
    f = tmp_path / "bad.rules"
    f.write_text(text)
    with pytest.raises(RuleFileError) as ei:
        load_rule_file(f)
    e = ei.value
    assert (e.source, e.line, e.column) == (str(f), line, col)
    assert message in e.message
    assert str(e).startswith(f"{f}:{line}:{col}: ")


def test_duplicate_names_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.rules").write_text("r: x_u8 + y_u8 -> y_u8 + x_u8\n")
    (tmp_path / "b.rules").write_text("\nr: x_u8 - y_u8 -> x_u8\n")
    with pytest.raises(RuleFileError, match=r"b.rules:2:1: rule name 'r' also used at .*a.rules:1"):
        RuleSet.from_files([tmp_path / "a.rules", tmp_path / "b.rules"])
