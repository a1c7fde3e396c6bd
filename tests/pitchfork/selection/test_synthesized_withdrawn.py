"""Withdrawn synthesized rules (rules/synthesized/withdrawn.txt): verified rules the harness measured to
slow code down are neither loaded by the compiler nor written again by synthesis."""

from __future__ import annotations

from pathlib import Path

from pitchfork.selection.synthesized import load_rules, synthesized_rules, withdrawn
from synth.output import write_rules

LINE = "synth_lift_aaaa: v0_T + v0_T -> v0_T << 1  # from: add; count: 1; verdict: VALID"
OTHER = "synth_lift_bbbb: v0_T * 2 -> v0_T << 1  # from: mul; count: 1; verdict: VALID"


def test_loader_skips_withdrawn_names(tmp_path: Path) -> None:
    (tmp_path / "lift.rules").write_text(f"# header\n\n{LINE}\n{OTHER}\n")
    assert [r.name for r in load_rules(tmp_path / "lift.rules")] == ["synth_lift_aaaa", "synth_lift_bbbb"]
    (tmp_path / "withdrawn.txt").write_text("synth_lift_aaaa  # slower on a benchmark\n")
    assert withdrawn(tmp_path) == {"synth_lift_aaaa": "slower on a benchmark"}
    assert [r.name for r in load_rules(tmp_path / "lift.rules")] == ["synth_lift_bbbb"]


def test_writer_drops_withdrawn_names(tmp_path: Path) -> None:
    path = tmp_path / "lift.rules"
    path.write_text(f"# header\n\n{LINE}\n{OTHER}\n")
    (tmp_path / "withdrawn.txt").write_text("synth_lift_bbbb  # slower\n")
    assert write_rules(path, [], "# header") == 1
    assert "synth_lift_bbbb" not in path.read_text() and "synth_lift_aaaa" in path.read_text()


def test_checked_in_withdrawn_rules_are_not_loaded() -> None:
    names = {r.name for r in synthesized_rules("lift")}
    assert withdrawn() and not names & set(withdrawn())
