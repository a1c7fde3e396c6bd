"""benchmarks/synth_bringup_static.py: hand-written vs synthesized-only lowering under the harness's
static estimate (every counted run checks its output bit for bit), and the regression check that
withdraws synthesized rules whose absence makes synthesized-only code faster."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synth_bringup_static import cell, markdown, summarize, synth_only_static, withdraw_regressions

# two rules a bring-up found (Z3-verified at every type instance, `pitchfork verify`)
RULES = """synth_a: widening_add(v0_T, v1_T) -> hvx.vadd_w(v0_T, v1_T) if is_unsigned(T) && bits(T) <= 16
synth_b: absd(v0_T, v1_T) -> hvx.vabsdiff(v0_T, v1_T) if is_unsigned(T) && bits(T) <= 16
"""


@pytest.fixture()
def rules_dir(tmp_path: Path) -> Path:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "lower_hvx.rules").write_text(RULES)
    return d


def test_rules_verify() -> None:
    from pitchfork.targets import load_target
    from pitchfork.trs.rules import parse_rules
    from synth.verify import verify_rule

    load_target("hvx128")  # the instruction table
    for r in parse_rules(RULES, "<test>"):
        assert verify_rule(r).status == "VALID", r.name


def test_cell_compares_hand_and_synthesized_only_lowering(rules_dir: Path) -> None:
    c = cell("sobel3x3", "hvx128", rules_dir, reps=1, timeout=600)
    assert c["hand"]["status"] == "ok" and c["synth"]["status"] == "ok"  # both bit-exact (checked runs)
    assert c["hand"]["static"] and c["synth"]["static"] and c["static_ratio"] > 0
    assert not {"synth_a", "synth_b"} & set(c["hand"]["lowering_fired"])
    assert not set(c["synth"]["lowering_fired"]) - {"synth_a", "synth_b"} - set(c["hand"]["lowering_fired"])
    # the same estimate through the scratch-folder path the regression check uses
    assert synth_only_static("sobel3x3", "hvx128", rules_dir, [], 600) == c["synth"]["static"]
    data = {"meta": {"rules_dir": str(rules_dir), "isas": ["hvx128"]}, "cells": [c]}
    data["summary"] = summarize(data["cells"], ["hvx128"])
    before = c["synth"]["static"]
    gone = withdraw_regressions(data, rules_dir, 600, below=10.0, progress=False)
    # withdrawn only with a figure that got better, recorded where the loader reads it
    assert c["synth"]["static"] <= before
    text = (rules_dir / "withdrawn.txt").read_text() if gone else ""
    assert all(name in text for name in gone)
    assert "hvx128" in markdown(data)


def test_cli_refuses_a_folder_without_the_isa(tmp_path: Path) -> None:
    from benchmarks.synth_bringup_static import main

    with pytest.raises(SystemExit):
        main([str(tmp_path), "--isa", "arm64", "-o", str(tmp_path / "o")])
