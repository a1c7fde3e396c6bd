"""benchmarks/parity: the expectation files parse (every expression is FPIR text `pitchfork select` accepts,
every line names lanes and a pattern), Halide's wildcard matching, and one small end-to-end run per ISA
through `pitchfork select --batch` (compile only: the checks read the assembly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.parity.run import (FILES, ISAS, Case, ParityDataError, asm_matches, evaluate, load_cases, load_notes,
                                   report)
from fpir.text import parse


@pytest.mark.parametrize("isa", ISAS)
def test_expectation_files_parse(isa: str) -> None:
    cases = load_cases(isa)
    assert len(cases) > 300 if isa != "hvx128" else len(cases) > 250
    for c in {c.expr: c for c in cases}.values():
        parse(f"({c.expr})")  # raises with file:line:col on bad text
        assert c.lanes > 0 and c.expected


def test_bad_line_is_reported_with_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("# comment\n8 ; paddb\n")
    with pytest.raises(ParityDataError, match=r"bad.txt:2: expected 'lanes ; pattern ; expression'"):
        load_cases("x86-avx2", bad)
    bad.write_text("8,x ; paddb ; a_u8 + b_u8\n")
    with pytest.raises(ParityDataError, match="bad.txt:1: lanes must be"):
        load_cases("x86-avx2", bad)


def test_halide_wildcard_matching() -> None:
    asm = "\tv1:0.h += vmpa(v3:2.ub,r0.b)\n\tvpmulhuw\t%ymm1, %ymm0, %ymm0\n# vrmpy(v1.ub,v2.ub) in a comment\n"
    assert asm_matches(asm, "v*.h += vmpa(v*.ub,r*.b)")
    assert asm_matches(asm, "vpmulhuw*ymm")
    assert asm_matches(asm, "pmulhuw")
    assert not asm_matches(asm, "vmpa(v*.ub,r*.ub)")
    assert not asm_matches(asm, "vrmpy")  # comments do not count


@pytest.mark.parametrize("isa", ISAS)
def test_small_run_counts_hits_and_misses(isa: str, tmp_path: Path) -> None:
    expected = {"x86-avx2": ("vpmulhw", "pmulhrsw"), "arm64": ("sqrdmulh", "udot"), "hvx128": ("vmpa", "vrmpy")}[isa]
    text = {"x86-avx2": "16 ; {0} ; i16((i32(a_i16) * i32(b_i16)) >> 16)\n16 ; {1} ; a_i16 + b_i16\n",
            "arm64": "8 ; {0} ; saturating_cast<i16>((i32(a_i16) * i32(b_i16) + 16384) >> 15)\n8 ; {1} ; a_u8 - b_u8\n",
            "hvx128": "128 ; {0} ; 2 * (i16(a_u8) + i16(b_u8))\n128 ; {1} ; a_u8 + b_u8\n"}[isa]
    path = tmp_path / FILES[isa]
    path.write_text(text.format(*expected))
    outcomes = evaluate(isa, load_cases(isa, path), jobs=1)
    assert [o.ok for o in outcomes] == [True, False], [(o.case.expr, o.final, o.error) for o in outcomes]
    md = report({isa: outcomes})
    assert "| 2 | 1 | 50.0% |" in md and "1 misses" in md
    assert isinstance(outcomes[0].case, Case)


def test_every_note_names_a_case_of_its_file() -> None:
    notes = load_notes()
    assert notes
    for (isa, expr), note in notes.items():
        assert expr in {c.expr for c in load_cases(isa)}, (isa, expr)
        assert note.split(":")[0] in ("shorter", "same", "longer")


def test_shorter_notes_are_counted_apart() -> None:
    """A miss notes.txt records as `shorter` shows in the second share only, never as a pass."""
    from benchmarks.parity.run import Outcome, shorter_misses

    c = Case("hvx128", 64, "vshuffe(v*.h,v*.h)", "u16(u32(a_u16) * 32767)", "hvx128.txt:1")
    outs = [Outcome(c, False, "hvx.vmpyi(a_u16, 32767)", None)]
    notes = load_notes()
    assert shorter_misses("hvx128", outs, notes) == 1
    assert shorter_misses("hvx128", [Outcome(c, False, None, "select: boom")], notes) == 0  # errors never count
    md = report({"hvx128": outs}, notes)
    assert "| hvx128 | 1 | 0 | 0.0% | 1 | 100.0% |" in md
