"""`pitchfork select`: one expression, and --batch (one JSON object per line, errors per line)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pitchfork.cli import main
from pitchfork.selection.select_batch import run_batch, select_expression, split_line

ROOT = Path(__file__).resolve().parents[3]


def test_single_expression_prints_lifted_and_lowered(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["select", "u8(min(u16(a_u8) + u16(b_u8) * 2, 255))", "--target", "arm64"]) == 0
    out = capsys.readouterr().out
    assert "lifted:   saturating_cast<u8>(extending_add(widening_shl(b_u8, 1), a_u8))" in out
    assert "lowered:" in out and "final:" in out and "lanes=16" in out


@pytest.mark.parametrize("target,mnemonic", [("x86-avx2", "vpavgb"), ("arm64", "urhadd"), ("hvx128", "vavg")])
def test_emit_asm(capsys: pytest.CaptureFixture[str], target: str, mnemonic: str) -> None:
    assert main(["select", "rounding_halving_add(a_u8, b_u8)", "-t", target, "--emit", "asm"]) == 0
    assert mnemonic in capsys.readouterr().out


def test_emit_llvm_and_lanes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["select", "absd(a_i16, b_i16)", "-t", "x86-avx2", "--emit", "llvm", "--lanes", "24"]) == 0
    out = capsys.readouterr().out
    assert "<24 x i16>" in out and "define void" in out


def test_isel_llvm_keeps_the_integer_expression() -> None:
    rec = select_expression("u8((u16(a_u8) + u16(b_u8) + 1) >> 1)", "x86-avx2", isel="llvm")
    assert rec.error is None
    assert rec.fpir == rec.final == "u8(u16(a_u8) + u16(b_u8) + 1 >> 1)"  # no lifting, nothing to expand
    rec2 = select_expression("u8((u16(a_u8) + u16(b_u8) + 1) >> 1)", "x86-avx2", isel="pitchfork")
    assert "rounding_halving_add" in (rec2.fpir or "")


def test_default_lanes_is_one_register_of_the_result_type() -> None:
    assert select_expression("widening_add(a_u8, b_u8)", "x86-avx2").lanes == 16
    assert select_expression("saturating_cast<u8>(a_i16)", "x86-avx2").lanes == 32
    assert select_expression("a_u16 + b_u16", "hvx128").lanes == 64
    assert select_expression("a_i32 < b_i32", "arm64").lanes == 4  # u1 result: widest input


def test_errors_are_reported_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    rec = select_expression("a_u8 + b_u16", "arm64")
    assert rec.error is not None and rec.error.startswith("parse:")
    assert main(["select", "a_u8 +", "-t", "arm64"]) == 1


def test_split_line() -> None:
    assert split_line("16 absd(a_u8, b_u8)") == (16, "absd(a_u8, b_u8)")
    assert split_line("absd(a_u8, b_u8)") == (None, "absd(a_u8, b_u8)")
    assert split_line("3 * a_u8") == (None, "3 * a_u8")  # an expression, not a lane count
    assert split_line("7 - a_u8") == (None, "7 - a_u8")
    assert split_line("16 ~a_u8") == (16, "~a_u8")


def test_batch_jsonl(tmp_path: Path) -> None:
    lines = ["# comment", "absd(a_u8, b_u8)", "", "8 rounding_halving_add(a_u16, b_u16)", "a_u8 + b_u16",
             "saturating_cast<u8>(x_i16)"]
    out = io.StringIO()
    stats = run_batch(lines, out, "x86-avx2", emit="asm")
    recs = [json.loads(x) for x in out.getvalue().splitlines()]
    assert stats.lines == 4 and stats.errors == 1 and len(recs) == 4
    for r in recs:
        assert set(r) >= {"input", "lanes", "fpir", "lowered", "asm", "error"}
    assert recs[0]["asm"] and "vpsubusb" in recs[0]["asm"] or "vpmaxub" in recs[0]["asm"]
    assert recs[1]["lanes"] == 8 and "vpavgw" in recs[1]["asm"]
    assert recs[2]["error"] and recs[2]["asm"] is None
    assert "vpackuswb" in recs[3]["asm"]


def test_batch_command_line(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("halving_add(a_u8, b_u8)\n32 mul_shr(a_i16, b_i16, 15)\nnot an expression(\n")
    dst = tmp_path / "out.jsonl"
    p = subprocess.run([sys.executable, "-m", "pitchfork", "select", "--batch", str(src), "-t", "arm64", "-o", str(dst)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr  # one line failed (exit 0 only with --allow-errors; docs/ERRORS.md)
    recs = [json.loads(x) for x in dst.read_text().splitlines()]
    assert len(recs) == 3
    assert "uhadd" in recs[0]["asm"]
    assert recs[1]["lanes"] == 32 and recs[1]["error"] is None
    assert recs[2]["error"]
    assert "lines/s" in p.stderr
